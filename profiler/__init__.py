"""``lucid-profile``: measures training workloads alone and in pairs on GPUs.

The outputs are the colocation tables of :mod:`simcluster.colocation.schema`.
Modules, one concept each:

- :mod:`~profiler.measure`: windows of wall-clock time and the stop rule;
- :mod:`~profiler.nvml`: GPU utilization and memory sampled in a thread;
- :mod:`~profiler.worker`: one training process (a rank of a job);
- :mod:`~profiler.runner`: jobs started together, measured over the same windows;
- :mod:`~profiler.pool`: workers kept from one run to the next (CUDA context and model kept);
- :mod:`~profiler.single`, :mod:`~profiler.pair`: the two sweeps;
- :mod:`~profiler.campaign_plan`, :mod:`~profiler.campaign`: a plan in priority order, run in chunks;
- :mod:`~profiler.plan`: what a sweep runs and how long it may take;
- :mod:`~profiler.tables`: rows from measurements, kept on disk row by row;
- :mod:`~profiler.metadata`: ``metadata.json`` beside the tables;
- :mod:`~profiler.observe`, :mod:`~profiler.progress`: who watches a sweep, and the Rich display;
- :mod:`~profiler.cli`, :mod:`~profiler.cli_campaign`, :mod:`~profiler.cli_options`: the command line.
"""
