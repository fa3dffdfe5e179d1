"""``lucid-profile``: measures training workloads alone and in pairs on GPUs.

The outputs are the colocation tables of :mod:`simcluster.colocation.schema`.
Modules, one concept each:

- :mod:`~profiler.measure`: windows of wall-clock time and the stop rule;
- :mod:`~profiler.nvml`: GPU utilization and memory sampled in a thread;
- :mod:`~profiler.worker`: one training process (a rank of a job);
- :mod:`~profiler.runner`: jobs started together, measured over the same windows;
- :mod:`~profiler.single`, :mod:`~profiler.pair`: the two sweeps;
- :mod:`~profiler.plan`: what a sweep runs and how long it may take;
- :mod:`~profiler.tables`: rows from measurements, kept on disk row by row;
- :mod:`~profiler.metadata`: ``metadata.json`` beside the tables;
- :mod:`~profiler.observe`, :mod:`~profiler.progress`: who watches a sweep, and the Rich display;
- :mod:`~profiler.cli`: the command line.
"""
