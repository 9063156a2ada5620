"""The no-op re-run benchmark's reading of Ansible's json callback and its summary. The recap is
read from a real ansible-playbook run; the benchmark itself runs against the lab (scripts/bench)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from arcops.devtools import noopbench
from arcops.devtools.noopbench import BenchError, Run, curve, recap, summary
from hypothesis import given
from hypothesis import strategies as st

from .conftest import REPO
from .helpers.ansible_run import ANSIBLE, needs_ansible
from .helpers.bench_cli import refusal
from .helpers.fuzz import FUZZ

PLAYBOOK = """\
- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.command: "true"
      changed_when: true
    - ansible.builtin.command: "true"
      changed_when: false
"""


def two_local_hosts(tmp_path) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of a real ansible-playbook run of PLAYBOOK on two local hosts."""
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json")
    argv = [ANSIBLE + "-playbook", "-i", "a,b,", "-c", "local", str(tmp_path / "play.yml")]
    return [*argv, "-e", f"ansible_python_interpreter={sys.executable}"], env


@needs_ansible
def test_recap_reads_a_real_playbook_runs_json_output(tmp_path):
    argv, env = two_local_hosts(tmp_path)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    run = recap(done.stdout, "playbook", 1.234)
    assert run == Run("playbook", 1.23, changed=2, failed=0, unreachable=0, hosts=2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no per-host stats"),
        ("not json at all", "no per-host stats"),
        ('{"plays": [], "stats": {}}', "no per-host stats"),
        ('{"stats": {"a": {"changed": ', "does not parse"),
        ('{"stats": {"a": []}}', "stats of 'a' are not a mapping"),
        ('{"stats": {"a": {"changed": -1}}}', "bad 'changed': -1"),
        ('{"stats": {"a": {"failures": true}}}', "bad 'failures': True"),
        ('{"stats": {"a": {"unreachable": "0"}}}', "bad 'unreachable': '0'"),
    ],
)
def test_recap_refuses_output_that_is_not_a_recap(text, message):
    with pytest.raises(BenchError, match=message):
        recap(text, "playbook", 1.0)


def test_summary_reports_medians_ratio_and_targets():
    runs = [Run("playbook", s, 0, 0, 0, 2) for s in (7.0, 30.0, 7.5)]
    runs += [Run("ping", s, 0, 0, 0, 2) for s in (2.0, 2.5, 3.0)]
    s = summary(runs)
    assert (s["playbook_median_s"], s["ping_median_s"], s["ratio"], s["changed"]) == (7.5, 2.5, 3.0, 0)
    assert s["targets_met"] and s["target_ratio"] == 3.0
    changed = summary([*runs, Run("playbook", 7.5, 1, 0, 0, 2)])
    assert changed["changed"] == 1 and not changed["targets_met"]
    slow = summary([*runs, Run("playbook", 40.0, 0, 0, 0, 2), Run("playbook", 41.0, 0, 0, 0, 2)])
    assert slow["ratio"] == 12.0 and not slow["targets_met"]


def test_summary_needs_both_kinds_of_run():
    with pytest.raises(BenchError, match="at least one playbook run and one ping run"):
        summary([Run("playbook", 1.0, 0, 0, 0, 1)])


@pytest.mark.parametrize("runs", ["0", "-3", "five", "101"])
def test_bad_run_count_is_refused_before_any_run(runs, capsys):
    with pytest.raises(SystemExit) as e:
        noopbench.main(["--runs", runs])
    assert e.value.code == 2 and "--runs" in capsys.readouterr().err


def test_json_output_that_is_a_folder_is_refused_before_any_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(noopbench, "bench", lambda *a: pytest.fail("ran despite a bad --json"))
    with pytest.raises(SystemExit) as ended:  # as argparse's own refusals end
        noopbench.main(["--json", str(tmp_path)])
    assert ended.value.code == 2
    assert "--json" in capsys.readouterr().err


@FUZZ
@given(st.one_of(st.text(max_size=300), st.dictionaries(st.text(max_size=5), st.integers()).map(json.dumps)))
def test_recap_answers_with_a_run_or_its_own_error(text):
    try:
        run = recap(text, "ping", 0.5)
    except BenchError as e:
        assert "\n" not in str(e)
    else:
        assert run.hosts >= 1 and min(run.changed, run.failed, run.unreachable) >= 0


def _size(boxes: int, playbook: float, ping: float) -> dict:
    runs = [Run("playbook", playbook, 0, 0, 0, boxes), Run("ping", ping, 0, 0, 0, boxes)]
    return summary(runs)


def test_the_curve_splits_a_run_into_its_fixed_part_and_a_cost_per_box():
    linear = curve([_size(n, 1.0 + 0.4 * n, 0.5 + 0.2 * n) for n in (2, 4, 8)])
    assert linear["playbook"] == {"fixed_s": 1.0, "per_box_s": 0.4}
    assert linear["ping"] == {"fixed_s": 0.5, "per_box_s": 0.2}
    assert linear["playbook_marginal_s"] == [0.4, 0.4] and linear["growth"] == 1.0 and linear["met"]
    # A cost per box that grows with the fleet (a task that reads every box for each box).
    squared = curve([_size(n, 1.0 + 0.1 * n * n, 1.0 + 0.2 * n) for n in (2, 4, 8)])
    assert squared["playbook_marginal_s"] == [0.6, 1.2] and squared["growth"] == 2.0 and not squared["met"]
    # Far above the floor at one size: not met, whatever the growth.
    assert not curve([_size(2, 2.0, 0.5), _size(4, 3.0, 0.6)])["met"]
    flat = curve([_size(2, 2.0, 1.0), _size(4, 2.0, 1.0), _size(8, 2.4, 1.0)])
    assert flat["growth"] is None and not flat["met"]  # no first cost per box to compare with
    with pytest.raises(BenchError, match="at least two fleet sizes"):
        curve([_size(2, 1.0, 1.0), _size(2, 1.1, 1.0)])


@pytest.mark.parametrize(
    ("boxes", "message"),
    [("2", "a curve needs two sizes or more"), ("4,2", "rising"), ("0,2", "from 1 to 30"), ("2,x", "not a")],
)
def test_bad_fleet_sizes_are_refused_before_any_run(boxes, message, capsys, monkeypatch):
    monkeypatch.setattr(noopbench, "converge", lambda *a: pytest.fail("converged despite bad --boxes"))
    err = refusal(noopbench.main, ["--boxes", boxes, "--converge", "false"], capsys)
    assert message in err and "--boxes" in err


@needs_ansible
def test_a_timed_run_books_the_control_nodes_cpu_and_a_parse_run_reads_the_playbook_alone(tmp_path):
    argv, env = two_local_hosts(tmp_path)
    played = noopbench._timed(argv, "playbook", env)
    parsed = noopbench._timed([*argv, "--list-tasks"], "parse", env)
    assert played.changed == 2 and played.cpu_s > 0 and parsed.kind == "parse" and parsed.cpu_s > 0
    s = summary([played, Run("ping", 1.0, 0, 0, 0, 2), parsed])
    assert s["parse_median_s"] == parsed.seconds and s["playbook_cpu_median_s"] == played.cpu_s
    with pytest.raises(BenchError, match="parse run exited"):
        noopbench._timed([*argv[:-2], str(tmp_path / "missing.yml"), "--list-tasks"], "parse", env)
