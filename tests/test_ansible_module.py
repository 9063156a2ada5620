"""The Ansible module is a thin adapter: prove Ansible ships the arcops package with it."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

ANSIBLE = shutil.which("ansible", path=str(Path(sys.executable).parent)) or shutil.which("ansible")


@pytest.mark.skipif(ANSIBLE is None, reason="ansible is not installed (scripts/bootstrap installs it)")
def test_facts_module_runs_through_ansiballz(dual_b60):
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_STDOUT_CALLBACK="json",
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
    )
    argv = [
        ANSIBLE,
        "localhost",
        "-i",
        "localhost,",
        "-c",
        "local",
        "-m",
        "arcops_facts",
        "-a",
        f"root={dual_b60}",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
    ]
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=True)
    task = json.loads(result.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert task["changed"] is False
    facts = task["ansible_facts"]["arcops"]
    assert facts["simulated"] is True
    assert [g["model"] for g in facts["gpus"]] == ["Arc Pro B60", "Arc Pro B60"]
    assert [g["guc_loaded"] for g in facts["gpus"]] == ["70.60.0", "70.60.0"]
