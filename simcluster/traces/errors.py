"""Kept so that code written against the old path still imports: errors live in :mod:`simcluster.errors`."""

from simcluster.errors import RowProblems, TraceError

__all__ = ["RowProblems", "TraceError"]
