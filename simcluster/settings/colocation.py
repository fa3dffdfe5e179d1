"""Jobs sharing GPUs: the colocation model and what a GPU holds.  Read by the policies that share GPUs
(``Policy.shares_gpus``; the colocation feature, :mod:`simcluster.features.colocation`)."""

from __future__ import annotations

from simcluster.settings.fields import Reader, policy_is, setting, settings_group

SHARING = "Sharing"  # its panel in `lucid-sim run --help`


@settings_group(SHARING, reads=Reader(policy_is(lambda cls: cls.shares_gpus)))
class ColocationOptions:
    colocation: str = setting(
        "default", "Colocation model: 'default' (on a cluster of one GPU type that we measured, e.g. --cluster "
        "h100:64: the measurement where it has the pair, else the calibrated model refitted to it; otherwise "
        "'calibrated': fitted to Lucid's public RTX 3090 measurements), 'default@GPU' (the same for a named GPU type, "
        "e.g. default@h100, on any cluster), 'analytic' (unfitted), 'lucid' (the public RTX 3090 table from the "
        "shared data), 'h100' (our profiler's H100 table alone, in traces/profiles/measured/), or a folder with "
        "single.csv and pair.csv (or parameters.json).",
    )
    gpu_memory: float = setting(24576.0, "MiB of memory per GPU; jobs share a GPU only while their memory fits.",
                                above=0)
    max_jobs_per_gpu: int = setting(2, "Most jobs one GPU may hold when a policy shares GPUs.", min=1)
