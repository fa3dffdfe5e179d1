"""``python -m simcluster.cli`` is ``lucid-sim``."""

from simcluster.cli import main

main()
