"""An operator's Kueue objects, as ``kubectl get clusterqueues,cohorts,localqueues,resourceflavors,
workloadpriorityclasses,topologies -o yaml`` writes them, read into a :class:`~simcluster.tiers.model.KueueConfig`.

Kueue's own validation applies, so that what the simulator runs is what the cluster would accept; each refusal
names the file, line, document and field.  What the model leaves out (cpu quotas, taints, admission checks) is
never dropped silently: it becomes one ``not_modeled`` line per kind of thing.

>>> config = parse_kueue('''
... apiVersion: kueue.x-k8s.io/v1beta2
... kind: ClusterQueue
... metadata: {name: team-a}
... spec:
...   cohortName: org
...   resourceGroups:
...   - coveredResources: [cpu, nvidia.com/gpu]
...     flavors:
...     - name: h100
...       resources:
...       - {name: cpu, nominalQuota: 96}
...       - {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: "4"}
... ''')
>>> config.cluster_queues["team-a"].quota("h100"), config.cohorts["org"].parent
(FlavorQuota(flavor='h100', nominal=8.0, borrowing_limit=4.0, lending_limit=None), None)
>>> config.not_modeled
('cpu quotas in 1 ClusterQueue (team-a)',)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from simcluster.errors import TraceError
from simcluster.tiers.model import (
    BORROW_WITHIN_COHORT,
    FAIR_SHARING_STRATEGIES,
    GPU,
    QUEUEING_STRATEGIES,
    RECLAIM_WITHIN_COHORT,
    WITHIN_CLUSTER_QUEUE,
    ClusterQueueSpec,
    CohortSpec,
    FairSharing,
    FlavorQuota,
    FlavorSpec,
    KueueConfig,
    LocalQueueSpec,
    Preemption,
)
from simcluster.tiers.yaml_nodes import Doc, Field, documents, kind_of, parse_quantity, shown

# the readers' entry points; parse_quantity, now yaml_nodes', stays importable from here
__all__ = ["parse_kueue", "parse_quantity", "read_kueue"]

KUEUE_GROUP = "kueue.x-k8s.io"
CONFIG_GROUP = "config.kueue.x-k8s.io"
CONFIG_VERSIONS = ("v1beta1", "v1beta2")
VERSIONS = {  # the API versions of the kinds read here
    "ClusterQueue": ("v1beta1", "v1beta2"), "Cohort": ("v1alpha1", "v1beta1", "v1beta2"),
    "LocalQueue": ("v1beta1", "v1beta2"), "ResourceFlavor": ("v1beta1", "v1beta2"),
    "WorkloadPriorityClass": ("v1beta1", "v1beta2"), "Topology": ("v1alpha1", "v1beta1", "v1beta2"),
}
KUEUE_SUFFIXES = (".yaml", ".yml", ".json")
MAX_GPUS = 10**9  # per quota: more is a typo (a memory quantity pasted into a GPU quota), not a cluster
MAX_TOPOLOGY_LEVELS = 16  # Kueue's own limit (Topology spec.levels MaxItems)
HOSTNAME = "kubernetes.io/hostname"
STOP_POLICIES = ("None", "Hold", "HoldAndDrain")
FEW_NAMES = 3  # names quoted in a not_modeled line; the rest are counted


def parse_kueue(text: str, source: str = "kueue.yaml") -> KueueConfig:
    """The Kueue objects of one file's ``text`` (YAML or JSON, one or many documents, Lists included);
    ``source`` names it in errors.  :func:`read_kueue` reads several files as one cluster.

    >>> parse_kueue("apiVersion: apps/v1\\nkind: Deployment\\nmetadata: {name: web}\\n")
    Traceback (most recent call last):
    ...
    simcluster.errors.TraceError: kueue.yaml, line 2, field 'kind': document 1 (Deployment web): not a Kueue object (apps/v1 Deployment)
    """
    found = _Collected()
    _read_text(found, text, source)
    return found.config((source,))


def read_kueue(paths: str | Path | Sequence[str | Path]) -> KueueConfig:
    """The Kueue objects of the files ``paths`` (a folder stands for its ``*.yaml``, ``*.yml`` and ``*.json``
    files, not recursively, sorted by name), read as one cluster: a name defined twice, in one file or two, is
    refused, and references (a LocalQueue's ClusterQueue, a ClusterQueue's flavors) may cross files."""
    files = _files(paths)
    found = _Collected()
    for path in files:
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise TraceError(path, f"cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
        _read_text(found, text, str(path))
    return found.config(tuple(str(path) for path in files))


def _files(paths: str | Path | Sequence[str | Path]) -> list[Path]:
    """The files that ``paths`` name, folders expanded, each once."""
    named = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not named:
        raise TraceError("kueue", "no Kueue file given")
    files: list[Path] = []
    for one in map(Path, named):
        if one.is_dir():
            inside = sorted(p for p in one.iterdir() if p.is_file() and p.suffix.lower() in KUEUE_SUFFIXES)
            if not inside:
                raise TraceError(one, f"holds no {', '.join('*' + s for s in KUEUE_SUFFIXES)} file")
            files.extend(inside)
        elif one.is_file():
            files.append(one)
        else:
            raise TraceError(one, "no such file or folder")
    seen: set[Path] = set()
    return [p for p in files if not (p.resolve() in seen or seen.add(p.resolve()))]  # a file named twice: once


# --- documents -----------------------------------------------------------------------------------------------


def _read_text(found: _Collected, text: str, source: str) -> None:
    for index, node in enumerate(documents(text, source), start=1):
        if node is None or node.tag == "tag:yaml.org,2002:null":
            continue  # an empty document (a trailing ---)
        root = Field(node, "", Doc(source, index), node.start_mark.line + 1)
        version, kind = _header(root)
        if kind == "List" or (kind.endswith("List") and "items" in root.mapping()):
            for i, item in enumerate(root.child("items").items(), start=1):
                item = replace(item, path="", doc=replace(root.doc, item=i))
                typed = (version, kind[: -len("List")]) if kind != "List" else None  # kubectl's ClusterQueueList
                _read_object(found, item, typed)
        else:
            _read_object(found, root)



def _header(obj: Field, typed: tuple[str, str] | None = None) -> tuple[str, str]:
    """An object's apiVersion and kind (a typed List's where the item leaves them out)."""
    if not isinstance(obj.node, yaml.MappingNode):
        raise obj.refuse(f"expected a Kubernetes object (apiVersion, kind, metadata, spec), got {kind_of(obj.node)}")
    version = obj.child("apiVersion").text(None if typed else "a Kubernetes object needs an apiVersion")
    kind = obj.child("kind").text(None if typed else "a Kubernetes object needs a kind")
    return version or (typed or ("", ""))[0], kind or (typed or ("", ""))[1]


def _read_object(found: _Collected, obj: Field, typed: tuple[str, str] | None = None) -> None:
    version, kind = _header(obj, typed)
    group, _, release = version.rpartition("/")
    name = obj.child("metadata").child("name").text() if kind != "Configuration" else None
    obj = replace(obj, doc=replace(obj.doc, kind=kind, name=name))
    if group == CONFIG_GROUP and kind == "Configuration":
        found.configuration(obj, release)
    elif version == "v1" and kind == "ConfigMap":
        _read_config_map(found, obj)
    elif group == "scheduling.k8s.io" and kind == "PriorityClass":
        found.priority_class(obj)
    elif group == KUEUE_GROUP:
        found.kueue_object(obj, kind, release)
    else:
        raise obj.child("kind").refuse(f"not a Kueue object ({version} {kind})")


def _read_config_map(found: _Collected, obj: Field) -> None:
    """Kueue's manifests ship its Configuration in a ConfigMap, as the text of a ``*.yaml`` data key
    (``controller_manager_config.yaml``); line numbers inside it count from that text's first line."""
    read = False
    for key, value in obj.child("data").mapping().items():
        if not key.endswith((".yaml", ".yml")):
            continue
        inner = f"{obj.doc.source} ({obj.doc}, data {key})"
        for index, node in enumerate(documents(value.text() or "", inner), start=1):
            if node is None:
                continue
            root = Field(node, "", Doc(inner, index), node.start_mark.line + 1)
            version, kind = _header(root)
            if kind != "Configuration" or not version.startswith(f"{CONFIG_GROUP}/"):
                raise root.child("kind").refuse(f"expected a Kueue Configuration, got {version} {kind}")
            _read_object(found, root)
            read = True
    if not read:
        raise obj.child("data").refuse("a ConfigMap is read only for the Kueue Configuration in a *.yaml key "
                                       "(controller_manager_config.yaml); it has none")


# --- what is left out ----------------------------------------------------------------------------------------


class _Notes:
    """What the model leaves out, gathered as (what, kind) → the objects' names and details, then one line
    each: ``cpu, memory quotas in 3 ClusterQueues (a, b, c)``."""

    def __init__(self) -> None:
        self.found: dict[tuple[str, str], tuple[list[str], set[str]]] = {}

    def add(self, what: str, kind: str, name: str, details: Iterable[str] = ()) -> None:
        names, known = self.found.setdefault((what, kind), ([], set()))
        if name not in names:
            names.append(name)
        known.update(details)

    def lines(self) -> tuple[str, ...]:
        lines = []
        for (what, kind), (names, details) in self.found.items():
            shown = ", ".join(names[:FEW_NAMES]) + (f" and {len(names) - FEW_NAMES} more" * (len(names) > FEW_NAMES))
            plural = "s" * (len(names) > 1)
            what = what.format(details=", ".join(sorted(details)))
            lines.append(f"{what} in {len(names)} {kind}{plural} ({shown})" if what
                         else f"{len(names)} {kind} object{plural} ({shown})")
        return tuple(lines)


# --- objects -------------------------------------------------------------------------------------------------


class _Collected:
    """The objects read so far, each with the field it came from, so that a name defined twice or a reference
    to nothing can be refused where it is once every file is read."""

    def __init__(self) -> None:
        self.cluster_queues: dict[str, tuple[ClusterQueueSpec, Field]] = {}
        self.cohorts: dict[str, tuple[CohortSpec, Field]] = {}
        self.local_queues: dict[str, tuple[LocalQueueSpec, Field]] = {}
        self.flavors: dict[str, tuple[FlavorSpec, Field]] = {}
        self.priority_classes: dict[str, tuple[int, Field]] = {}
        self.topologies: dict[str, tuple[tuple[str, ...], Field]] = {}
        self.fair_sharing: tuple[FairSharing, Field] | None = None
        self.flavor_refs: list[tuple[str, Field]] = []  # flavors named by ClusterQueues and Cohorts
        self.queue_refs: list[tuple[str, Field]] = []  # ClusterQueues named by LocalQueues
        self.topology_refs: list[tuple[str, Field]] = []  # Topologies named by ResourceFlavors
        self.parents: dict[str, Field] = {}  # a Cohort's spec.parent field, by the Cohort's name
        self.notes = _Notes()

    def kueue_object(self, obj: Field, kind: str, release: str) -> None:
        read = {"ClusterQueue": self.cluster_queue, "Cohort": self.cohort, "LocalQueue": self.local_queue,
                "ResourceFlavor": self.flavor, "WorkloadPriorityClass": self.priority_class,
                "Topology": self.topology}.get(kind)
        if read is None:  # AdmissionCheck, Workload, MultiKueueCluster, ...: counted, not modelled
            self.notes.add("", kind, obj.doc.name or "unnamed")
            return
        if release not in VERSIONS[kind]:
            raise obj.child("apiVersion").refuse(f"{KUEUE_GROUP}/{release} {kind} is unknown here; known: "
                                                 f"{', '.join(VERSIONS[kind])}")
        read(obj, release)

    def cluster_queue(self, obj: Field, release: str) -> None:
        name, spec = _name(obj), obj.child("spec")
        cohort_key = _renamed(spec, release, "cohort", "cohortName")
        cohort = spec.child(cohort_key).text()
        quotas = self.quotas(spec, "ClusterQueue", name, f"spec.{cohort_key}" if cohort is None else None)
        queue = ClusterQueueSpec(name, cohort, quotas,
                                 spec.child("queueingStrategy").choice(QUEUEING_STRATEGIES, "BestEffortFIFO"),
                                 _preemption(spec.child("preemption")), _weight(spec))
        self.cluster_queue_notes(spec, name)
        _define(self.cluster_queues, name, queue, obj)

    def cluster_queue_notes(self, spec: Field, name: str) -> None:
        fields, note = spec.mapping(), self.notes.add
        if spec.child("namespaceSelector").mapping():
            note("namespaceSelector", "ClusterQueue", name)
        if not spec.child("admissionChecks").missing or not spec.child("admissionChecksStrategy").missing:
            note("admission checks", "ClusterQueue", name)
        self.stop_policy(spec, "ClusterQueue", name)
        fungibility = {key: value.text() for key, value in spec.child("flavorFungibility").mapping().items()}
        if set(fungibility.items()) - {("whenCanBorrow", "Borrow"), ("whenCanBorrow", "MayStopSearch"),
                                       ("whenCanPreempt", "TryNextFlavor")}:  # Kueue's defaults, v1beta1 and 2
            note("flavorFungibility", "ClusterQueue", name)
        for key in ("admissionScope", "concurrentAdmissionPolicy"):
            if key in fields:
                note(key, "ClusterQueue", name)
        known = {"resourceGroups", "cohort", "cohortName", "queueingStrategy", "namespaceSelector",
                 "flavorFungibility", "preemption", "admissionChecks", "admissionChecksStrategy", "stopPolicy",
                 "fairSharing", "admissionScope", "concurrentAdmissionPolicy"}
        self.unknown(fields, known, "ClusterQueue", name)

    def cohort(self, obj: Field, release: str) -> None:
        name, spec = _name(obj), obj.child("spec")
        parent_key = _renamed(spec, release, "parent", "parentName")
        parent = spec.child(parent_key).text()
        quotas = self.quotas(spec, "Cohort", name, f"spec.{parent_key}" if parent is None else None)
        _define(self.cohorts, name, CohortSpec(name, parent, quotas, _weight(spec)), obj)
        if parent is not None:
            self.parents[name] = spec.child(parent_key)
        self.unknown(spec.mapping(), {"parent", "parentName", "resourceGroups", "fairSharing"}, "Cohort", name)

    def quotas(self, spec: Field, kind: str, owner: str, no_limits: str | None) -> tuple[FlavorQuota, ...]:
        """The GPU quota of each flavor of ``spec.resourceGroups``, in the order met, under Kueue's rules: a
        resource in one group, a flavor in one place, limits only with a cohort (``no_limits``: the field that
        is unset, when it is)."""
        quotas: list[FlavorQuota] = []
        group_of: dict[str, int] = {}
        flavors: set[str] = set()
        others: set[str] = set()
        for g, group in enumerate(spec.child("resourceGroups").items()):
            covered = _covered(group, group_of, g)
            listed = group.child("flavors").items()
            if not listed:
                raise group.child("flavors").refuse("a resource group needs at least one flavor")
            for flavor in listed:
                name_field = flavor.child("name")
                name = name_field.text("a flavor needs a name")
                assert name is not None
                if name in flavors:
                    raise name_field.refuse(f"flavor {name!r} is listed twice in this {kind}")
                flavors.add(name)
                self.flavor_refs.append((name, name_field))
                quota = _flavor_quota(flavor, name, covered, no_limits, others)
                quotas.extend([quota] if quota is not None else [])
        if others:
            self.notes.add("{details} quotas", kind, owner, others)
        return tuple(quotas)

    def local_queue(self, obj: Field, release: str) -> None:
        name, spec = _name(obj), obj.child("spec")
        namespace = obj.child("metadata").child("namespace").text() or "default"
        field = spec.child("clusterQueue")
        queue = LocalQueueSpec(name, namespace, field.text("a LocalQueue needs spec.clusterQueue") or "")
        _define(self.local_queues, queue.key, queue, obj)
        self.queue_refs.append((queue.cluster_queue, field))
        self.stop_policy(spec, "LocalQueue", queue.key)
        for key, what in (("fairSharing", "fairSharing (admission fair sharing)"), ("wallTimePolicy", "wallTimePolicy")):
            if not spec.child(key).missing:
                self.notes.add(what, "LocalQueue", queue.key)
        self.unknown(spec.mapping(), {"clusterQueue", "stopPolicy", "fairSharing", "wallTimePolicy"},
                     "LocalQueue", queue.key)

    def flavor(self, obj: Field, release: str) -> None:
        name, spec = _name(obj), obj.child("spec")
        labels = {key: value.text(f"node label {key!r} needs a value") or ""
                  for key, value in spec.child("nodeLabels").mapping().items()}
        topology = spec.child("topologyName").text()
        if topology is not None:
            if not labels:  # Kueue's rule: a TAS flavor selects its nodes by label
                raise spec.child("nodeLabels").refuse("a flavor with a topologyName needs at least one nodeLabel")
            self.topology_refs.append((topology, spec.child("topologyName")))
        _define(self.flavors, name, FlavorSpec(name, MappingProxyType(labels), topology), obj)
        for key in ("nodeTaints", "tolerations", "resourceWeights"):
            if not spec.child(key).missing and (spec.child(key).items() if key != "resourceWeights" else True):
                self.notes.add(key, "ResourceFlavor", name)
        known = {"nodeLabels", "nodeTaints", "tolerations", "topologyName", "resourceWeights"}
        self.unknown(spec.mapping(), known, "ResourceFlavor", name)

    def priority_class(self, obj: Field, release: str = "v1") -> None:
        """A WorkloadPriorityClass or a Kubernetes PriorityClass: both name a priority by its top-level value."""
        name = _name(obj)
        value = obj.child("value").int32()
        if value is None:
            raise obj.child("value").refuse(f"a {obj.doc.kind} needs a value (a whole number)")
        _define(self.priority_classes, name, value, obj, "priority class")
        if obj.child("globalDefault").value() is True:
            self.notes.add("globalDefault", "PriorityClass", name)

    def topology(self, obj: Field, release: str) -> None:
        name = _name(obj)
        field = obj.child("spec").child("levels")
        levels = field.items()
        if not 1 <= len(levels) <= MAX_TOPOLOGY_LEVELS:
            raise field.refuse(f"a Topology needs 1 to {MAX_TOPOLOGY_LEVELS} levels ({{nodeLabel: ...}})")
        keys: list[str] = []
        for i, level in enumerate(levels):
            key = level.child("nodeLabel").text("a level needs a nodeLabel") or ""
            if key in keys:
                raise level.child("nodeLabel").refuse(f"node label {key!r} names two levels")
            if key == HOSTNAME and i != len(levels) - 1:
                raise level.child("nodeLabel").refuse(f"{HOSTNAME} can only be the lowest level")
            keys.append(key)
        _define(self.topologies, name, tuple(keys), obj)

    def configuration(self, obj: Field, release: str) -> None:
        """Fair sharing as the controller's Configuration sets it: v1beta1 turns it on with ``enable``; v1beta2
        has no ``enable`` (a ``fairSharing`` section turns it on).  The rest is the controller's own."""
        if release not in CONFIG_VERSIONS:
            raise obj.child("apiVersion").refuse(f"{CONFIG_GROUP}/{release} is unknown here; known: "
                                                 f"{', '.join(CONFIG_VERSIONS)}")
        if self.fair_sharing is not None:
            first = self.fair_sharing[1].doc
            raise obj.refuse(f"a second Kueue Configuration (the first: {first.source}, {first})")
        section = obj.child("fairSharing")
        enable = section.child("enable").value()
        if enable is not None and not isinstance(enable, bool):
            raise section.child("enable").refuse(f"expected true or false, got {shown(enable)}")
        strategies = tuple(item.choice(FAIR_SHARING_STRATEGIES, "")
                           for item in section.child("preemptionStrategies").items())
        enabled = enable if enable is not None else release != "v1beta1" and not section.missing
        self.fair_sharing = FairSharing(enabled, strategies or FAIR_SHARING_STRATEGIES), obj
        if not obj.child("admissionFairSharing").missing:
            self.notes.add("admissionFairSharing", "Kueue Configuration", obj.doc.source)

    def stop_policy(self, spec: Field, kind: str, name: str) -> None:
        policy = spec.child("stopPolicy").choice(STOP_POLICIES, "None")
        if policy != "None":
            self.notes.add("stopPolicy {details}", kind, name, [policy])

    def unknown(self, fields: dict[str, Field], known: set[str], kind: str, name: str) -> None:
        if set(fields) - known:  # a field newer than this reader, or a typo: said, not dropped
            self.notes.add("unknown field(s) spec.{details}", kind, name, set(fields) - known)

    @property
    def anything(self) -> bool:
        return bool(self.cluster_queues or self.cohorts or self.local_queues or self.flavors
                    or self.priority_classes or self.topologies or self.fair_sharing or self.notes.found)

    def config(self, sources: tuple[str, ...]) -> KueueConfig:
        """The :class:`KueueConfig` of everything read, once references are checked."""
        if not self.anything:
            raise TraceError(", ".join(sources), "holds no Kueue object (ClusterQueue, Cohort, LocalQueue, "
                             "ResourceFlavor, WorkloadPriorityClass, Topology or Configuration)")
        _refer(self.queue_refs, self.cluster_queues, "ClusterQueue")
        _refer(self.topology_refs, self.topologies, "Topology")
        flavors = {name: spec for name, (spec, _) in self.flavors.items()}
        if flavors:
            _refer(self.flavor_refs, self.flavors, "ResourceFlavor")
        else:  # only queues were given: their flavors are known by name alone
            flavors = {name: FlavorSpec(name) for name, _ in self.flavor_refs}
        return KueueConfig(
            cluster_queues=_frozen(self.cluster_queues), cohorts=MappingProxyType(self.cohort_tree()),
            local_queues=_frozen(self.local_queues), flavors=MappingProxyType(flavors),
            priority_classes=_frozen(self.priority_classes), topologies=_frozen(self.topologies),
            fair_sharing=self.fair_sharing[0] if self.fair_sharing else None, not_modeled=self.notes.lines(),
            sources=sources)

    def cohort_tree(self) -> dict[str, CohortSpec]:
        """Every cohort: the Cohort objects, then those only named (by a ClusterQueue, or as a parent: Kueue
        gives them no quota and no parent).  A cycle of parents is refused, as Kueue disables one."""
        cohorts = {name: spec for name, (spec, _) in self.cohorts.items()}
        named = [q.cohort for q, _ in self.cluster_queues.values()] + [c.parent for c in list(cohorts.values())]
        for name in named:
            if name is not None and name not in cohorts:
                cohorts[name] = CohortSpec(name)
        cycle = _cycle({name: spec.parent for name, spec in cohorts.items()})
        if cycle:
            raise self.parents[cycle[0]].refuse(f"cohort parents form a cycle: {' → '.join(cycle)}")
        return cohorts


def _name(obj: Field) -> str:
    return obj.child("metadata").child("name").text("metadata.name is missing or empty") or ""


def _define(table: dict[str, Any], name: str, value: Any, obj: Field, what: str | None = None) -> None:
    if name in table:
        first = table[name][1].doc
        where = obj.child("metadata").child("name")
        raise where.refuse(f"{what or obj.doc.kind} {name!r} is defined twice; first in {first.source}, {first}")
    table[name] = (value, obj)


def _refer(references: list[tuple[str, Field]], table: dict[str, Any], kind: str) -> None:
    for name, field in references:
        if name not in table:
            there = ", ".join(list(table)[:FEW_NAMES * 2]) or "none"
            raise field.refuse(f"no {kind} named {name!r} among the files (there are: {there})")


def _frozen(table: dict[str, tuple[Any, Field]]) -> MappingProxyType[str, Any]:
    return MappingProxyType({name: value for name, (value, _) in table.items()})


def _cycle(parents: dict[str, str | None]) -> list[str] | None:
    """The first cycle of a parent map, closed (``[a, b, a]``), or None."""
    done: set[str] = set()
    for start in parents:
        path: list[str] = []
        at: str | None = start
        while at is not None and at not in done:
            if at in path:
                return path[path.index(at):] + [at]
            path.append(at)
            at = parents.get(at)
        done.update(path)
    return None


def _renamed(spec: Field, release: str, old: str, new: str) -> str:
    """The field ``old`` (v1alpha1, v1beta1) or ``new`` (v1beta2), refusing the other version's spelling,
    which Kueue would drop as an unknown field."""
    key, other = (new, old) if release == "v1beta2" else (old, new)
    if other in spec.mapping():
        raise spec.child(other).refuse(f"{release} names this field spec.{key} (spec.{other} is "
                                       f"{'v1beta1' if other == old else 'v1beta2'}'s spelling)")
    return key


def _covered(group: Field, group_of: dict[str, int], g: int) -> list[str]:
    """A resource group's coveredResources, each in no other group."""
    field = group.child("coveredResources")
    covered: list[str] = []
    for item in field.items():
        resource = item.text("a covered resource needs a name") or ""
        if resource in group_of:
            raise item.refuse(f"resource {resource!r} is in two resource groups ({group_of[resource]} and {g})")
        group_of[resource] = g
        covered.append(resource)
    if not covered:
        raise field.refuse("a resource group needs coveredResources (the resources its flavors give)")
    return covered


def _flavor_quota(flavor: Field, name: str, covered: list[str], no_limits: str | None,
                  others: set[str]) -> FlavorQuota | None:
    """One flavor's GPU quota (None where it gives no GPU); its other resources are checked and noted."""
    field = flavor.child("resources")
    found: dict[str, FlavorQuota] = {}
    for item in field.items():
        resource = item.child("name").text("a resource needs a name") or ""
        if resource in found:
            raise item.child("name").refuse(f"resource {resource!r} is listed twice for flavor {name!r}")
        if resource not in covered:
            raise item.child("name").refuse(f"resource {resource!r} is not among the group's coveredResources "
                                            f"({', '.join(covered)})")
        found[resource] = _quota(item, name, no_limits, gpu=resource == GPU)
    if len(found) != len(covered):
        missing = ", ".join(r for r in covered if r not in found)
        raise field.refuse(f"flavor {name!r} must give every covered resource; it lacks {missing}")
    others.update(r for r in found if r != GPU)
    return found.get(GPU)


def _quota(item: Field, flavor: str, no_limits: str | None, gpu: bool) -> FlavorQuota:
    """One resource's quota, under Kueue's rules: non-negative, limits only with a cohort, lending ≤ nominal."""
    values: dict[str, float | None] = {}
    for key in ("nominalQuota", "borrowingLimit", "lendingLimit"):
        field = item.child(key)
        if field.missing:
            if key == "nominalQuota":
                raise field.refuse("a resource needs a nominalQuota")
            values[key] = None
            continue
        if key != "nominalQuota" and no_limits is not None:
            raise field.refuse(f"{key} needs {no_limits}: Kueue allows limits only where there is a cohort "
                               "to borrow from or lend to")
        number = field.quantity()
        if number < 0:
            raise field.refuse(f"must not be negative, got {shown(field.value())}")
        if gpu and number > MAX_GPUS:
            raise field.refuse(f"{number:,.0f} GPUs is absurd (at most {MAX_GPUS:,} per quota)")
        values[key] = number
    nominal, lending = values["nominalQuota"] or 0.0, values["lendingLimit"]
    if lending is not None and lending > nominal:
        raise item.child("lendingLimit").refuse(f"lendingLimit {lending:g} is more than nominalQuota {nominal:g}")
    return FlavorQuota(flavor, nominal, values["borrowingLimit"], lending)


def _preemption(field: Field) -> Preemption:
    borrow = field.child("borrowWithinCohort")
    reclaim = field.child("reclaimWithinCohort").choice(RECLAIM_WITHIN_COHORT, "Never")
    policy = borrow.child("policy").choice(BORROW_WITHIN_COHORT, "Never")
    if reclaim == "Never" and policy != "Never":  # Kueue's rule: borrowing preemption reclaims first
        raise borrow.child("policy").refuse(f"borrowWithinCohort.policy {policy} needs reclaimWithinCohort "
                                            "other than Never")
    return Preemption(field.child("withinClusterQueue").choice(WITHIN_CLUSTER_QUEUE, "Never"), reclaim, policy,
                      borrow.child("maxPriorityThreshold").int32())


def _weight(spec: Field) -> float:
    """``spec.fairSharing.weight``: 1 where unset; 0 (always last) or more than 10⁻⁹, as Kueue requires."""
    field = spec.child("fairSharing").child("weight")
    if field.missing:
        return 1.0
    weight = field.quantity()
    if weight < 0 or 0 < weight <= 1e-9:
        raise field.refuse(f"a fair-sharing weight must be 0 or more than 1e-9, got {shown(field.value())}")
    return weight
