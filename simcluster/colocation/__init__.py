"""Colocation tables: how jobs run alone and in pairs (see :mod:`simcluster.colocation.schema`)."""

from simcluster.colocation.schema import (
    PAIR_COLUMNS,
    PAIR_KEY,
    SINGLE_COLUMNS,
    SINGLE_KEY,
    SPEED_MAX,
    STATUS_FAILED,
    STATUS_OK,
    TableError,
    read_pair_table,
    read_single_table,
    validate_pair_table,
    validate_single_table,
    write_table,
)

__all__ = [
    "PAIR_COLUMNS",
    "PAIR_KEY",
    "SINGLE_COLUMNS",
    "SINGLE_KEY",
    "SPEED_MAX",
    "STATUS_FAILED",
    "STATUS_OK",
    "TableError",
    "read_pair_table",
    "read_single_table",
    "validate_pair_table",
    "validate_single_table",
    "write_table",
]
