"""``lucid-sim``: replay a job trace on a GPU cluster under a scheduling policy.

Examples::

    lucid-sim run                                   # embedded default trace, fifo
    lucid-sim --policy srtf --trace ../shared/data/venus_sept --out results/venus-srtf
    lucid-sim run --preset lucid-artifact --trace ../shared/data/venus_sept
    lucid-sim policies; lucid-sim presets
    lucid-sim trace synth --jobs 100000 --nodes 200 --out traces/big
    lucid-sim explain --trace ../shared/data/venus_sept --colocation lucid --out results/explain
    lucid-sim sweep --policy fifo,sjf --seed 1,2 --out results/sweep; lucid-sim report results/sweep --out reports/x

One module per group of commands; each imports what it needs when it runs, so ``--help`` stays fast.
"""

from __future__ import annotations

import sys

from simcluster.cli import (  # noqa: F401  (register the commands)
    check,
    diff,
    experiments,
    faults,
    fragmentation,
    info,
    reliability,
    run,
    topology,
    trace,
    validate,
)
from simcluster.cli.common import app

__all__ = ["app", "main"]

_ROOT_FLAGS = {"--help", "-h", "--version"}


def main(argv: list[str] | None = None) -> None:
    """Entry point: a leading option (``lucid-sim --policy srtf``) means the ``run`` command."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0].startswith("-") and args[0] not in _ROOT_FLAGS:
        args.insert(0, "run")
    app(args=args, prog_name="lucid-sim")


if __name__ == "__main__":
    main()
