"""Kept so that code written against the old path still imports: the helpers live in :mod:`simcluster.side_files`."""

from simcluster.side_files import read_side_csv, reject_first

__all__ = ["read_side_csv", "reject_first"]
