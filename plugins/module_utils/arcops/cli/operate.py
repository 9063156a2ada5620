"""arcops operate metrics, diag, report: the box's state as Prometheus metrics (node_exporter's
textfile collector), a diagnostics bundle, and a page to look at (cli/report.py)."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from ..box import drm_memory, facts, gpu_clocks, gpu_power, journal
from ..common.outputs import output_file, write_atomic
from ..common.prometheus_text import render
from ..common.records import FACT_DIR, read_published
from ..common.report import print_json, print_table
from ..operate import diag, metrics
from ..vllm import out_of_service
from ..vllm.watch_options import LLAMA_REPORT_DIR
from .common import kernel_log, number, one_line, read_root, with_box_source


def _kernel_lines(args: argparse.Namespace) -> list[str] | None:
    """This boot's kernel lines: the file given, the journal on the box itself, else None."""
    if args.journal_file:
        with kernel_log(args.journal_file) as lines:
            return list(lines)
    if args.root != "/":
        return None  # a fixture tree has no journal of its own
    try:
        return list(journal.kernel_lines(check=True))
    except journal.JournalError:
        return None


def box_sources(args: argparse.Namespace, root) -> dict:
    """What `operate metrics` and `operate report` read of a box (--root, --journal-file): the
    stages' records, the facts, the watchdog's last start report, the health watch's (restart
    times, latest report) and this boot's kernel lines."""
    records = read_published(root.path(FACT_DIR))
    vllm = records.get("vllm_service")
    report_dir = vllm.get("report_dir") if isinstance(vllm, dict) else None
    return {
        "records": records,
        "facts": facts.collect(root),
        "start": metrics.last_start_report(root, report_dir),
        "health": metrics.health_files(root, report_dir),
        "llama_health": metrics.health_files(root, LLAMA_REPORT_DIR),
        "lines": _kernel_lines(args),
    }


def _drm_memory(root) -> list[dict] | None:
    """Each card's DRM clients' memory; None when some process's fdinfo could not be read."""
    found, skipped = drm_memory.clients(root)
    return drm_memory.per_card(found) if skipped == 0 else None


def _cmd_metrics(args: argparse.Namespace) -> int:
    if args.output:
        output_file(args.output, "metrics file")  # refused before anything is read
    root = read_root(args)
    box = box_sources(args, root)
    families = metrics.collect(
        box["records"],
        box["facts"],
        box["start"],
        box["lines"],
        time.time(),
        box["health"],
        gpu_power.cards(root),
        out_of_service.read(root.path(out_of_service.MARK)),
        gpu_clocks.cards(root),
        _drm_memory(root),
        box["llama_health"],
        out_of_service.reboots(root.path(out_of_service.REBOOTS), time.time()),
    )
    text = render(families)
    if args.output:
        write_atomic(args.output, text)
    else:
        print(text, end="")
    return 0


def _cmd_diag(args: argparse.Namespace) -> int:
    output = output_file(args.output, "bundle")  # refused before anything is read or freed
    if not args.output.endswith((".tar.gz", ".tgz")):
        raise ValueError(f"bundle {args.output}: name it FILE.tar.gz (it is a gzip'd tar)")
    if os.path.lexists(output):
        raise ValueError(
            f"bundle {args.output}: exists; name a new file (a bundle is never written over a file)"
        )
    if not args.timeout > 0:
        raise ValueError(f"--timeout {args.timeout}: give seconds above 0")
    bundle = diag.collect(read_root(args), args.timeout, free_devcoredumps=not args.keep_devcoredumps)
    manifest = diag.write(bundle, Path(output))
    if args.json:
        print_json(manifest)
        return 0
    rows = [
        {
            "entry": e["name"],
            "result": e["result"],
            "seconds": e["seconds"],
            "bytes": e["bytes"],
            "note": one_line(e["note"])[:60] if e["note"] else "",  # stderr's end: one table line
        }
        for e in manifest["entries"]
    ]
    print_table(rows, ["entry", "result", "seconds", "bytes", "note"])
    ok = sum(e["result"] == "ok" for e in manifest["entries"])
    print(f"{args.output}: {ok} of {len(rows)} entries ok, {manifest['redactions']} secret(s) redacted")
    return 0


def add(sub) -> None:
    p = sub.add_parser(
        "diag",
        help="one tarball for a misbehaving box: versions, journals, sensors, devcoredumps, secrets redacted",
    )
    p.add_argument(
        "--output",
        required=True,
        metavar="FILE.tar.gz",
        help="the bundle to write: a new file, made 0600 and exclusively",
    )
    p.add_argument(
        "--root", default="/", help="read files under this folder (fixture trees); commands run as found"
    )
    p.add_argument(
        "--timeout", type=number, default=diag.TIMEOUT, help="seconds each command may take (default 30)"
    )
    p.add_argument(
        "--keep-devcoredumps", action="store_true", help="copy devcoredumps without freeing them afterwards"
    )
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    p.set_defaults(func=_cmd_diag)

    p = sub.add_parser(
        "metrics",
        help="the box's state as Prometheus metrics: stack, GuC per card, xe events, last start, gate, bench",
    )
    with_box_source(p)
    p.add_argument(
        "--output",
        metavar="FILE",
        help="write here atomically (node_exporter's textfile folder) instead of stdout",
    )
    p.set_defaults(func=_cmd_metrics)
