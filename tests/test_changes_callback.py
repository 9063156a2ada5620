"""The changes callback (plugins/callback/arcops_changes.py) through real ansible-playbook: a run
cut off half-way (killed) still leaves what it changed so far; a whole run says it is complete."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from .helpers.ansible_run import ANSIBLE, REPO, needs_ansible

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Change something
      ansible.builtin.debug:
        msg: changed
      changed_when: true
    - name: Wait for the cut
      ansible.builtin.wait_for:
        path: {gate}
        timeout: 60
"""


def _run(tmp_path, changes):
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK.format(gate=tmp_path / "go"))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ARCOPS_CHANGES_FILE=str(changes))
    argv = [ANSIBLE + "-playbook", "-i", "localhost,", "-c", "local", str(playbook)]
    argv += ["-e", f"ansible_python_interpreter={sys.executable}"]
    return subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, start_new_session=True)


def _wait_for(changes, deadline=60):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if changes.exists():
            return json.loads(changes.read_text())
        time.sleep(0.1)
    raise AssertionError(f"{changes} never appeared")


@needs_ansible
def test_a_run_cut_off_leaves_what_it_changed_and_a_whole_run_is_complete(tmp_path):
    changes = tmp_path / "changes.json"
    run = _run(tmp_path, changes)
    try:
        cut = _wait_for(changes)
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    assert cut == {
        "changed": [{"host": "localhost", "role": None, "task": "Change something"}],
        "reboots": {},
        "complete": False,
    }

    changes.unlink()
    (tmp_path / "go").touch()
    whole = _run(tmp_path, changes)
    assert whole.wait(timeout=120) == 0
    assert json.loads(changes.read_text())["complete"] is True
