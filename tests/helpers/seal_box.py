"""A box for the seal tests (a state folder, files a stage wrote, a witness over them) and a play
that runs arcops.arc.arcops_seal through ansible-playbook."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


# A stage's inputs as a seal takes them.
INPUTS = {"stage": "intel_stack", "vars": {"intel_stack_guc_version": "70.60.0"}, "code": "ab" * 32}


@pytest.fixture
def box(tmp_path, dual_b60):
    """A state folder, a few files a stage wrote, and a witness spec over them."""
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "pins.pref").write_text("Package: libze1\nPin: version 1.21*\n")
    (etc / "fw").mkdir()
    (etc / "fw" / "bmg_guc_70.bin").write_bytes(b"\x00guc")
    (etc / "fw" / "bmg_huc.bin").write_bytes(b"\x00huc")
    witness = {
        "files": [str(etc / "pins.pref"), str(etc / "fw" / "*.bin")],
        "users": ["root"],
        "kernel": True,
        "gpus": str(dual_b60),
    }
    return tmp_path / "state", etc, witness


PLAY = """
- hosts: localhost
  gather_facts: false
  vars:
    inputs:
      stage: intel_stack
      vars: {count: 2, ratio: 0.94, on: true, none: null, name: "GuC 70.60.0 ü", ids: ["0xe211"],
             deep: {a: [1, {b: 2}]}}
      code: "{{ 'ab' * 32 }}"
  tasks:
    - name: Check
      arcops.arc.arcops_seal:
        state_dir: "{{ state_dir }}"
        action: "{{ action }}"
        inputs: "{{ inputs | combine(extra | default({}), recursive=true) }}"
        witness: "{{ witness }}"
        secrets: "{{ secrets | default({}) }}"
        surveyed: "{{ surveyed | default(omit) }}"
        full_run: "{{ full_run | default(false) }}"
      register: result
"""


def run_play(tmp_path, args: dict, verbosity: str = "") -> tuple[dict, str]:
    """PLAY's one task with ARGS as extra vars: its result, and all the run printed."""
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    (tmp_path / "vars.json").write_text(json.dumps(args))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json")
    argv = [shutil.which("ansible-playbook", path=os.path.dirname(sys.executable)), str(play)]
    argv += ["-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}"]
    argv += ["-e", f"@{tmp_path / 'vars.json'}"] + ([verbosity] if verbosity else [])
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    # Verbose lines come before the json callback's document, which starts a line with "{".
    document = done.stdout[done.stdout.index("\n{") + 1 :] if verbosity else done.stdout
    return json.loads(document)["plays"][0]["tasks"][0]["hosts"]["localhost"], done.stdout + done.stderr
