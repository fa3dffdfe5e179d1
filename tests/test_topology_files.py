"""Cluster topologies (issue 52): the model of nodes and the domains above them, and the files it is read from
(CSV tables, Slurm's topology.conf, Kubernetes node lists with a Kueue Topology)."""

from __future__ import annotations

import dataclasses
import json
import pickle
import textwrap
from pathlib import Path

import numpy as np
import pytest

from simcluster.errors import TraceError
from simcluster.paths import shared_data_dir
from simcluster.topology import (
    HostlistError,
    Topology,
    TopologyError,
    cluster_nodes,
    expand_hostlist,
    files,
    kueue_topology_levels,
    parse_csv_topology,
    parse_slurm_topology,
    read_topology,
    topology_format,
)

RACKS = """\
node,block,rack
n0,b0,r0
n1,b0,r0
n2,b0,r1
n3,b1,r0
n4,b1,r0
"""


@pytest.fixture
def racks() -> Topology:
    return parse_csv_topology(RACKS, "racks.csv")


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


# --- the model ---------------------------------------------------------------------------------------------


def test_lingjuns_topology_loads_as_it_is_847_nodes_1_dsw_3_psws_and_119_path_named_asws():
    path = shared_data_dir() / "topology" / "lingjun" / "topo.csv"
    if not path.is_file():
        pytest.skip(f"reference data not found at {path} (set SIMCLUSTER_DATA to the shared data folder)")
    topology = read_topology(path)
    assert topology.levels == ("DSW", "PSW", "ASW") and topology.all_levels[-1] == "node"
    assert topology.node_count == 847
    assert [len(topology.domains(level)) for level in topology.levels] == [1, 3, 119]
    assert sorted(topology.sizes("PSW").tolist()) == [179, 306, 362]
    asw = topology.sizes("ASW")
    assert (asw.min(), asw.max(), float(np.median(asw))) == (2, 8, 8.0)
    assert "G6/P10/S14" in topology.domains("ASW")
    assert len({name.rsplit("/", 1)[1] for name in topology.domains("ASW")}) < 119  # labels are reused


def test_an_asw_name_reused_under_two_psws_is_two_switches():
    topology = parse_csv_topology("ip,DSW,PSW,ASW\nh1,G6,P10,S14\nh2,G6,P12,S14\nh3,G6,P10,S14\n")
    assert topology.domains("ASW") == ["G6/P10/S14", "G6/P12/S14"]
    assert topology.spanned_level([0, 1]) == "PSW" and topology.spanned_level([0, 2]) == "node"


def test_levels_run_from_the_top_down_and_the_node_is_always_the_lowest(racks):
    assert racks.levels == ("block", "rack") and racks.all_levels == ("block", "rack", "node")
    assert [racks.level_index(level) for level in racks.all_levels] == [0, 1, 2]
    with pytest.raises(TopologyError, match="no level 'switch' in this topology; its levels are 'block', "
                                            "'rack', 'node'"):
        racks.level_index("switch")


def test_spanned_level_says_the_highest_level_a_set_of_nodes_spans(racks):
    assert racks.spanned_level([3, 0]) == "block"
    assert racks.spanned_level([0, 2]) == "rack"
    assert racks.spanned_level([0, 1]) == "node"
    assert racks.spanned_level([4]) is None and racks.spanned_level([4, 4]) is None


def test_a_domain_lists_its_nodes_and_its_children_one_level_down(racks):
    assert racks.domains("rack") == ["b0/r0", "b0/r1", "b1/r0"]
    assert racks.nodes_in("block", 0).tolist() == [0, 1, 2]
    assert racks.children("block", 0).tolist() == [0, 1]  # racks b0/r0 and b0/r1
    assert racks.children("rack", 2).tolist() == [3, 4]  # below the lowest named level: nodes
    assert racks.domain_of(4, "rack") == 2 and racks.domain_of(4, "node") == 4
    assert racks.domain_index("rack", "b1/r0") == 2 and racks.node_index("n3") == 3
    with pytest.raises(TopologyError, match="a node has no children"):
        racks.children("node", 0)


def test_a_topology_is_immutable_and_its_arrays_read_only(racks):
    with pytest.raises(dataclasses.FrozenInstanceError):
        racks.levels = ("rack",)  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        racks.domain_array("rack")[0] = 1
    with pytest.raises(ValueError, match="read-only"):
        racks.nodes_in("block", 0)[0] = 4
    copied = pickle.loads(pickle.dumps(racks))  # as a sweep's worker receives it
    assert copied.domains("rack") == racks.domains("rack") and not copied.domain_array("rack").flags.writeable


def test_a_subset_keeps_the_domains_that_hold_its_nodes_in_their_order(racks):
    part = racks.subset([4, 2])
    assert part.node_names == ("n4", "n2")
    assert part.domains("block") == ["b0", "b1"] and part.domains("rack") == ["b0/r1", "b1/r0"]
    assert part.domain_of(0, "block") == 1 and part.spanned_level([0, 1]) == "block"
    assert racks.reordered([4, 3, 2, 1, 0]).node_names == ("n4", "n3", "n2", "n1", "n0")
    with pytest.raises(TopologyError, match="each node once"):
        racks.subset([1, 1])
    with pytest.raises(TopologyError, match="all 5 nodes"):
        racks.reordered([0, 1])


def test_rows_match_the_clusters_nodes_by_name_else_by_order(racks):
    by_name, note = racks.for_cluster(["n3", "n0", "n1"])
    assert by_name.node_names == ("n3", "n0", "n1") and by_name.spanned_level([1, 2]) == "node"
    assert note == ("topology racks.csv: the cluster's 3 nodes matched by name (2 rows not in the cluster "
                    "left out)")
    cluster = [f"vc0/n{i}" for i in range(5)]
    by_order, note = racks.for_cluster(cluster)
    assert by_order.node_names == tuple(cluster) and by_order.domains("rack") == racks.domains("rack")
    assert "rows matched the cluster's 5 nodes by order" in note and "'vc0/n0'" in note
    with pytest.raises(TraceError, match="racks.csv: has 5 nodes but the cluster has 4"):
        racks.for_cluster(cluster[:4])


def test_a_topology_may_define_the_cluster_whose_nodes_are_its_rows(racks):
    nodes = cluster_nodes(racks)
    assert nodes == ["n0", "n1", "n2", "n3", "n4"]
    matched, note = racks.for_cluster(nodes)
    assert matched is racks and "matched by name" in note


# --- CSV tables --------------------------------------------------------------------------------------------

LONG = "x" * 1001
BAD_CSV = [
    pytest.param("node,block,rack\nn0,b0,r0\nn0,b0,r1\n", 3, "node",
                 "node 'n0' is listed twice (first on line 2)", id="duplicate-node"),
    pytest.param("node,block,rack\nn0,b0,r0\nn1,b0,\n", 3, "rack", "node 'n1' has no rack", id="blank-label"),
    pytest.param("node,block,rack\nn0,b0,r0\n\nn1,NaN,r0\n", 4, "block", "node 'n1' has no block",
                 id="nan-label"),
    pytest.param("node,rack,rack\nn0,r0,r0\n", 1, "rack", "column 'rack' is named twice (columns 2 and 3)",
                 id="level-named-twice"),
    pytest.param("node\nn0\nn1\n", 1, "node", "no level column", id="no-level-column"),
    pytest.param("node,block,rack\n", 2, "node", "has a header and no rows", id="header-only"),
    pytest.param(f"node,rack\nn0,r0\nn1,{LONG}\n", 3, "rack",
                 "rack label of 1,001 characters (at most 1,000)", id="long-label"),
    pytest.param(f"node,rack\n{LONG},r0\n", 2, "node", "name is 1,001 characters long", id="long-node-name"),
    pytest.param("node,rack\nn0,r0\nn1,a/b\n", 3, "rack", "holds a '/'", id="slash-in-label"),
    pytest.param("host,node\nn0,r0\n", 1, "node", "'node' is the level of the nodes themselves",
                 id="level-named-node"),
]


@pytest.mark.parametrize(("text", "line", "field", "problem"), BAD_CSV)
def test_a_bad_csv_is_refused_naming_file_line_and_field(tmp_path, text, line, field, problem):
    path = write(tmp_path, "topo.csv", text)
    with pytest.raises(TraceError) as caught:
        read_topology(path)
    assert f"topo.csv, line {line}, field '{field}': " in str(caught.value)
    assert problem in str(caught.value)


def test_a_row_of_the_wrong_width_is_refused_naming_its_line(tmp_path):
    with pytest.raises(TraceError, match=r"topo.csv, line 3: has 2 fields where the header has 3"):
        read_topology(write(tmp_path, "topo.csv", "node,block,rack\nn0,b0,r0\nn1,b0\n"))


def test_a_csv_of_absurdly_many_rows_is_refused_before_it_is_built(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_NODES", 3)
    text = "node,rack\n" + "".join(f"n{i},r0\n" for i in range(5))
    with pytest.raises(TraceError, match="topo.csv, line 5: has more than 3 rows"):
        read_topology(write(tmp_path, "topo.csv", text))


def test_label_keys_belong_to_a_kubernetes_node_list_only(tmp_path):
    with pytest.raises(TraceError, match="label_keys name the levels of a Kubernetes node list; this file "
                                         "reads as csv"):
        read_topology(write(tmp_path, "topo.csv", RACKS), label_keys=["rack"])


def test_a_131072_node_csv_loads_and_its_queries_are_array_slices(tmp_path):
    nodes = 131_072
    rows = "".join(f"vc0/n{i},b{i // 4096},r{i // 16 % 256},s{i // 4}\n" for i in range(nodes))
    topology = read_topology(write(tmp_path, "big.csv", "node,block,rack,nvlink\n" + rows))
    assert topology.node_count == nodes
    assert [len(topology.domains(level)) for level in topology.levels] == [32, 8192, 32768]
    members = topology.nodes_in("rack", 8191)
    assert members.tolist() == list(range(nodes - 16, nodes)) and members.base is not None  # a view, no walk
    assert topology.children("block", 31).size == 256 and topology.spanned_level([0, 4, 4096]) == "block"
    assert topology.domain_array("nvlink").dtype == np.intp and topology.sizes("nvlink").max() == 4


# --- Slurm's topology.conf ---------------------------------------------------------------------------------

TREE = """\
##################################################################
# Slurm's network topology configuration file for use with the
# topology/tree plugin
##################################################################
SwitchName=s0 Nodes=dev[0-5]
SwitchName=s1 Nodes=dev[6-11]
switchname=s2 nodes=dev[12-17] LinkSpeed=100   # keys in any case; link speed unused
SwitchName=s3 Switches=s[0-2]
"""


def test_slurms_tree_example_is_a_tree_of_two_switch_levels():
    topology = parse_slurm_topology(TREE)
    assert topology.levels == ("switch1", "switch2") and topology.node_count == 18
    assert topology.domains("switch1") == ["s3"]
    assert topology.domains("switch2") == ["s3/s0", "s3/s1", "s3/s2"]
    assert topology.node_names[:2] == ("dev0", "dev1") and topology.spanned_level([0, 17]) == "switch2"


def test_a_leaf_nearer_the_top_keeps_its_name_down_to_the_leaf_level_and_a_forest_has_several_tops():
    topology = parse_slurm_topology(
        "SwitchName=leaf1 Nodes=a[1-2]\n"
        "SwitchName=mid Switches=leaf1\n"
        "SwitchName=top Switches=mid,\\\n"  # a line ending in a backslash goes on in the next
        "leaf2\n"
        "SwitchName=leaf2 Nodes=b[1-2]\n"
        "SwitchName=other Nodes=c1\n")
    assert topology.levels == ("switch1", "switch2", "switch3")
    assert topology.domains("switch1") == ["top", "other"]
    assert topology.domains("switch3") == ["top/mid/leaf1", "top/leaf2", "other"]
    assert topology.spanned_level([2, 3]) == "node" and topology.spanned_level([0, 2]) == "switch2"


def test_slurms_block_example_keeps_its_block_sizes():
    topology = parse_slurm_topology("""
        BlockName=block1 Nodes=node[1-32]
        BlockName=block2 Nodes=node[33-64]
        BlockName=block3 Nodes=node[65-96]
        BlockName=block4 Nodes=node[97-128]
        BlockSizes=30,120
    """)
    assert topology.levels == ("block",) and topology.block_sizes == (30, 120)
    assert topology.domains("block") == ["block1", "block2", "block3", "block4"]
    assert topology.sizes("block").tolist() == [32] * 4


def test_without_block_sizes_slurms_default_doubles_the_first_block_up_to_all_blocks():
    topology = parse_slurm_topology("BlockName=b1 Nodes=n[01-18]\nBlockName=b2 Nodes=n[19-36]\n"
                                    "BlockName=b3 Nodes=n[37-54]\n")
    assert topology.node_names[0] == "n01" and topology.block_sizes == (18, 36, 72)


BAD_SLURM = [
    pytest.param("SwitchName=s0 Nodes=a1\nSwitchName=s0 Nodes=a2\n", 2, "SwitchName",
                 "switch 's0' is defined twice (first on line 1)", id="switch-twice"),
    pytest.param("SwitchName=s0 Nodes=a[1-2]\nSwitchName=s1 Nodes=a2\n", 2, "Nodes",
                 "node 'a2' is under switch 's0' (line 1) too", id="node-under-two-leaves"),
    pytest.param("SwitchName=s0 Nodes=a1\nSwitchName=s1 Switches=s0,s9\n", 2, "Switches",
                 "switch 's9' is not defined (no SwitchName=s9 line)", id="undefined-switch"),
    pytest.param("SwitchName=s0 Nodes=a1\nSwitchName=s1 Switches=s2\nSwitchName=s2 Switches=s1\n", 3,
                 "Switches", "the switches form a cycle (s1 → s2 → s1)", id="cycle"),
    pytest.param("SwitchName=s0 Nodes=a1\nSwitchName=s1 Switches=s0\nSwitchName=s2 Switches=s0\n", 3,
                 "Switches", "switch 's0' is already under switch 's1' (line 2)", id="two-parents"),
    pytest.param("SwitchName=s0 Nodes=a1\nBlockName=b0 Nodes=a2\n", 2, "BlockName", "mixes the tree form",
                 id="mixed-forms"),
    pytest.param("SwitchName=s0 Nodes=a1 Speed=3\n", 1, "Speed", "Speed= is not a key of a SwitchName= line",
                 id="unknown-key"),
    pytest.param("RingName=r0 Nodes=a[1-4]\n", 1, "RingName", "topology/ring", id="ring"),
    pytest.param("SwitchName=s0 Nodes=a[1-x]\n", 1, "Nodes", "'1-x' in 'a[1-x]' is not a number",
                 id="bad-hostlist"),
    pytest.param("BlockName=b0 Nodes=a[1-4]\nBlockSizes=4,12\n", 2, "BlockSizes",
                 "BlockSize 12 is not a larger power-of-two multiple of the base block size 4",
                 id="block-sizes"),
    pytest.param("BlockName=b0 Nodes=a[1-4]\nBlockName=b1 Nodes=a[5-6]\n", 2, "Nodes",
                 "block 'b1' has 2 nodes, fewer than the base block's 4", id="small-block"),
]


@pytest.mark.parametrize(("text", "line", "field", "problem"), BAD_SLURM)
def test_a_bad_topology_conf_is_refused_naming_file_line_and_key(tmp_path, text, line, field, problem):
    with pytest.raises(TraceError) as caught:
        read_topology(write(tmp_path, "topology.conf", text))
    assert f"topology.conf, line {line}, field '{field}': " in str(caught.value)
    assert problem in str(caught.value)


@pytest.mark.parametrize(("expression", "names"), [
    ("tux[0-3,7]", ["tux0", "tux1", "tux2", "tux3", "tux7"]),
    ("node[01-03]", ["node01", "node02", "node03"]),
    ("n[8-10]", ["n8", "n9", "n10"]),
    ("n[098-100]", ["n098", "n099", "n100"]),
    ("n1,n2,tux[5-6]", ["n1", "n2", "tux5", "tux6"]),
    ("a[1-2]b[3-4]", ["a1b3", "a1b4", "a2b3", "a2b4"]),
    ("gpu[1-2]-ib0 login", ["gpu1-ib0", "gpu2-ib0", "login"]),
    ("plain-name", ["plain-name"]),
])
def test_hostlists_expand_as_slurm_expands_them(expression, names):
    assert expand_hostlist(expression) == names


@pytest.mark.parametrize(("expression", "problem"), [
    ("n[3-1]", "runs backwards"),
    ("n[1-2", r"unbalanced '\['"),
    ("n[]", "is not a number or a range"),
    ("n[-1]", "is not a number or a range"),
])
def test_a_broken_hostlist_is_refused_quoting_it(expression, problem):
    with pytest.raises(HostlistError, match=problem):
        expand_hostlist(expression)


# --- Kubernetes and Kueue ----------------------------------------------------------------------------------

KUEUE = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata:
  name: default
spec:
  levels:
  - nodeLabel: cloud.provider.com/topology-block
  - nodeLabel: cloud.provider.com/topology-rack
  - nodeLabel: kubernetes.io/hostname
"""


def node(name: str, block: str, rack: str) -> dict:
    labels = {"cloud.provider.com/topology-block": block, "cloud.provider.com/topology-rack": rack,
              "kubernetes.io/hostname": name}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def node_list(*nodes: dict) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(nodes)})


def test_a_kubernetes_node_list_takes_its_levels_from_a_kueue_topology(tmp_path):
    keys = kueue_topology_levels(write(tmp_path, "topology.yaml", KUEUE))
    assert keys[-1] == "kubernetes.io/hostname"
    nodes = write(tmp_path, "nodes.json", node_list(node("n0", "b0", "r0"), node("n1", "b0", "r1"),
                                                    node("n2", "b1", "r0")))
    topology = read_topology(nodes, label_keys=keys)
    assert topology.levels == ("cloud.provider.com/topology-block", "cloud.provider.com/topology-rack")
    assert topology.node_names == ("n0", "n1", "n2")
    assert topology.domains("cloud.provider.com/topology-rack") == ["b0/r0", "b0/r1", "b1/r0"]
    assert topology.spanned_level([0, 2]) == "cloud.provider.com/topology-block"


def test_a_kueue_list_of_topologies_is_read_by_name_and_its_version_checked(tmp_path):
    listed = """\
        apiVersion: v1
        kind: List
        items:
        - apiVersion: kueue.x-k8s.io/v1alpha1
          kind: Topology
          metadata: {name: racks}
          spec: {levels: [{nodeLabel: rack}]}
        - apiVersion: kueue.x-k8s.io/v1beta2
          kind: Topology
          metadata: {name: default}
          spec: {levels: [{nodeLabel: block}, {nodeLabel: rack}]}
    """
    path = write(tmp_path, "list.yaml", listed)
    assert kueue_topology_levels(path, name="default") == ["block", "rack"]
    with pytest.raises(TraceError, match="holds 2 Kueue Topology objects \\('racks', 'default'\\): name one"):
        kueue_topology_levels(path)
    with pytest.raises(TraceError, match="v9.yaml, line 1, field 'apiVersion': Kueue API version 'v9' "
                                         "unknown"):
        kueue_topology_levels(write(tmp_path, "v9.yaml", KUEUE.replace("v1beta1", "v9")))


BAD_KUBERNETES = [
    pytest.param(node_list(node("n0", "b0", "r0"), {"metadata": {"name": "n1", "labels": {}}}),
                 "field 'cloud.provider.com/topology-block': node 'n1' (item 1) has no label",
                 id="missing-label"),
    pytest.param(json.dumps({"kind": "PodList", "pods": []}), "not a Kubernetes node list",
                 id="not-a-node-list"),
    pytest.param(node_list({"kind": "Pod", "metadata": {"name": "p"}}), "item 0 is a Pod, not a Node",
                 id="not-a-node"),
    pytest.param(node_list(node("n0", "b0", "r0"), node("n0", "b0", "r0")),
                 "field 'metadata.name': node 'n0' is listed twice (items 0 and 1)", id="duplicate-node"),
    pytest.param('{"items": [', "line 1: not JSON", id="broken-json"),
]


@pytest.mark.parametrize(("text", "problem"), BAD_KUBERNETES)
def test_a_bad_node_list_is_refused_naming_the_node_and_label(tmp_path, text, problem):
    with pytest.raises(TraceError) as caught:
        read_topology(write(tmp_path, "nodes.json", text), label_keys=kueue_topology_levels(
            write(tmp_path, "topology.yaml", KUEUE)))
    assert str(caught.value).startswith(str(tmp_path / "nodes.json")) and problem in str(caught.value)


@pytest.mark.parametrize(("keys", "problem"), [
    (None, "a node list needs label_keys"),
    (["kubernetes.io/hostname", "rack"], "kubernetes.io/hostname can only be the lowest level"),
    (["kubernetes.io/hostname"], "label_keys name no level above the node"),
])
def test_a_node_list_needs_label_keys_with_the_hostname_at_the_bottom(tmp_path, keys, problem):
    with pytest.raises(TraceError, match=problem):
        read_topology(write(tmp_path, "nodes.json", node_list(node("n0", "b0", "r0"))), label_keys=keys)


def test_a_kueue_file_without_a_topology_or_with_a_misplaced_hostname_is_refused(tmp_path):
    with pytest.raises(TraceError, match="no Kueue Topology object"):
        kueue_topology_levels(write(tmp_path, "flavor.yaml", "apiVersion: kueue.x-k8s.io/v1beta1\n"
                                                             "kind: ResourceFlavor\n"))
    reordered = KUEUE.replace("kubernetes.io/hostname", "X").replace("cloud.provider.com/topology-block",
                                                                      "kubernetes.io/hostname")
    misplaced = r"line 7, field 'spec.levels\[0\].nodeLabel': kubernetes.io/hostname can only be the lowest"
    with pytest.raises(TraceError, match=misplaced):
        kueue_topology_levels(write(tmp_path, "bad.yaml", reordered))


def test_a_file_is_known_by_its_content_before_its_suffix():
    assert topology_format("nodes.txt", b'{"items": []}') == "kubernetes"
    assert topology_format("topo.csv", b"SwitchName=s0 Nodes=a1\n") == "slurm"
    assert topology_format("nodes.yaml", b"apiVersion: v1\nkind: List\n") == "kubernetes"
    assert topology_format("topology.conf", b"# nothing yet\n") == "slurm"
    assert topology_format("topo.txt", b"node,rack\nn0,r0\n") == "csv"
