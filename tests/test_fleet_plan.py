"""arcops fleet plan through real ansible-playbook (local connections stand in for SSH): the
rollout's dry run, per box its wave and action, and its refusals before anything changes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from arcops.cli import fleet as fleet_cli
from arcops.cli import main
from arcops.cli.fleet import plan_rows
from arcops.common import records

FIXTURES = Path(__file__).parent / "fixtures" / "hosts"
# What plugins/vars/arcops_release.py gives a release that matches a known stack seen fine.
KNOWN = ["guc-70.72.1 (fine): same speed as 70.60.0 (73.4 against 73.7 tok/s)"]


def fleet(tmp_path: Path, runs: dict[str, str | None], target: str) -> Path:
    """An inventory of local boxes: each box's verify record says the release it passed on."""
    hosts = {}
    for name, passed_on in runs.items():
        facts, state = tmp_path / name / "facts", tmp_path / name / "verify"
        facts.mkdir(parents=True)
        if passed_on:
            record = {"passed": True, "release": passed_on, "release_vars": {}}
            records.write(records.render(record), records.targets("verify", str(state), str(facts)))
        hosts[name] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "preflight_passed": True,  # this machine is no Arc box: the plan's own logic is tested
            "verify_fact_dir": str(facts),
            "verify_state_dir": str(state),
            "arcops_sysroot": str(FIXTURES / "dual-b60"),
            "arcops_release": {"id": target, "known": KNOWN},
        }
    names = list(hosts)
    inventory = {"all": {"vars": {"arcops_rollout_serial": [1, 2]}, "children": {"arc_servers": {"children": {
        "canary": {"hosts": {names[0]: hosts[names[0]]}},
        "fleet": {"hosts": {n: hosts[n] for n in names[1:]}},
    }}}}}  # fmt: skip
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    return tmp_path / "hosts.yml"


def test_the_plan_lists_every_box_in_wave_order_and_changes_nothing(tmp_path, capsys):
    inventory = fleet(
        tmp_path,
        {"arc-a": "2026.12.1", "arc-b": "2026.12.2", "arc-c": None, "arc-d": "2026.12.1"},
        "2026.12.2",
    )
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(["fleet", "plan", "-i", str(inventory), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["boxes"]
    assert out["known"] == KNOWN  # the release's known-stack matches, shown with the plan
    assert [(r["box"], r["wave"], r["action"], r["from"], r["to"]) for r in rows] == [
        ("arc-a", "canary 1", "upgrade", "2026.12.1", "2026.12.2"),
        ("arc-b", "fleet 1", "check", "2026.12.2", "2026.12.2"),
        ("arc-c", "fleet 2", "deploy", "-", "2026.12.2"),
        ("arc-d", "fleet 2", "upgrade", "2026.12.1", "2026.12.2"),
    ]
    assert rows[1]["changes"] == "none (gated only)" and all(r["reboot"] == "no" for r in rows)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # no record, no rollouts/


def test_a_downgrade_is_refused_by_the_plan_before_anything_changes(tmp_path, capsys):
    inventory = fleet(tmp_path, {"arc-a": "2026.12.1", "arc-b": "2026.12.3"}, "2026.12.2")
    assert main(["fleet", "plan", "-i", str(inventory)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("dry run of playbooks/rollout.yml on every box of")  # progress
    assert err[1:] == [
        "arcops fleet plan: refused: arc-b: runs release 2026.12.3, newer than the target 2026.12.2: "
        "a downgrade is refused unless asked for (-e arcops_rollout_allow_downgrade=true)"
    ]
    assert not (tmp_path / "rollouts").exists()


@pytest.mark.parametrize(
    "inventory, message",
    [
        ("{tmp}/missing", "arcops fleet plan: -i {tmp}/missing: no such inventory"),
        ("{tmp}/empty", "arcops fleet plan: -i {tmp}/empty: no box in arc_servers"),
    ],
)
def test_a_plan_without_boxes_is_one_line(tmp_path, capsys, inventory, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "hosts.yml").write_text("all:\n  hosts: {}\n")
    rc = main(["fleet", "plan", "-i", inventory.replace("{tmp}", str(tmp_path))])
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("dry run of")]
    assert rc == 2
    assert err == [message.replace("{tmp}", str(tmp_path))]


def test_an_inventory_ansible_could_not_finish_reading_is_refused_before_it_starts(tmp_path, capsys):
    """A FIFO or device in an inventory folder blocks ansible for good; `/` has it walk the machine."""
    inventory = tmp_path / "fleet"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text("all:\n  hosts: {}\n")
    (inventory / "group_vars" / "all.yml").symlink_to(inventory / "hosts.yml")
    (inventory / "gone.yml").symlink_to(tmp_path / "nowhere")  # ansible skips it with a warning
    (inventory / "rollouts").mkdir()
    os.mkfifo(inventory / "rollouts" / "fifo")  # ansible.cfg keeps rollouts/ from ansible: not read
    assert fleet_cli.inventory_problem(str(inventory)) is None
    os.mkfifo(inventory / "group_vars" / "fifo")
    fifo = f"{inventory}/group_vars/fifo is not a regular file or a folder"
    assert fleet_cli.inventory_problem(str(inventory)) == fifo
    assert fleet_cli.inventory_problem("/dev/null") == "not a file or a folder"
    assert fleet_cli.inventory_problem("/") is not None  # /dev's devices, or more entries than any inventory
    rc = main(["fleet", "status", "-i", str(inventory)])
    assert rc == 2
    assert capsys.readouterr().err.splitlines() == [f"arcops fleet status: -i {inventory}: {fifo}"]


def test_plan_rows_sort_the_dry_run_s_changes_per_box():
    planned = {
        "boxes": [
            {"box": "a", "wave": "canary", "batch": 1, "before": "1", "target": "2", "action": "upgrade"},
            {"box": "b", "wave": "fleet", "batch": 1, "before": "2", "target": "2", "action": "check"},
        ]
    }
    changed = {
        "changed": [
            {"host": "a", "role": "intel_stack", "task": "Install the pinned packages: runtime"},
            {"host": "a", "role": "vllm_service", "task": "Create the container from the spec"},
            {"host": "a", "role": "verify", "task": "Record the verdict"},
        ],
        "reboots": {"a": ["Would reboot: running kernel 6.1, pinned 6.17.0-1009-intel"]},
    }
    rows = plan_rows(planned, changed)
    assert rows[0]["changes"] == "packages, spec"
    assert rows[0]["reboot"] == "running kernel 6.1, pinned 6.17.0-1009-intel"
    assert rows[1] == {**rows[1], "changes": "none (gated only)", "reboot": "no", "tasks": []}
