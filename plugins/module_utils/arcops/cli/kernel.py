"""arcops stack bundle lock/verify, boot-entry, debrepack: the pinned stack and kernel packages."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..common.outputs import OutputError, output_file, write_atomic
from ..common.report import print_json, print_table
from ..kernel import bundle, debrepack, grub
from ..kernel.debs import DebError
from .common import Parser, error, read_root


def _cmd_bundle_lock(args: argparse.Namespace) -> int:
    try:
        if args.output:
            output_file(args.output, "lock file (-o)")
        lock = bundle.make_lock(args.tarball, args.flavour)
    except (bundle.BundleError, DebError, OutputError) as e:
        error(f"arcops: {e}")
        return 2
    text = json.dumps(lock, indent=2, sort_keys=True) + "\n"
    if args.output:
        write_atomic(args.output, text)
        print(
            f"wrote {args.output}: {len(lock['packages'])} packages, {len(lock['firmware'])} firmware files, "
            f"kernel {lock['kernel_release']}"
        )
    else:
        sys.stdout.write(text)
    return 0


def _cmd_bundle_verify(args: argparse.Namespace) -> int:
    try:
        lock = bundle.load_lock(args.lock)
        found = bundle.verify(bundle.top_folder(Path(args.folder)), lock)
    except (bundle.BundleError, DebError, OSError, ValueError) as e:
        error(f"arcops: {e}")
        return 2
    print(f"bundle {found.version} matches {args.lock}")
    return 0


def _cmd_boot_entry(args: argparse.Namespace) -> int:
    entry = grub.boot_entry(read_root(args), args.release, args.grub_cfg).as_dict()
    if args.json:
        print_json(entry)
    else:
        print_table([{"fact": k, "value": v} for k, v in entry.items()], ["fact", "value"])
    return 0 if entry["bootable"] else 1


def _cmd_debrepack(args: argparse.Namespace) -> int:
    try:
        reports = debrepack.repack_all(args.debs, args.output)
    except debrepack.RepackError as e:
        error(f"arcops: {e}")
        return 2
    if args.json:
        print_json(reports)
        return 0
    for r in reports:
        calls = sum(len(c) for c in r["changes"].values())
        what = (
            f"repacked, {calls} run-parts call(s) split in {', '.join(r['changes'])}"
            if calls
            else "unchanged, copied"
        )
        print(f"{r['package']} {r['version']}: {what} -> {r['output']}")
        for script, changes in r["changes"].items():
            for c in changes:
                where = f"{script}:{c['line']}" + (" (here-document)" if c["in_heredoc"] else "")
                print(f"  {where}: {c['before'].strip()}")
    return 0


def add(sub) -> None:
    p = sub.add_parser("bundle", help="Intel offline installer bundles: lock and verify")
    bsub = p.add_subparsers(dest="bundle_command", required=True, parser_class=Parser)
    q = bsub.add_parser(
        "lock", help="write the lock (sha256 of tarball, packages, firmware) for a real tarball"
    )
    q.add_argument("tarball")
    q.add_argument("--flavour", choices=sorted(bundle.FLAVOURS), default="server")
    q.add_argument("-o", "--output", help="write the lock here instead of printing it")
    q.set_defaults(func=_cmd_bundle_lock)
    q = bsub.add_parser("verify", help="check an unpacked bundle against its lock")
    q.add_argument("folder", help="where the tarball was unpacked")
    q.add_argument("--lock", required=True)
    q.set_defaults(func=_cmd_bundle_verify)

    p = sub.add_parser("boot-entry", help="is a kernel release bootable: vmlinuz, initrd, GRUB entry")
    p.add_argument("release")
    p.add_argument("--root", default="/", help="filesystem root to read /boot under")
    p.add_argument("--grub-cfg", default="/boot/grub/grub.cfg")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_boot_entry)

    p = sub.add_parser(
        "debrepack",
        help="split multi-directory run-parts calls in .debs' maintainer scripts (noble's run-parts)",
    )
    p.add_argument("debs", nargs="+", metavar="IN.deb")
    p.add_argument(
        "-o", "--output", required=True, metavar="OUTDIR", help="where the packages and reports go"
    )
    p.add_argument("--json", action="store_true", help="print the reports as JSON")
    p.set_defaults(func=_cmd_debrepack)
