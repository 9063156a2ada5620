"""The no-op re-run benchmark's reading of Ansible's json callback and its summary. The recap is
read from a real ansible-playbook run; the benchmark itself runs against the lab (scripts/bench)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from arcops.devtools import noopbench
from arcops.devtools.noopbench import BenchError, Run, recap, summary
from hypothesis import given
from hypothesis import strategies as st

from .conftest import REPO
from .helpers.ansible_run import ANSIBLE, needs_ansible
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


@needs_ansible
def test_recap_reads_a_real_playbook_runs_json_output(tmp_path):
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json")
    argv = [ANSIBLE + "-playbook", "-i", "a,b,", "-c", "local", str(tmp_path / "play.yml")]
    argv += ["-e", f"ansible_python_interpreter={sys.executable}"]
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
    runs = [Run("playbook", s, 0, 0, 0, 2) for s in (9.0, 30.0, 10.0)]
    runs += [Run("ping", s, 0, 0, 0, 2) for s in (2.0, 2.5, 3.0)]
    s = summary(runs)
    assert (s["playbook_median_s"], s["ping_median_s"], s["ratio"], s["changed"]) == (10.0, 2.5, 4.0, 0)
    assert s["targets_met"]
    slow = summary([*runs, Run("playbook", 40.0, 1, 0, 0, 2)])
    assert slow["changed"] == 1 and not slow["targets_met"]


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
