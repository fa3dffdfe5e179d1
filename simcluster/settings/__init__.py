"""Every setting of a run, grouped by the feature or policy family that reads it: the bottom floor.

One module per group (a frozen dataclass of :func:`~simcluster.settings.fields.setting` fields, made by
:func:`~simcluster.settings.fields.settings_group`): its fields, their help, the values they admit and which runs
read them.  :class:`simcluster.config.SimConfig` is these groups side by side, flat (``SimConfig(quantum=60)``).
These modules import nothing of simcluster but each other, so that every layer may read settings.
"""

from simcluster.settings.fields import ConfigError, Reader, RunView, coerce, setting, settings_group

__all__ = ["ConfigError", "Reader", "RunView", "coerce", "setting", "settings_group"]
