"""The conformance kit finds each broken rule, in words, and every built-in policy keeps them all."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.policies import POLICIES
from simcluster.testing import RULES, PolicyCheckFailed, check_policy, policy_problems
from tests.plugins.broken_policies import BROKEN, FirstNodePlacement

runner = CliRunner()
BROKEN_FILE = "tests/plugins/broken_policies.py"


@pytest.mark.parametrize(("policy", "rule"), list(BROKEN.items()), ids=[cls.__name__ for cls in BROKEN])
def test_the_kit_names_the_rule_a_broken_policy_breaks(policy, rule):
    report = policy_problems(policy)
    assert rule in report.broken(), str(report)
    finding = next(f for f in report.findings if f.rule == rule)
    assert RULES[rule] in str(finding) and "t=" in finding.message + "t=" and finding.trace


def test_a_placement_that_takes_busy_gpus_is_caught():
    report = policy_problems("fifo", config=SimConfig(placement=FirstNodePlacement))
    assert "more-gpus-than-free" in report.broken()
    assert "placement FirstNodePlacement placed job" in report.findings[0].message


@pytest.mark.parametrize("name", POLICIES.names())
def test_every_built_in_policy_keeps_every_rule(name):
    assert check_policy(name).ok


def test_check_policy_raises_an_assertion_listing_the_broken_rules():
    with pytest.raises(PolicyCheckFailed, match=r"StartsTwice breaks 1 rule\(s\):\n  - \[start-not-pending\]"):
        check_policy(BROKEN_FILE + ":StartsTwice")


def test_the_command_exits_1_with_the_broken_rules_and_0_when_all_are_kept():
    broken = runner.invoke(app, ["check-policy", BROKEN_FILE + ":SpinsInPlace", "--json"])
    assert broken.exit_code == 1
    report = json.loads(broken.stdout)
    assert report["ok"] is False and report["rules"]["no-progress"] is False and report["rules"]["exception"]
    kept = runner.invoke(app, ["check-policy", "sjf"])
    assert kept.exit_code == 0 and "keeps every rule" in kept.stdout
    missing = runner.invoke(app, ["check-policy", "no/such/file.py"])
    assert missing.exit_code == 2 and "no such file" in missing.stderr
