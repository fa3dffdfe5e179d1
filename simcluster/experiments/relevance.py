"""Which settings a run reads, so a sweep can say when a ``--set`` key or the seed changes nothing.

:func:`settings_read` answers from what each part of the simulator is known to read (the engine,
the placement, each policy family, the estimators, the round-based engine); a policy it does not
know (a new plug-in) is assumed to read every setting, so it never gets a wrong "ignored" note.
Keep it in step with the code when a policy starts reading a new setting: ``tests/test_sweep.py``
checks it against real runs (a setting said to be ignored must leave the results unchanged).

>>> from simcluster.config import SimConfig
>>> sorted(settings_read(SimConfig(policy="fifo")) & {"estimator", "quantum", "seed", "placement"})
['placement']
>>> reads_seed(SimConfig(policy="fifo", placement="random"))
True
"""

from __future__ import annotations

from simcluster.config import HETERO, LUCID, SHARING, TIRESIAS, SimConfig, knobs

# policy families: the panel of settings each reads (besides the engine's own)
TIRESIAS_POLICIES = frozenset({"tiresias", "tiresias-gittins"})
ESTIMATE_POLICIES = {"qssf": "oracle", "lucid": "ebm"}  # policy → the estimator "auto" means for it
KNOWN_POLICIES = frozenset({"fifo", "sjf", "srtf", "qssf", "tiresias", "tiresias-gittins", "lucid", "srtf-ars",
                            "srtf-wrs", "sjf-ffs", "sjf-bsbf"})
FAILURE_DETAILS = ("node_repair", "checkpoint_interval", "restart_limit", "on_no_progress")


def _panel(name: str) -> set[str]:
    return {k for k, f in knobs().items() if f.metadata["panel"] == name}


def settings_read(config: SimConfig, rounds: bool = False) -> frozenset[str]:
    """The settings that can change the results of a run of ``config`` (its other values as given).

    ``rounds``: the run goes to the round-based engine (a heterogeneous trace or a Gavel policy).
    """
    from simcluster.policies import POLICIES

    policy = config.policy
    if rounds:  # simcluster.hetero: its own settings, the seed (agnostic policies draw GPU types at random)
        return frozenset({"policy", "seed", "gpus_per_node"} | _panel(HETERO))
    if policy not in KNOWN_POLICIES:
        return frozenset(knobs())
    read = {"policy", "placement", "until", "gpus_per_node", "spread_penalty", "node_mtbf"}
    if config.node_mtbf > 0:
        read |= set(FAILURE_DETAILS)
    cls = POLICIES.get(policy)
    if getattr(cls, "preemptive", False):
        read |= {"preempt_overhead_small", "preempt_overhead_large"}
    if policy in TIRESIAS_POLICIES:
        read |= _panel(TIRESIAS)
    if policy in ESTIMATE_POLICIES:
        estimator = ESTIMATE_POLICIES[policy] if config.estimator == "auto" else config.estimator
        read.add("estimator")
        if estimator == "file":
            read.add("estimates")
        if estimator == "ebm":
            read |= {"retrain_interval", "seed"}
    if getattr(cls, "shares_gpus", False):
        read |= _panel(SHARING)
    if policy == "lucid":
        read |= _panel(LUCID) | {"seed"}
    if config.placement == "random" or config.node_mtbf > 0:
        read.add("seed")
    return frozenset(read)


def reads_seed(config: SimConfig, rounds: bool = False) -> bool:
    """Whether any random choice of the run depends on the seed (else every seed gives the same results)."""
    return "seed" in settings_read(config, rounds)


def why_seed_is_ignored(config: SimConfig) -> str:
    """A short reason, for a note: what would have drawn random numbers and does not here."""
    return (f"{config.policy} with {config.placement} placement and no node failures draws no random numbers")
