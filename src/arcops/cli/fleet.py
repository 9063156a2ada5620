"""arcops fleet check: a stack release, as the rollout and the roles will read it."""

from __future__ import annotations

import argparse
import json
import sys

from ..common.report import print_json, print_table
from ..fleet import release
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
