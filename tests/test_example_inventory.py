"""The shipped example inventory, used as the README says (copied, hosts filled in): preflight must
run and report the box's own problems, one per line, never die on the inventory's own values."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import REPO
from .helpers.ansible_run import ANSIBLE, needs_ansible

HOST = "arc-01.example.internal"
# This machine stands in for the box: reached locally, without become.
AS_LOCAL_BOX = [
    "-l",
    HOST,
    "-e",
    "ansible_connection=local",
    "-e",
    f"ansible_python_interpreter={sys.executable}",
]


def run_example(tmp_path, playbook: str, *args: str) -> tuple[int, dict]:
    """ansible-playbook --check with inventories/example as shipped: (exit code, JSON result)."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json")
    argv = [
        ANSIBLE.replace("bin/ansible", "bin/ansible-playbook"),
        "-i",
        str(REPO / "inventories" / "example"),
    ]
    argv += [str(REPO / playbook), "--check", *args]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    return done.returncode, json.loads(done.stdout)


@needs_ansible
@pytest.mark.parametrize("playbook", ["playbooks/preflight.yml", "site.yml", "playbooks/intel_stack.yml"])
def test_preflight_with_the_example_inventory_reports_the_box_not_the_inventory(tmp_path, playbook):
    """site.yml and a stage playbook run on its own both stop at preflight on an unfit box."""
    rc, out = run_example(tmp_path, playbook, *AS_LOCAL_BOX, "-e", "ansible_become=false")
    plays = out["plays"]
    failed = [
        (task["task"]["name"], result)
        for task in plays[0]["tasks"]
        for name, result in task["hosts"].items()
        if name == HOST and result.get("failed")
    ]
    assert rc == 2 and len(failed) == 1, plays
    task, result = failed[0]
    # Preflight itself refuses this box (a test machine with no Arc GPU): the failure counts the
    # problems, the task before it lists them once, one a line.
    assert task == "preflight : Assert the box is fit for arcops", result
    shown = [
        r["msg"]
        for t in plays[0]["tasks"]
        if t["task"]["name"] == "preflight : Show the problems"
        for name, r in t["hosts"].items()
        if name == HOST
    ]
    assert len(shown) == 1 and isinstance(shown[0], list), shown
    lines = shown[0]
    assert result["msg"] == f"preflight found {len(lines)} problem(s), listed in the task above"
    assert all(isinstance(line, str) and "\n" not in line for line in lines), lines
    assert any("Found 0 supported GPU(s), need 2" in line for line in lines)
    # vLLM is off in the example: no RAM or Docker-disk demand for it.
    assert not any("Host RAM" in line or "/var/lib/docker" in line for line in lines), lines
    assert "unable to convert to bool" not in json.dumps(out)
    # Nothing of a later stage ran: every task was preflight's (or the guard that calls it).
    names = [task["task"]["name"] for play in plays for task in play["tasks"]]
    assert all(n.startswith(("preflight : ", "Check the box with preflight")) for n in names), names


@needs_ansible
def test_misspelled_and_mistyped_variables_are_refused_up_front_by_the_users_name(tmp_path):
    bad = '{"arcops_allow_reboot": "yes please", "vllm_service_port": "eighty"}'
    rc, out = run_example(tmp_path, "site.yml", *AS_LOCAL_BOX, "-e", "vllm_service_profil=eager", "-e", bad)
    tasks = out["plays"][0]["tasks"]
    failed = [t for t in tasks if any(r.get("failed") for r in t["hosts"].values())]
    assert rc == 2 and [t["task"]["name"] for t in failed] == [
        "preflight : Check the inventory's arcops variables (names and types)"
    ]
    result = next(iter(failed[0]["hosts"].values()))
    assert result["problems"] == [
        "arcops_allow_reboot must be true or false, not a string",
        "vllm_service_port must be a whole number, not a string",
        "vllm_service_profil is not a variable arcops knows: did you mean vllm_service_profile?",
    ]
    assert "yes please" not in json.dumps(out)  # values are never echoed
    # Before anything read or changed the box: only the role's own argument check came first.
    before = [t["task"]["name"] for t in tasks[: tasks.index(failed[0])]]
    assert len(before) == 1 and before[0].startswith("preflight : Validating arguments against arg spec"), (
        before
    )


@needs_ansible
def test_the_examples_placeholder_hosts_are_refused_before_any_connection(tmp_path):
    rc, plays = run_example(tmp_path, "site.yml")
    assert rc == 2 and plays["stats"].keys() == {
        "arc-01.example.internal",
        "arc-02.example.internal",
        "arc-03.example.internal",
    }
    assert all(s["unreachable"] == 0 and s["failures"] == 1 for s in plays["stats"].values()), plays["stats"]
    result = plays["plays"][0]["tasks"][1]["hosts"]["arc-02.example.internal"]
    assert result["problems"] == [
        "host arc-02.example.internal (arc-02.example.internal) is a placeholder from the example "
        "inventory: list your own boxes in hosts.yml (the name, or ansible_host with its address)"
    ]
