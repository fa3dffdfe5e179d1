"""Kubernetes nodes as a :class:`~simcluster.topology.model.Topology`, their levels named by node labels.

A node list is what ``kubectl get nodes -o json`` (or ``-o yaml``) writes: ``{"items": [{"metadata":
{"name": ..., "labels": {...}}}, ...]}``.  Its levels are node label keys from the top down, as Kueue's
Topology Aware Scheduling names them (``cloud.provider.com/topology-block``, ``…-rack``); the levels are
named by the keys themselves.  A level keyed by ``kubernetes.io/hostname`` (Kueue allows it only at the
bottom) is the node itself: each node must carry it, and the node is named by ``metadata.name``.
:func:`kueue_topology_levels` reads those keys from a Kueue ``Topology`` object.

>>> nodes = '''{"items": [
...   {"metadata": {"name": "n0", "labels": {"block": "b0", "rack": "r0", "kubernetes.io/hostname": "n0"}}},
...   {"metadata": {"name": "n1", "labels": {"block": "b0", "rack": "r1", "kubernetes.io/hostname": "n1"}}},
...   {"metadata": {"name": "n2", "labels": {"block": "b0", "rack": "r1"}}}]}'''
>>> parse_kubernetes_nodes(nodes, ["block", "rack"]).domains("rack")
['b0/r0', 'b0/r1']
>>> parse_kubernetes_nodes(nodes, ["block", "rack", "kubernetes.io/hostname"])
Traceback (most recent call last):
...
simcluster.errors.TraceError: nodes.json, field 'kubernetes.io/hostname': node 'n2' (item 2) has no label
'kubernetes.io/hostname'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simcluster.errors import TraceError
from simcluster.topology.arrays import MAX_NODES, TopologyError
from simcluster.topology.model import Topology

if TYPE_CHECKING:
    import yaml

HOSTNAME = "kubernetes.io/hostname"
KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSIONS = ("v1alpha1", "v1beta1", "v1beta2", "v1")  # the versions that define a Topology kind
MAX_KUEUE_LEVELS = 16  # Kueue's own limit (spec.levels MaxItems)


def parse_kubernetes_nodes(text: str, label_keys: Sequence[str], source: str = "nodes.json") -> Topology:
    """The topology of the nodes in ``text`` (a node list as JSON or YAML), levels keyed by ``label_keys``
    from the top down; ``source`` names the file in errors."""
    levels = _levels(label_keys, source)
    required = (*levels, HOSTNAME) if HOSTNAME in label_keys else levels
    items = _items(_loaded(text, source), source)
    names: list[str] = []
    columns: list[list[str]] = [[] for _ in levels]
    for row, item in enumerate(items):
        name, labels = _node(item, row, source)
        for k, key in enumerate(required):
            value = labels.get(key)
            if value is None or isinstance(value, (dict, list, bool)):
                raise TraceError(source, f"node {name!r} (item {row}) has no label {key!r}", field=key)
            if k < len(levels):  # the hostname level is the node itself
                columns[k].append(str(value).strip())
        names.append(name)
    try:
        return Topology.from_labels(levels, names, columns, source=source)
    except TopologyError as exc:
        items = [row for row in (exc.first, exc.row) if row is not None]
        where = f" (item{'s' * (len(items) > 1)} {' and '.join(map(str, items))})" if items else ""
        raise TraceError(source, exc.message + where, field=exc.level or "metadata.name") from None


def kueue_topology_levels(path: str | Path, *, name: str | None = None) -> list[str]:
    """The node label keys of a Kueue ``Topology`` object's levels, top-down, read from its YAML file (the
    one named ``name`` where the file holds several): the ``label_keys`` of a node list."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(path, f"cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    return parse_kueue_levels(text, str(path), name=name)


def parse_kueue_levels(text: str, source: str = "topology.yaml", name: str | None = None) -> list[str]:
    """:func:`kueue_topology_levels` of the YAML ``text``.

    >>> parse_kueue_levels('''
    ... apiVersion: kueue.x-k8s.io/v1beta1
    ... kind: Topology
    ... metadata: {name: default}
    ... spec:
    ...   levels:
    ...   - nodeLabel: cloud.provider.com/topology-block
    ...   - nodeLabel: cloud.provider.com/topology-rack
    ...   - nodeLabel: kubernetes.io/hostname
    ... ''')
    ['cloud.provider.com/topology-block', 'cloud.provider.com/topology-rack', 'kubernetes.io/hostname']
    """
    import yaml  # PyYAML: read only where a file is YAML

    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise _not_yaml(exc, source) from None
    found = [doc for doc in _objects(documents) if _text(_child(doc, "kind")) == "Topology"
             and (_text(_child(doc, "apiVersion")) or "").startswith(f"{KUEUE_GROUP}/")]
    named = {_text(_child(_child(doc, "metadata"), "name")): doc for doc in found}
    if name is not None:
        if name not in named:
            raise TraceError(source, f"no Kueue Topology named {name!r}; found: {_listed(named)}")
        found = [named[name]]
    if not found:
        raise TraceError(source, f"no Kueue Topology object (apiVersion {KUEUE_GROUP}/…, kind Topology)")
    if len(found) > 1:
        raise TraceError(source, f"holds {len(found)} Kueue Topology objects ({_listed(named)}): name one")
    return _kueue_levels(found[0], source)


def _kueue_levels(topology: yaml.Node, source: str) -> list[str]:
    version_node = _child(topology, "apiVersion")
    version = (_text(version_node) or "").split("/", 1)[1]
    if version not in KUEUE_VERSIONS:
        known = ", ".join(KUEUE_VERSIONS)
        raise TraceError(source, f"Kueue API version {version!r} unknown here; known: {known}",
                         line=_line(version_node), field="apiVersion")
    import yaml

    levels = _child(_child(topology, "spec"), "levels")
    if not isinstance(levels, yaml.SequenceNode) or not 1 <= len(levels.value) <= MAX_KUEUE_LEVELS:
        raise TraceError(source, f"spec.levels must list 1 to {MAX_KUEUE_LEVELS} levels ({{nodeLabel: ...}})",
                         line=_line(levels or topology), field="spec.levels")
    keys: list[str] = []
    for i, level in enumerate(levels.value):
        key = _text(_child(level, "nodeLabel"))
        where = {"line": _line(level), "field": f"spec.levels[{i}].nodeLabel"}
        if not key:
            raise TraceError(source, "a level needs a nodeLabel", **where)
        if key in keys:
            raise TraceError(source, f"node label {key!r} names two levels", **where)
        if key == HOSTNAME and i != len(levels.value) - 1:
            raise TraceError(source, f"{HOSTNAME} can only be the lowest level", **where)
        keys.append(key)
    return keys


def _levels(label_keys: Sequence[str] | None, source: str) -> tuple[str, ...]:
    """The named levels of ``label_keys``: the keys less a lowest hostname level."""
    keys = list(label_keys or ())
    if not keys or not all(isinstance(key, str) and key.strip() for key in keys):
        raise TraceError(source, "a node list needs label_keys: the node labels of its levels, from the top "
                         "down (kueue_topology_levels reads them from a Kueue Topology)", field="label_keys")
    if len(set(keys)) != len(keys):
        raise TraceError(source, f"label_keys name a label twice: {keys}", field="label_keys")
    if HOSTNAME in keys[:-1]:
        raise TraceError(source, f"{HOSTNAME} can only be the lowest level (the node itself)",
                         field="label_keys")
    levels = tuple(key for key in keys if key != HOSTNAME)
    if not levels:
        raise TraceError(source, f"label_keys name no level above the node ({HOSTNAME} is the node itself)",
                         field="label_keys")
    return levels


def _loaded(text: str, source: str) -> Any:
    if text.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise TraceError(source, f"not JSON: {exc.msg}", line=exc.lineno) from None
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml where installed: long lists load faster
    try:
        return yaml.load(text, Loader=loader)  # a safe loader: plain data only
    except yaml.YAMLError as exc:
        raise _not_yaml(exc, source) from None


def _items(data: Any, source: str) -> list[Any]:
    """The node objects of a node list (or one node)."""
    if isinstance(data, dict) and data.get("kind") == "Node":
        return [data]
    if isinstance(data, dict) and data.get("kind") == "Topology":
        raise TraceError(source, "a Kueue Topology names levels, not nodes: pass kueue_topology_levels(its "
                         "path) as label_keys to read a node list")
    if isinstance(data, list) and data and all(isinstance(one, dict) and "topology" in one for one in data):
        raise TraceError(source, "Slurm's topology.yaml is not read here; write its tree or blocks as "
                         "topology.conf")
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise TraceError(source, 'not a Kubernetes node list: expected {"items": [...]} as kubectl get nodes '
                         "-o json writes it", field="items")
    items = data["items"]
    if not items:
        raise TraceError(source, "the node list has no items: a topology needs at least one node",
                         field="items")
    if len(items) > MAX_NODES:
        raise TraceError(source, f"lists {len(items):,} nodes, more than {MAX_NODES:,}", field="items")
    return items


def _node(item: Any, row: int, source: str) -> tuple[str, dict[str, Any]]:
    """A node object's name and labels."""
    if not isinstance(item, dict) or item.get("kind", "Node") != "Node":
        what = item.get("kind") if isinstance(item, dict) else type(item).__name__
        raise TraceError(source, f"item {row} is a {what}, not a Node", field=f"items[{row}]")
    metadata = item.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name.strip():
        raise TraceError(source, f"item {row} has no metadata.name", field="metadata.name")
    labels = metadata.get("labels") or {}
    if not isinstance(labels, dict):
        raise TraceError(source, f"node {name!r} (item {row}): metadata.labels is not a mapping",
                         field="metadata.labels")
    return name.strip(), labels


def _objects(documents: list[yaml.Node]) -> list[yaml.Node]:
    """The objects of YAML documents, a List's items included (kubectl get topologies -o yaml)."""
    import yaml

    objects = []
    for doc in documents:
        items = _child(doc, "items")
        objects.extend(items.value if isinstance(items, yaml.SequenceNode) else [doc])
    return objects


def _child(node: yaml.Node | None, key: str) -> yaml.Node | None:
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return None
    found = (value for name, value in node.value if isinstance(name, yaml.ScalarNode) and name.value == key)
    return next(found, None)


def _text(node: yaml.Node | None) -> str | None:
    import yaml

    return node.value.strip() if isinstance(node, yaml.ScalarNode) and node.value.strip() else None


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _not_yaml(exc: yaml.YAMLError, source: str) -> TraceError:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or exc
    return TraceError(source, f"not YAML: {problem}", line=mark.line + 1 if mark is not None else None)


def _listed(named: dict[str | None, Any]) -> str:
    return ", ".join(repr(name) for name in named) or "none"
