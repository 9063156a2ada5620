"""arcops fleet check: a stack release, as the rollout and the roles will read it."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ..common.report import print_json, print_table
from ..fleet import fleet_status, release
from .common import Parser


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        found = release.load(args.file)
    except release.ReleaseError as e:
        # Every problem on its own line, each naming the file: a release is fixed in one pass.
        for problem in e.problems:
            named = problem if problem.startswith(args.file) else f"{args.file}: {problem}"
            print(f"arcops fleet check: {' '.join(named.split())}", file=sys.stderr)
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


REPO = Path(__file__).resolve().parents[3]


def _cmd_status(args: argparse.Namespace) -> int:
    playbook = REPO / "playbooks" / "fleet_status.yml"
    if not playbook.is_file():
        print(f"arcops fleet status: runs from an arcops checkout ({playbook} is missing)", file=sys.stderr)
        return 2
    if not os.path.exists(args.inventory):
        print(f"arcops fleet status: -i {args.inventory}: no such inventory", file=sys.stderr)
        return 2
    runner = Path(sys.executable).with_name("ansible-playbook")
    with tempfile.TemporaryDirectory(prefix="arcops-fleet-") as tmp:
        out = Path(tmp) / "status.json"
        argv = [str(runner), "-i", args.inventory, str(playbook)]
        argv += ["-e", json.dumps({"arcops_fleet_status_output": str(out)})]
        env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")}
        print(f"reading every box of {args.inventory} ...", file=sys.stderr)
        done = subprocess.run(argv, env=env, capture_output=True, text=True)
        if done.returncode != 0 or not out.is_file():
            tail = (done.stdout + done.stderr).strip().splitlines()[-8:]
            print(f"arcops fleet status: ansible-playbook failed ({done.returncode}):", file=sys.stderr)
            print("\n".join(f"  {line}" for line in tail), file=sys.stderr)
            return 2
        data = json.loads(out.read_text())
    if args.json:
        print_json(data)
    else:
        print("\n".join(fleet_status.table(data["rows"])))
        for problem in data["problems"]:
            print(f"waves: {problem}")
    return 0


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fleet", help="stack releases and fleet rollouts")
    fleet = p.add_subparsers(dest="fleet_command", required=True, parser_class=Parser)
    c = fleet.add_parser(
        "check",
        help="check a stack release: keys, pinned files, the roles' checks, known-bad stacks",
        description="Exit 0: usable (its role variables are printed); 2: every problem, a line each.",
    )
    c.add_argument("file", help=f"the release file (an inventory's {release.FILE_NAME})")
    c.add_argument("--json", action="store_true", help="print JSON: id, file, vars, known-stack matches")
    c.set_defaults(func=_cmd_check)
    s = fleet.add_parser(
        "status",
        help="every box: release running and targeted, kernel, GuC, image, last start and gate, xe resets",
        description="Runs playbooks/fleet_status.yml: reads records and this boot's journal; changes nothing",
    )
    s.add_argument("-i", "--inventory", required=True, help="the fleet's inventory (a folder or hosts file)")
    s.add_argument("--json", action="store_true", help="print JSON: rows and wave problems")
    s.set_defaults(func=_cmd_status)
