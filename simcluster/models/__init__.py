"""Lucid's interpretable models: packing analysis, workload (duration) estimation, throughput forecast.

Each is an InterpretML Explainable Boosting Machine of main effects, so its
whole behaviour is a handful of curves a person can read
(:mod:`simcluster.models.explanation` draws them; ``lucid-sim explain``).
"""
