"""Reading an operator's Kueue YAML: the Kueue docs' own examples give the expected model, both API versions
read alike, Kueue's validation rules are refused in words naming file, line, document and field, and what the
model leaves out is said in ``not_modeled``.

Examples are cut from kueue.sigs.k8s.io concept pages (cited per test); GPU quotas use ``nvidia.com/gpu``
where a page's example uses a generic ``gpu``.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from simcluster.errors import TraceError
from simcluster.tiers.kueue_yaml import parse_kueue, parse_quantity, read_kueue
from simcluster.tiers.model import (
    CohortSpec,
    FairSharing,
    FlavorQuota,
    FlavorSpec,
    LocalQueueSpec,
    Preemption,
)


def kueue(text: str, source: str = "kueue.yaml"):
    return parse_kueue(textwrap.dedent(text), source)


def refused(text: str, *fragments: str, source: str = "kueue.yaml") -> str:
    """The message of the refusal of ``text``, which must hold every fragment."""
    with pytest.raises(TraceError) as caught:
        kueue(text, source)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


def cluster_queue(spec: str, name: str = "team-a", version: str = "v1beta1") -> str:
    return f"apiVersion: kueue.x-k8s.io/{version}\nkind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n" + \
        textwrap.indent(textwrap.dedent(spec), "  ")


GPU_QUEUE = textwrap.dedent("""
    cohort: org
    resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors:
      - name: h100
        resources:
        - {name: nvidia.com/gpu, nominalQuota: 8}
""").lstrip()


# --- the Kueue docs' examples --------------------------------------------------------------------------------


def test_the_cluster_queue_page_resource_groups_example_gives_gpu_quota_per_flavor_in_order():
    """kueue.sigs.k8s.io/docs/concepts/cluster_queue/#resource-groups: cpu/memory/pods in one group, GPUs in
    another; two GPU flavors, each with 10."""
    config = kueue("""
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: ClusterQueue
        metadata:
          name: "cluster-queue"
        spec:
          namespaceSelector: {} # match all.
          resourceGroups:
          - coveredResources: ["cpu", "memory", "pods"]
            flavors:
            - name: "spot"
              resources:
              - {name: "cpu", nominalQuota: 9}
              - {name: "memory", nominalQuota: 36Gi}
              - {name: "pods", nominalQuota: 50}
          - coveredResources: ["nvidia.com/gpu"]
            flavors:
            - name: "vendor1"
              resources:
              - {name: "nvidia.com/gpu", nominalQuota: 10}
            - name: "vendor2"
              resources:
              - {name: "nvidia.com/gpu", nominalQuota: 10}
    """)
    queue = config.cluster_queues["cluster-queue"]
    assert queue.quotas == (FlavorQuota("vendor1", 10), FlavorQuota("vendor2", 10))
    assert queue.cohort is None and queue.queueing_strategy == "BestEffortFIFO" and queue.fair_weight == 1.0
    assert list(config.flavors) == ["spot", "vendor1", "vendor2"]  # no ResourceFlavor given: known by name
    assert config.not_modeled == ("cpu, memory, pods quotas in 1 ClusterQueue (cluster-queue)",)


def test_the_cluster_queue_page_borrowing_limit_example_reads_the_limit_and_the_cohort():
    """kueue.sigs.k8s.io/docs/concepts/cluster_queue/#borrowinglimit: team-a-cq borrows at most 1 in team-ab."""
    config = kueue(cluster_queue("""
        cohort: "team-ab"
        resourceGroups:
        - coveredResources: ["nvidia.com/gpu"]
          flavors:
          - name: "default-flavor"
            resources:
            - name: "nvidia.com/gpu"
              nominalQuota: 9
              borrowingLimit: 1
    """, name="team-a-cq"))
    queue = config.cluster_queues["team-a-cq"]
    assert queue.cohort == "team-ab" and queue.quota("default-flavor") == FlavorQuota("default-flavor", 9, 1)
    assert config.cohorts == {"team-ab": CohortSpec("team-ab")}  # named only: an implicit cohort


def test_the_cluster_queue_page_preemption_example_reads_the_policies():
    """kueue.sigs.k8s.io/docs/concepts/cluster_queue/#preemption."""
    config = kueue(cluster_queue("""
        preemption:
          reclaimWithinCohort: Any
          withinClusterQueue: LowerPriority
          borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}
        queueingStrategy: StrictFIFO
    """, name="team-a-cq"))
    queue = config.cluster_queues["team-a-cq"]
    assert queue.preemption == Preemption("LowerPriority", "Any", "LowerPriority", 100)
    assert queue.queueing_strategy == "StrictFIFO" and queue.quotas == ()


def test_the_cohort_page_hierarchy_example_reads_parents_and_weights():
    """kueue.sigs.k8s.io/docs/concepts/cohort/#hierarchical-cohorts: root-cohort with two children weighted
    0.75 and 0.25, and a Cohort's own quota (#configuring-quotas)."""
    config = kueue("""
        apiVersion: kueue.x-k8s.io/v1alpha1
        kind: Cohort
        metadata: {name: "root-cohort"}
        spec:
          resourceGroups:
          - coveredResources: ["nvidia.com/gpu"]
            flavors:
            - name: "default-flavor"
              resources: [{name: "nvidia.com/gpu", nominalQuota: 12}]
        ---
        apiVersion: kueue.x-k8s.io/v1alpha1
        kind: Cohort
        metadata: {name: "important-org"}
        spec: {parent: "root-cohort", fairSharing: {weight: "0.75"}}
        ---
        apiVersion: kueue.x-k8s.io/v1alpha1
        kind: Cohort
        metadata: {name: "regular-org"}
        spec: {parent: "root-cohort", fairSharing: {weight: "0.25"}}
    """)
    assert config.cohorts["root-cohort"] == CohortSpec("root-cohort", None, (FlavorQuota("default-flavor", 12),))
    assert config.cohorts["important-org"] == CohortSpec("important-org", "root-cohort", (), 0.75)
    assert config.cohorts["regular-org"].fair_weight == 0.25 and config.cluster_queues == {}


def test_the_local_queue_page_example_keys_the_queue_by_namespace():
    """kueue.sigs.k8s.io/docs/concepts/local_queue/: team-a-queue in team-a points at cluster-queue."""
    config = kueue(cluster_queue(GPU_QUEUE, name="cluster-queue") + """
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  namespace: team-a
  name: team-a-queue
spec:
  clusterQueue: cluster-queue
""")
    assert config.local_queues == {"team-a/team-a-queue": LocalQueueSpec("team-a-queue", "team-a", "cluster-queue")}
    assert config.cluster_queue_of("team-a-queue") == "cluster-queue"


def test_the_resource_flavor_page_example_reads_labels_and_notes_taints():
    """kueue.sigs.k8s.io/docs/concepts/resource_flavor/: "spot" with node labels and a taint."""
    config = kueue("""
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: ResourceFlavor
        metadata:
          name: "spot"
        spec:
          nodeLabels:
            instance-type: spot
          nodeTaints:
          - effect: NoSchedule
            key: spot
            value: "true"
          tolerations:
          - key: "spot-taint"
            operator: "Exists"
            effect: "NoSchedule"
    """)
    assert config.flavors["spot"] == FlavorSpec("spot", {"instance-type": "spot"})
    assert config.not_modeled == ("nodeTaints in 1 ResourceFlavor (spot)", "tolerations in 1 ResourceFlavor (spot)")


def test_the_workload_priority_class_page_example_and_a_kubernetes_priority_class_share_the_map():
    """kueue.sigs.k8s.io/docs/concepts/workload_priority_class/: sample-priority with value 10000."""
    config = kueue("""
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: WorkloadPriorityClass
        metadata:
          name: sample-priority
        value: 10000
        description: "Sample priority"
        ---
        apiVersion: scheduling.k8s.io/v1
        kind: PriorityClass
        metadata: {name: high}
        value: 1000000
        globalDefault: false
    """)
    assert config.priority_classes == {"sample-priority": 10000, "high": 1000000}


def test_a_topology_gives_its_level_labels_and_a_flavor_names_it():
    """kueue.sigs.k8s.io/docs/concepts/topology_aware_scheduling/: a Topology and a TAS flavor."""
    config = kueue("""
        apiVersion: kueue.x-k8s.io/v1alpha1
        kind: Topology
        metadata: {name: "default"}
        spec:
          levels:
          - nodeLabel: "cloud.provider.com/topology-block"
          - nodeLabel: "kubernetes.io/hostname"
        ---
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: ResourceFlavor
        metadata: {name: "tas-flavor"}
        spec: {nodeLabels: {"cloud.provider.com/node-group": "tas-node-group"}, topologyName: "default"}
    """)
    assert config.topologies == {"default": ("cloud.provider.com/topology-block", "kubernetes.io/hostname")}
    assert config.flavors["tas-flavor"].topology_name == "default"


# --- versions, lists, files ----------------------------------------------------------------------------------


def test_v1beta1_and_v1beta2_spellings_give_the_same_model():
    """Kueue's v1beta2 API renamed ClusterQueue spec.cohort to spec.cohortName and Cohort spec.parent to
    spec.parentName (apis/kueue/v1beta2/clusterqueue_types.go, cohort_types.go)."""
    def both(version: str, cohort: str, parent: str):
        return kueue(cluster_queue(GPU_QUEUE.replace("cohort:", f"{cohort}:"), version=version) + f"""
---
apiVersion: kueue.x-k8s.io/{version}
kind: Cohort
metadata: {{name: org}}
spec: {{{parent}: root}}
""")
    old, new = both("v1beta1", "cohort", "parent"), both("v1beta2", "cohortName", "parentName")
    assert old == new
    assert new.cluster_queues["team-a"].cohort == "org" and new.cohorts["org"].parent == "root"
    assert new.cohorts["root"] == CohortSpec("root")  # a parent named only: Kueue's default cohort


def test_the_other_versions_spelling_is_refused_with_the_right_one():
    refused(cluster_queue("cohort: org\n", version="v1beta2"), "field 'spec.cohort'", "spec.cohortName")
    refused(cluster_queue("cohortName: org\n"), "field 'spec.cohortName'", "v1beta1 names this field spec.cohort")


def test_a_list_and_a_typed_cluster_queue_list_read_their_items():
    """kubectl get -o yaml writes kind List; typed lists (ClusterQueueList) may leave kind out of items."""
    listed = kueue("""
        apiVersion: v1
        kind: List
        items:
        - apiVersion: kueue.x-k8s.io/v1beta1
          kind: ResourceFlavor
          metadata: {name: h100}
        - apiVersion: kueue.x-k8s.io/v1beta1
          kind: ResourceFlavor
          metadata: {name: a100}
    """)
    assert list(listed.flavors) == ["h100", "a100"]
    typed = kueue("""
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: ClusterQueueList
        items:
        - metadata: {name: a}
        - metadata: {name: b}
          spec: {cohort: org}
    """)
    assert list(typed.cluster_queues) == ["a", "b"] and typed.cluster_queues["b"].cohort == "org"


def test_an_error_in_a_list_item_names_the_document_and_the_item():
    refused("""
        apiVersion: v1
        kind: List
        items:
        - apiVersion: kueue.x-k8s.io/v1beta1
          kind: ResourceFlavor
          metadata: {name: ok}
        - apiVersion: kueue.x-k8s.io/v1beta1
          kind: ResourceFlavor
          metadata: {name: ""}
    """, "kueue.yaml, line 10, field 'metadata.name': document 1, item 2 (ResourceFlavor)", "missing or empty")


def test_json_as_kubectl_writes_it_is_read():
    document = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "a"},
         "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
             {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "16"}]}]}]}}]}
    config = parse_kueue(json.dumps(document, indent=4), "cq.json")
    assert config.cluster_queues["a"].quotas == (FlavorQuota("h100", 16),)


def test_a_directory_is_read_sorted_with_references_across_files(tmp_path):
    (tmp_path / "b-queues.yaml").write_text(cluster_queue(GPU_QUEUE))
    (tmp_path / "a-flavors.yml").write_text("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\n"
                                            "metadata: {name: h100}\n")
    (tmp_path / "c-local.json").write_text(json.dumps({
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
        "metadata": {"name": "q", "namespace": "ml"}, "spec": {"clusterQueue": "team-a"}}))
    (tmp_path / "notes.txt").write_text("not read")
    config = read_kueue(tmp_path)
    assert [name.rsplit("/", 1)[-1] for name in config.sources] == ["a-flavors.yml", "b-queues.yaml", "c-local.json"]
    assert config.cluster_queue_of("ml/q") == "team-a" and list(config.flavors) == ["h100"]


def test_a_name_defined_in_two_files_is_refused_naming_both(tmp_path):
    first, second = tmp_path / "one.yaml", tmp_path / "two.yaml"
    first.write_text(cluster_queue(GPU_QUEUE))
    second.write_text(cluster_queue(GPU_QUEUE))
    with pytest.raises(TraceError) as caught:
        read_kueue([first, second])
    message = str(caught.value)
    assert message.startswith(f"{second}, line 3, field 'metadata.name': document 1 (ClusterQueue team-a)")
    assert f"ClusterQueue 'team-a' is defined twice; first in {first}, document 1" in message


def test_missing_paths_and_empty_folders_are_refused(tmp_path):
    with pytest.raises(TraceError, match="no such file or folder"):
        read_kueue(tmp_path / "absent.yaml")
    with pytest.raises(TraceError, match="holds no"):
        read_kueue(tmp_path)


def test_a_configuration_document_sets_fair_sharing():
    """kueue.sigs.k8s.io/docs/concepts/preemption/#fair-sharing: fairSharing.enable and preemptionStrategies in
    Kueue's Configuration (v1beta1)."""
    config = kueue("""
        apiVersion: config.kueue.x-k8s.io/v1beta1
        kind: Configuration
        fairSharing:
          enable: true
          preemptionStrategies: [LessThanOrEqualToFinalShare]
        waitForPodsReady: {enable: true}
    """)
    assert config.fair_sharing == FairSharing(True, ("LessThanOrEqualToFinalShare",))
    assert config.not_modeled == ()  # the controller's own settings are not notes
    off = kueue("apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nnamespace: kueue-system\n")
    assert off.fair_sharing == FairSharing(False)


def test_a_v1beta2_configuration_turns_fair_sharing_on_by_its_section():
    config = kueue("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
                   "fairSharing: {preemptionStrategies: [LessThanInitialShare]}\n")
    assert config.fair_sharing == FairSharing(True, ("LessThanInitialShare",))


def test_a_configuration_inside_kueues_config_map_is_read():
    """Kueue's manifests ship the Configuration as controller_manager_config.yaml in kueue-manager-config."""
    config = kueue("""
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: kueue-manager-config, namespace: kueue-system}
        data:
          controller_manager_config.yaml: |
            apiVersion: config.kueue.x-k8s.io/v1beta1
            kind: Configuration
            fairSharing:
              enable: true
            admissionFairSharing:
              usageHalfLifeTime: 168h
    """)
    assert config.fair_sharing == FairSharing(True)
    note = ("admissionFairSharing in 1 Kueue Configuration (kueue.yaml (document 1 (ConfigMap "
            "kueue-manager-config), data controller_manager_config.yaml))")
    assert config.not_modeled == (note,)


def test_a_bad_configuration_value_is_refused_and_two_configurations_are_one_too_many():
    refused("apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
            "fairSharing: {preemptionStrategies: [Sometimes]}\n",
            "field 'fairSharing.preemptionStrategies[0]'", "'Sometimes' is not one of LessThanOrEqualToFinalShare")
    one = "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
    refused(one + "---\n" + one, "document 2 (Configuration): a second Kueue Configuration")


# --- quantities ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    (8, 8.0), ("8", 8.0), ("1k", 1000.0), ("1Ki", 1024.0), ("500m", 0.5), (1.5, 1.5), ("2e3", 2000.0),
    ("2E3", 2000.0), ("1.", 1.0), (".5", 0.5), ("+4", 4.0), ("-4", -4.0), ("1E", 1e18), ("3Gi", 3 * 2**30),
    ("100n", 1e-7), ("1e-3", 0.001), (" 7 ", 7.0),
])
def test_kubernetes_quantities_are_read_as_kubernetes_reads_them(value, expected):
    """k8s.io/apimachinery pkg/api/resource/quantity.go: <signedNumber><suffix>, suffix binarySI, decimalSI or
    a decimal exponent."""
    assert parse_quantity(value) == pytest.approx(expected)


@pytest.mark.parametrize("value", [
    "8 GPUs", "--1", "1kb", "NaN", "inf", ".inf", "", "1K", "1e", ".", "0x10", "1.5.2", True, None, [8],
    float("inf"), float("nan"), "1e400",
])
def test_what_is_not_a_quantity_is_refused(value):
    with pytest.raises(ValueError, match="nominalQuota must be"):
        parse_quantity(value, "nominalQuota")


def test_a_bad_quota_is_refused_with_file_line_document_and_field():
    spec = GPU_QUEUE.replace("nominalQuota: 8", "nominalQuota: 8 GPUs")
    text = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: h100}\n---\n"
    refused(text + cluster_queue(spec), "kueue.yaml, line 15, field 'spec.resourceGroups[0].flavors[0]"
            ".resources[0].nominalQuota': document 2 (ClusterQueue team-a): nominalQuota must be a Kubernetes "
            "quantity", "'8 GPUs'")


def test_a_yaml_infinity_or_a_bool_quota_is_refused():
    refused(cluster_queue(GPU_QUEUE.replace("nominalQuota: 8", "nominalQuota: .inf")), "finite number")
    refused(cluster_queue(GPU_QUEUE.replace("nominalQuota: 8", "nominalQuota: true")), "got true")


def test_an_absurd_gpu_quota_is_refused_but_a_large_memory_quota_is_not():
    refused(cluster_queue(GPU_QUEUE.replace("nominalQuota: 8", "nominalQuota: 2Gi")), "is absurd")
    config = kueue(cluster_queue("""
        resourceGroups:
        - coveredResources: [memory]
          flavors: [{name: f, resources: [{name: memory, nominalQuota: 2Ti}]}]
    """))
    assert config.cluster_queues["team-a"].quotas == ()


# --- Kueue's rules, refused ----------------------------------------------------------------------------------


def test_limits_without_a_cohort_are_refused():
    """Kueue: "borrowingLimit must be nil when cohort is empty"; the same holds for lendingLimit."""
    no_cohort = GPU_QUEUE.replace("cohort: org\n", "")
    refused(cluster_queue(no_cohort.replace("nominalQuota: 8", "nominalQuota: 8, borrowingLimit: 2")),
            "field 'spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit'", "borrowingLimit needs spec.cohort")
    refused(cluster_queue(no_cohort.replace("nominalQuota: 8", "nominalQuota: 8, lendingLimit: 2"),
                          version="v1beta2"), "lendingLimit needs spec.cohortName")


def test_a_cohort_limit_needs_a_parent():
    refused("""
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: Cohort
        metadata: {name: root}
        spec:
          resourceGroups:
          - coveredResources: [nvidia.com/gpu]
            flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 4, lendingLimit: 1}]}]
    """, "document 1 (Cohort root)", "lendingLimit needs spec.parent")


def test_lending_more_than_the_nominal_quota_is_refused():
    refused(cluster_queue(GPU_QUEUE.replace("nominalQuota: 8", "nominalQuota: 8, lendingLimit: 9")),
            "field 'spec.resourceGroups[0].flavors[0].resources[0].lendingLimit'", "lendingLimit 9 is more than "
            "nominalQuota 8")


def test_a_negative_quota_is_refused():
    refused(cluster_queue(GPU_QUEUE.replace("nominalQuota: 8", "nominalQuota: '-1'")), "must not be negative")


def test_a_flavor_named_twice_and_a_resource_in_two_groups_are_refused():
    refused(cluster_queue("""
        resourceGroups:
        - coveredResources: [nvidia.com/gpu]
          flavors:
          - {name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 1}]}
          - {name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 2}]}
    """), "field 'spec.resourceGroups[0].flavors[1].name'", "flavor 'h100' is listed twice")
    refused(cluster_queue("""
        resourceGroups:
        - coveredResources: [nvidia.com/gpu]
          flavors: [{name: a, resources: [{name: nvidia.com/gpu, nominalQuota: 1}]}]
        - coveredResources: [nvidia.com/gpu]
          flavors: [{name: b, resources: [{name: nvidia.com/gpu, nominalQuota: 1}]}]
    """), "field 'spec.resourceGroups[1].coveredResources[0]'", "in two resource groups (0 and 1)")


def test_a_flavor_must_give_exactly_its_groups_covered_resources():
    refused(cluster_queue("""
        resourceGroups:
        - coveredResources: [cpu, nvidia.com/gpu]
          flavors: [{name: a, resources: [{name: nvidia.com/gpu, nominalQuota: 1}]}]
    """), "field 'spec.resourceGroups[0].flavors[0].resources'", "it lacks cpu")


def test_enum_values_outside_kueues_are_refused():
    refused(cluster_queue("queueingStrategy: FIFO\n"), "field 'spec.queueingStrategy'",
            "'FIFO' is not one of BestEffortFIFO, StrictFIFO")
    refused(cluster_queue("preemption: {withinClusterQueue: Always}\n"), "field 'spec.preemption.withinClusterQueue'")
    refused(cluster_queue("preemption: {borrowWithinCohort: {policy: LowerPriority}}\n"),
            "field 'spec.preemption.borrowWithinCohort.policy'", "needs reclaimWithinCohort other than Never")


def test_a_negative_fair_sharing_weight_is_refused_and_a_quantity_weight_is_read():
    refused(cluster_queue("fairSharing: {weight: '-1'}\n"), "field 'spec.fairSharing.weight'", "must be 0 or more")
    assert kueue(cluster_queue("fairSharing: {weight: 1500m}\n")).cluster_queues["team-a"].fair_weight == 1.5


def test_a_missing_name_and_a_list_where_a_map_belongs_are_refused():
    refused("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {}\n",
            "field 'metadata.name': document 1 (ClusterQueue): metadata.name is missing or empty")
    refused(cluster_queue("- resourceGroups\n"), "line 5, field 'spec'", "expected a map (key: value), got a list")


def test_an_unknown_api_version_and_a_foreign_kind_are_refused():
    refused("apiVersion: kueue.x-k8s.io/v9\nkind: ClusterQueue\nmetadata: {name: a}\n",
            "field 'apiVersion'", "kueue.x-k8s.io/v9 ClusterQueue is unknown here")
    refused("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
            "field 'kind': document 1 (Deployment web): not a Kueue object (apps/v1 Deployment)")


def test_text_that_is_not_yaml_is_refused_with_its_line():
    refused("kind: [unclosed\n", "kueue.yaml, line 2", "not YAML or JSON")


# --- references ----------------------------------------------------------------------------------------------


def test_a_cluster_queue_naming_an_absent_flavor_is_refused_once_flavors_are_given():
    flavor = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: a100}\n---\n"
    refused(flavor + cluster_queue(GPU_QUEUE), "field 'spec.resourceGroups[0].flavors[0].name': document 2 "
            "(ClusterQueue team-a): no ResourceFlavor named 'h100' among the files (there are: a100)")


def test_a_local_queue_naming_an_absent_cluster_queue_is_refused():
    refused("apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: q}\n"
            "spec: {clusterQueue: nowhere}\n", "field 'spec.clusterQueue': document 1 (LocalQueue q): no "
            "ClusterQueue named 'nowhere'")


def test_a_flavor_naming_an_absent_topology_is_refused_when_topologies_are_given():
    text = """
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: Topology
        metadata: {name: default}
        spec: {levels: [{nodeLabel: rack}]}
        ---
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: ResourceFlavor
        metadata: {name: tas}
        spec: {nodeLabels: {pool: a}, topologyName: other}
    """
    refused(text, "field 'spec.topologyName': document 2 (ResourceFlavor tas): no Topology named 'other'")


def test_a_cycle_of_cohort_parents_is_refused_naming_the_cycle():
    """Kueue's Cohort API: "If a cycle is created, we disable all members of the Cohort"."""
    text = "\n---\n".join(f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata: {{name: {a}}}\n"
                          f"spec: {{parent: {b}}}" for a, b in (("a", "b"), ("b", "c"), ("c", "a")))
    refused(text, "field 'spec.parent': document 1 (Cohort a): cohort parents form a cycle: a → b → c → a")


# --- what is left out ----------------------------------------------------------------------------------------


def test_what_the_model_leaves_out_is_noted_once_per_kind_of_thing_with_counts():
    queues = "\n---\n".join(cluster_queue(f"""
        namespaceSelector: {{matchLabels: {{team: {name}}}}}
        admissionChecks: [prov]
        stopPolicy: Hold
        flavorFungibility: {{whenCanBorrow: TryNextFlavor}}
        resourceGroups:
        - coveredResources: [cpu, memory]
          flavors: [{{name: f, resources: [{{name: cpu, nominalQuota: 1}}, {{name: memory, nominalQuota: 1Gi}}]}}]
    """, name=name) for name in ("a", "b", "c", "d"))
    others = """
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: AdmissionCheck
metadata: {name: prov}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: AdmissionCheck
metadata: {name: multikueue}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: job-1}
"""
    assert kueue(queues + others).not_modeled == (
        "cpu, memory quotas in 4 ClusterQueues (a, b, c and 1 more)",
        "namespaceSelector in 4 ClusterQueues (a, b, c and 1 more)",
        "admission checks in 4 ClusterQueues (a, b, c and 1 more)",
        "stopPolicy Hold in 4 ClusterQueues (a, b, c and 1 more)",
        "flavorFungibility in 4 ClusterQueues (a, b, c and 1 more)",
        "2 AdmissionCheck objects (prov, multikueue)",
        "1 Workload object (job-1)",
    )


def test_kueues_defaults_as_kubectl_writes_them_are_not_noted():
    defaults = textwrap.dedent("""
        namespaceSelector: {}
        stopPolicy: None
        flavorFungibility: {whenCanBorrow: MayStopSearch, whenCanPreempt: TryNextFlavor}
        preemption: {borrowWithinCohort: {policy: Never}, reclaimWithinCohort: Never, withinClusterQueue: Never}
    """)
    config = kueue(cluster_queue(GPU_QUEUE.replace("cohort:", "cohortName:") + defaults, version="v1beta2"))
    assert config.not_modeled == ()


def test_an_unknown_spec_field_is_noted_not_dropped():
    config = kueue(cluster_queue(GPU_QUEUE + "cohrt: typo\n"))
    assert config.not_modeled == ("unknown field(s) spec.cohrt in 1 ClusterQueue (team-a)",)


def test_a_local_queue_stop_policy_is_noted():
    config = kueue(cluster_queue(GPU_QUEUE) + "\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
                   "metadata: {name: q, namespace: ml}\nspec: {clusterQueue: team-a, stopPolicy: HoldAndDrain}\n")
    assert config.not_modeled == ("stopPolicy HoldAndDrain in 1 LocalQueue (ml/q)",)


def test_a_file_with_no_kueue_object_is_refused():
    refused("---\n", "holds no Kueue object")
