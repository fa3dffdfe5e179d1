"""The 14 PyTorch training workloads of the Lucid trace, by the trace's model name.

Each module builds one job (``spec.build(WorkloadConfig(...))``) whose ``step()`` runs one
real training iteration on synthetic data of the real shapes; nothing is downloaded.
Importing this package imports torch and registers every workload.
"""

# Imported to register the workloads, in the order of Lucid's profile table.
from workloads import (  # noqa: F401, I001
    resnet18,
    mobilenet_v2,
    efficientnet,
    vgg,
    resnet50,
    mobilenet_v3,
    bert,
    transformer,
    lstm,
    dcgan,
    pointnet,
    neumf,
    ppo,
    td3,
)
from workloads.base import (
    SIZES,
    ModuleWrapper,
    Size,
    TrainingStep,
    WorkloadConfig,
    WorkloadSpec,
    no_wrap,
)
from workloads.registry import (
    UnknownWorkloadError,
    all_workloads,
    get_workload,
    register_workload,
    workload_names,
)

__all__ = [
    "SIZES",
    "ModuleWrapper",
    "Size",
    "TrainingStep",
    "UnknownWorkloadError",
    "WorkloadConfig",
    "WorkloadSpec",
    "all_workloads",
    "get_workload",
    "no_wrap",
    "register_workload",
    "workload_names",
]
