"""arcops metrics: the box's state as Prometheus metrics (node_exporter's textfile collector)."""

from __future__ import annotations

import argparse
import io
import time

from ..box import facts, journal
from ..common.inputs import open_input
from ..common.outputs import output_file, write_atomic
from ..operate import metrics
from ..stages.records import FACT_DIR
from ..stages.status import read_records
from .common import read_root


def _kernel_lines(args: argparse.Namespace) -> list[str] | None:
    """This boot's kernel lines: the file given, the journal on the box itself, else None."""
    if args.journal_file:
        with open_input(args.journal_file, "kernel log") as raw:
            return list(io.TextIOWrapper(raw, encoding="utf-8", errors="replace"))
    if args.root != "/":
        return None  # a fixture tree has no journal of its own
    try:
        return list(journal.kernel_lines(check=True))
    except journal.JournalError:
        return None


def _cmd_metrics(args: argparse.Namespace) -> int:
    if args.output:
        output_file(args.output, "metrics file")  # refused before anything is read
    root = read_root(args)
    records = read_records(root.path(FACT_DIR))
    vllm = records.get("vllm_service")
    report_dir = vllm.get("report_dir") if isinstance(vllm, dict) else None
    families = metrics.collect(
        records,
        facts.collect(root),
        metrics.last_start_report(root, report_dir),
        _kernel_lines(args),
        time.time(),
    )
    text = metrics.render(families)
    if args.output:
        write_atomic(args.output, text)
    else:
        print(text, end="")
    return 0


def add(sub) -> None:
    p = sub.add_parser(
        "metrics",
        help="the box's state as Prometheus metrics: stack, GuC per card, xe events, last start, gate, bench",
    )
    p.add_argument("--root", default="/", help="filesystem root to read records, sysfs and procfs under")
    p.add_argument("--journal-file", metavar="FILE", help="read these kernel log lines instead of journalctl")
    p.add_argument(
        "--output",
        metavar="FILE",
        help="write here atomically (node_exporter's textfile folder) instead of stdout",
    )
    p.set_defaults(func=_cmd_metrics)
