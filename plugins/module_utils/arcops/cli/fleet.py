"""arcops fleet check | status | plan | report: a stack release, the fleet's status, a rollout's dry
run, and a page to look at (cli/report.py)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ..common.report import print_json, print_table
from ..fleet import changes, fleet_status, release
from .common import error


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        found = release.load(args.file)
    except release.ReleaseError as e:
        # Every problem on its own line, each naming the file: a release is fixed in one pass.
        for problem in e.problems:
            named = problem if problem.startswith(args.file) else f"{args.file}: {problem}"
            error(f"arcops fleet check: {named}")
        return 2
    if args.json:
        print_json(found)
        return 0
    print(f"release {found['id']} ({found['file']})")
    rows = [{"variable": k, "value": json.dumps(v, sort_keys=True)} for k, v in sorted(found["vars"].items())]
    print_table(rows, ["variable", "value"])
    for line in found["known"] or ["no known stack matches"]:
        print(f"known stacks: {line}")
    return 0


REPO = Path(__file__).resolve().parents[4]  # plugins/module_utils/arcops/cli/fleet.py


# Ansible reads every file of an inventory folder, and of its folders: a FIFO or a device there
# blocks it for good, and a folder such as / has it walk the machine. The folders ansible.cfg's
# ignore_patterns keep from it (a fleet's rollout records, goldens) are not counted.
INVENTORY_ENTRIES = 10_000
NOT_INVENTORY = {"rollouts", "goldens"}


def _dangling(path: str) -> bool:
    return os.path.islink(path) and not os.path.exists(path)  # ansible skips it with a warning


def inventory_problem(inventory: str) -> str | None:
    """Why ansible could not read INVENTORY and end: None for a regular file, or a folder whose
    tree (at most INVENTORY_ENTRIES entries) holds only regular files and folders."""
    if os.path.isfile(inventory):
        return None
    if not os.path.isdir(inventory):
        return "no such inventory" if not os.path.exists(inventory) else "not a file or a folder"
    seen, folders = 0, [inventory]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                seen += 1
                if seen > INVENTORY_ENTRIES:
                    return f"more than {INVENTORY_ENTRIES} entries: not an inventory folder"
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in NOT_INVENTORY:
                        folders.append(entry.path)
                elif not (entry.is_file() or entry.is_dir() or _dangling(entry.path)):  # links to them pass
                    return f"{entry.path} is not a regular file or a folder"
    return None


def _run_playbook(
    command: str,
    inventory: str,
    name: str,
    extra: dict,
    progress: str,
    env: dict | None = None,
    check: bool = False,
):
    """Run playbooks/NAME against INVENTORY (this checkout's ansible.cfg; a dry run with CHECK),
    saying PROGRESS once the inventory is readable: the finished process, or None after saying
    why it could not start."""
    playbook = REPO / "playbooks" / name
    if not playbook.is_file():
        print(
            f"arcops fleet {command}: runs from an arcops checkout ({playbook} is missing)", file=sys.stderr
        )
        return None
    problem = inventory_problem(inventory)
    if problem:
        error(f"arcops fleet {command}: -i {inventory}: {problem}")
        return None
    print(f"{progress} {inventory} ...", file=sys.stderr)
    runner = Path(sys.executable).with_name("ansible-playbook")
    argv = [str(runner), "-i", inventory, str(playbook), "-e", json.dumps(extra)]
    if check:
        argv.append("--check")
    full_env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), **(env or {})}
    return subprocess.run(argv, env=full_env, capture_output=True, text=True, check=False)


def _failed(command: str, done) -> int:
    tail = (done.stdout + done.stderr).strip().splitlines()[-8:]
    error(f"arcops fleet {command}: ansible-playbook failed ({done.returncode}):")
    print("\n".join(f"  {line}" for line in tail), file=sys.stderr)
    return 2


def fleet_status_data(inventory: str) -> dict | None:
    """{rows, problems} of every box of INVENTORY (playbooks/fleet_status.yml), or None after
    saying why it could not be read."""
    with tempfile.TemporaryDirectory(prefix="arcops-fleet-") as tmp:
        out = Path(tmp) / "status.json"
        done = _run_playbook(
            "status",
            inventory,
            "fleet_status.yml",
            {"arcops_fleet_status_output": str(out)},
            "reading every box of",
        )
        if done is None:
            return None
        if done.returncode == 0 and not out.is_file():  # the play matched no host
            error(f"arcops fleet status: -i {inventory}: no box in arc_servers")
            return None
        if done.returncode != 0 or not out.is_file():
            _failed("status", done)
            return None
        return json.loads(out.read_text())


def _cmd_status(args: argparse.Namespace) -> int:
    data = fleet_status_data(args.inventory)
    if data is None:
        return 2
    if args.json:
        print_json(data)
    else:
        print("\n".join(fleet_status.table(data["rows"])))
        for problem in data["problems"]:
            print(f"waves: {problem}")
        for line in data.get("firmware_drift") or []:
            print(f"drift: {line}")
    return 0


PLAN_COLUMNS = ["box", "wave", "action", "from", "to", "changes", "reboot"]


def plan_rows(planned: dict, changed: dict) -> list[dict]:
    """The plan's boxes with what the dry run would change on each and why it would reboot."""
    per_box = changes.by_box(changed.get("changed") or [])
    reboots = changed.get("reboots") or {}
    rows = []
    for b in planned["boxes"]:
        found = per_box.get(b["box"], {"kinds": [], "tasks": []})
        rows.append(
            {
                "box": b["box"],
                "wave": f"{b['wave']} {b['batch']}",
                "action": b["action"] or "-",
                "from": b["before"] or "-",
                "to": b["target"] or "-",
                "changes": ", ".join(found["kinds"]) if b["action"] != "check" else "none (gated only)",
                "reboot": "; ".join(r.removeprefix("Would reboot: ") for r in reboots.get(b["box"], []))
                or "no",
                "tasks": found["tasks"],
            }
        )
    return rows


def _cmd_plan(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="arcops-fleet-") as tmp:
        plan_file, changes_file = Path(tmp) / "plan.json", Path(tmp) / "changes.json"
        done = _run_playbook(
            "plan",
            args.inventory,
            "rollout.yml",
            {"arcops_rollout_plan_output": str(plan_file)},
            "dry run of playbooks/rollout.yml on every box of",
            {"ARCOPS_CHANGES_FILE": str(changes_file)},
            check=True,
        )
        if done is None:
            return 2
        planned = json.loads(plan_file.read_text()) if plan_file.is_file() else None
        if planned and planned["problems"]:
            for problem in planned["problems"]:
                error(f"arcops fleet plan: refused: {problem}")
            return 2
        if done.returncode == 0 and planned is None:  # the plan play matched no host
            error(f"arcops fleet plan: -i {args.inventory}: no box in arc_servers")
            return 2
        if done.returncode != 0 or planned is None or not changes_file.is_file():
            return _failed("plan", done)
        rows = plan_rows(planned, json.loads(changes_file.read_text()))
    known = planned.get("known") or []
    if args.json:
        print_json({"boxes": rows, "known": known})
    else:
        print_table(rows, PLAN_COLUMNS)
        for line in known or ["no known stack matches"]:
            print(f"known stacks: {line}")
    return 0


def add(sub: argparse._SubParsersAction) -> None:
    fleet = sub
    c = fleet.add_parser(
        "check",
        help="check a stack release: keys, pinned files, the roles' checks, known-bad stacks",
    )
    c.add_argument("file", help=f"the release file (an inventory's {release.FILE_NAME})")
    c.add_argument("--json", action="store_true", help="print JSON: id, file, vars, known-stack matches")
    c.set_defaults(func=_cmd_check)
    s = fleet.add_parser(
        "status",
        help="every box: release running and targeted, kernel, GuC, image, last start and gate, xe resets",
    )
    s.add_argument("-i", "--inventory", required=True, help="the fleet's inventory (a folder or hosts file)")
    s.add_argument("--json", action="store_true", help="print JSON: rows and wave problems")
    s.set_defaults(func=_cmd_status)
    pl = fleet.add_parser(
        "plan",
        help="what a rollout would do: per box its wave, action, what would change, whether it reboots",
    )
    pl.add_argument("-i", "--inventory", required=True, help="the fleet's inventory (with its stack.yml)")
    pl.add_argument(
        "--json", action="store_true", help="print JSON: boxes, each with the tasks that would change"
    )
    pl.set_defaults(func=_cmd_plan)
