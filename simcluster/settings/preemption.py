"""What a preemption costs: read by the preemptive policies (``Policy.preemptive``)."""

from __future__ import annotations

from simcluster.settings.fields import Reader, policy_is, setting, settings_group

PREEMPTION = "Preemption"  # its panel in `lucid-sim run --help`


@settings_group(PREEMPTION, reads=Reader(policy_is(lambda cls: cls.preemptive)))
class PreemptionOptions:
    preempt_overhead_small: float = setting(
        40.0, "Checkpoint/restore seconds charged per preemption, jobs of ≤ 8 GPUs.", min=0, time=True)
    preempt_overhead_large: float = setting(
        60.0, "Checkpoint/restore seconds charged per preemption, jobs of > 8 GPUs.", min=0, time=True)

    def preemption_overhead(self, gpu_num: int) -> float:
        """Checkpoint/restore seconds a preemption of a job of ``gpu_num`` GPUs costs."""
        return self.preempt_overhead_small if gpu_num <= 8 else self.preempt_overhead_large
