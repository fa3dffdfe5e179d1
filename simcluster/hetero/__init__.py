"""Heterogeneous GPU clusters and Gavel's heterogeneity-aware policies (OSDI'20).

``cluster``      GPU types, counts, memory, nodes (``--cluster v100:4,...`` or a node list)
``throughputs``  per-GPU-type throughput tables (Gavel's JSON via the colocation importer)
``trace``        the heterogeneous trace and job records
``engine``       the round-based mechanism (one SimPy process)
``policies/``    allocation policies, one file per family, registered in ``HETERO_POLICIES``
``run``          ``simulate_hetero``: trace + config → jobs, timeline, summary
"""
