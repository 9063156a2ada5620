"""The shipped example inventory, used as the README says (copied, hosts filled in): preflight must
run and report the box's own problems, one per line, never die on the inventory's own values."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from .conftest import REPO
from .test_ansible_module import ANSIBLE, needs_ansible


@needs_ansible
def test_preflight_with_the_example_inventory_reports_the_box_not_the_inventory(tmp_path):
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json")
    host = "arc-01.example.internal"
    argv = [
        ANSIBLE.replace("bin/ansible", "bin/ansible-playbook"),
        "-i",
        str(REPO / "inventories" / "example"),
        "-l",
        host,
        str(REPO / "playbooks" / "preflight.yml"),
        "--check",
        # This machine stands in for the box: reached locally, without become.
        "-e",
        "ansible_connection=local",
        "-e",
        "ansible_become=false",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
    ]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    plays = json.loads(done.stdout)["plays"]
    failed = [
        (task["task"]["name"], result)
        for task in plays[0]["tasks"]
        for name, result in task["hosts"].items()
        if name == host and result.get("failed")
    ]
    assert done.returncode == 2 and len(failed) == 1, done.stdout[-3000:]
    task, result = failed[0]
    # Preflight itself refuses this box (a test machine with no Arc GPU), with one problem a line.
    assert task == "preflight : Assert the box is fit for arcops", result
    lines = result["msg"].splitlines()
    assert lines[0].startswith("preflight found ") and all(line.startswith("- ") for line in lines[1:])
    assert any("Found 0 supported GPU(s), need 2" in line for line in lines)
    # vLLM is off in the example: no RAM or Docker-disk demand for it.
    assert not any("Host RAM" in line or "/var/lib/docker" in line for line in lines), lines
    assert "unable to convert to bool" not in done.stdout
