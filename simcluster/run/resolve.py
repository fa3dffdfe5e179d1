"""The one resolver every entry point calls (CLI, TOML, sweeps' workers, the Python API): a trace and settings
in, a :class:`~simcluster.run.resolved.ResolvedRun` out.

In this order, each once: the plug-ins the settings name (loaded, their specs made absolute, the policy's own
settings typed: :func:`~simcluster.plugins.resolve_plugins`); the settings the run would ignore, from their
declarations (:mod:`simcluster.scope`); files named beside the trace; the cluster, as each feature shapes it
(:meth:`~simcluster.features.base.Feature.cluster`); the tables (:func:`~simcluster.tables.load_tables`); the
failure model; and then each feature's part (:data:`simcluster.features.FEATURES`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from simcluster import features
from simcluster.cluster_spec import ONE_VC, ClusterSpec, parse_cluster
from simcluster.colocation.loader import ColocationModel
from simcluster.config import SimConfig
from simcluster.faults.models import FailureModel
from simcluster.faults.spec import model_of
from simcluster.plugins import Kind, Origin, name_of, resolve_plugins
from simcluster.run.resolved import InPlay, Plugin, ResolvedRun, ResolvedSettings
from simcluster.scope import check_settings, has_job_types, trace_columns
from simcluster.settings.reliability import check_reliability, reliability_mode
from simcluster.tables import load_tables
from simcluster.throughputs import ThroughputTable
from simcluster.traces.base import Trace


def resolve_settings(config: SimConfig | None = None) -> ResolvedSettings:
    """``config`` (default: the defaults) with the plug-ins it names loaded, their specs made absolute and the
    policy's own settings typed (:func:`~simcluster.plugins.resolve_plugins`): the first step of
    :func:`resolve_run`, for a caller that needs the plug-ins' names before it has the trace."""
    config, policy, placement = resolve_plugins(config or SimConfig())
    return ResolvedSettings(config, _plugin(*policy, "policy"), _plugin(*placement, "placement"))


def resolve_run(trace: Trace | None = None, config: SimConfig | ResolvedSettings | None = None, *,
                cluster: Mapping[str, int] | ClusterSpec | None = None, colocation: ColocationModel | None = None,
                throughputs: ThroughputTable | None = None, faults: FailureModel | None = None) -> ResolvedRun:
    """``trace`` under ``config`` (default: the defaults; or settings resolved already, :func:`resolve_settings`),
    resolved.  ``cluster`` (nodes per VC, or a :class:`ClusterSpec`) replaces the trace's; ``colocation`` and
    ``throughputs`` the tables ``config`` names; ``faults`` the failure model ``config.faults`` names.  Without a
    trace the run is of jobs made by hand (``Simulation(jobs, run)``), on ``cluster``.

    >>> from simcluster.traces.synth import SynthSpec, synthesize
    >>> run = resolve_run(synthesize(SynthSpec(jobs=5)), SimConfig(policy="fifo", quantum=30))
    >>> run.policy.label, run.warnings
    ('policy fifo', ('--quantum 30 is ignored: fifo does not read it (read by tiresias, tiresias-gittins)',))
    """
    settled = config if isinstance(config, ResolvedSettings) else resolve_settings(config)
    config, policy_class = settled.config, settled.policy.cls
    warnings = check_settings(config, trace is not None and has_job_types(trace), policy=policy_class,
                              columns=trace_columns(trace))
    if trace is not None:
        config = files_beside_trace(config, trace)
        if config.throughput_history is None and trace.throughput_history:  # the cluster's own log, for lucid
            config = replace(config, throughput_history=trace.throughput_history)
    if cluster is None:
        if trace is None:
            raise ValueError("resolve_run needs a trace or a cluster")
        spec, merged = cluster_of(trace, config)
    else:
        spec, merged = as_spec(cluster, config.gpus_per_node), ""
    vcs = spec.vcs
    for feature in features.FEATURES:  # (a topology above the nodes; Kueue's pool of the VCs' nodes)
        spec = feature.cluster(spec, config, trace)
    if not merged and spec.vcs == (ONE_VC,) != vcs:
        merged = (f"the cluster's {len(vcs)} VC(s) ({', '.join(vcs[:5])}{', …' if len(vcs) > 5 else ''}) are one "
                  f"pool, VC '{ONE_VC}' (--kueue: the ClusterQueues share its nodes by quota)")
    reliability = reliability_mode(config) or faults is not None
    if reliability:
        check_reliability(config, model_given=faults is not None)
    run = ResolvedRun(
        config=config, policy=settled.policy, placement=settled.placement, cluster=spec,
        tables=load_tables(trace, config, policy_class.shares_gpus, throughputs, colocation, spec.gpu_types),
        trace=trace, merged=bool(merged), reliability=reliability,
        fault_model=(faults if faults is not None else model_of(config)) if reliability else None,
        warnings=(*warnings, *([merged] if merged else [])))
    in_play = tuple(InPlay(f, f.plan(run)) for f in features.FEATURES if f.in_play(run))  # (read at each run)
    return replace(run, features=in_play)


def _plugin(cls: type, origin: Origin, kind: Kind) -> Plugin:
    return Plugin(cls, origin, name_of(cls, origin, kind), kind)


def as_spec(cluster: Mapping[str, int] | ClusterSpec, gpus_per_node: int) -> ClusterSpec:
    """A cluster given as nodes per VC (untyped, ``gpus_per_node`` GPUs each) or as a spec, as a spec."""
    return cluster if isinstance(cluster, ClusterSpec) else ClusterSpec.uniform(cluster, gpus_per_node)


def cluster_of(trace: Trace, config: SimConfig) -> tuple[ClusterSpec, str]:
    """The cluster a run simulates, and a warning when ``--cluster`` merges the trace's VCs into one.

    ``--cluster`` always wins (one VC); otherwise a job log's VCs (typed when its VC config has a
    ``gpu_type`` column), an openb pod list's node list; a Gavel trace has no cluster of its own."""
    own = trace.cluster
    if config.cluster:
        spec = parse_cluster(config.cluster, config.gpus_per_node)
        vcs = list(own.vcs if own is not None else trace.vc_nodes)
        if vcs != [ONE_VC]:
            return spec, (f"--cluster {config.cluster}: the trace's {len(vcs)} VC(s) ({', '.join(vcs[:5])}"
                          f"{', …' if len(vcs) > 5 else ''}) are merged into one VC '{ONE_VC}' of {spec.describe()}")
        return spec, ""
    if own is not None:
        return own, ""
    if trace.heterogeneous:  # a Gavel trace has no cluster of its own
        raise ValueError(f"{trace.source}: give the cluster with --cluster, e.g. --cluster v100:4,p100:4,k80:4 "
                         "(GPU counts per type) or a node-list CSV")
    return ClusterSpec.uniform(trace.vc_nodes, config.gpus_per_node, trace.source), ""


SIDE_FILES = ("estimates", "tie_order", "sharing_labels")  # settings naming a file that may sit beside the trace


def files_beside_trace(config: SimConfig, trace: Trace) -> SimConfig:
    """``config`` with each relative side-file path that is not found from here but is beside the trace
    made to point there (so a preset can name ``reference_estimates/…`` of the trace it reproduces)."""
    folder = Path(trace.source).parent
    changes: dict[str, Any] = {}
    for name in SIDE_FILES:
        value = getattr(config, name)
        if value and not Path(value).is_absolute() and not Path(value).exists() and (folder / value).is_file():
            changes[name] = str(folder / value)
    return replace(config, **changes) if changes else config
