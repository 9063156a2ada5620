"""The ``arcops`` command: thin argument handling over the helper modules."""

from __future__ import annotations

import argparse
import sys

from . import __version__, gpus
from .report import print_json, print_table
from .sysroot import SysRoot


def _cmd_gpus(args: argparse.Namespace) -> int:
    sysroot = SysRoot(args.root)
    found = [g.as_dict() for g in gpus.scan(sysroot)]
    if args.json:
        print_json({"root": str(sysroot.root), "simulated": sysroot.simulated, "gpus": found})
    else:
        if sysroot.simulated:
            print(f"SIMULATED hardware view from {sysroot.root}")
        print_table(found, ["address", "device_id", "model", "driver", "card", "render", "numa_node"])
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arcops", description=__doc__)
    parser.add_argument("--version", action="version", version=f"arcops {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("gpus", help="list Intel GPUs (PCI functions of display class) and their drivers")
    p.add_argument("--root", default="/", help="filesystem root to read sysfs under (fixture trees)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_cmd_gpus)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
