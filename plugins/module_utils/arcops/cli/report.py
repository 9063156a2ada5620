"""arcops operate report, arcops fleet report: one self-contained HTML page for a box or a fleet
(docs/operate.md, "A page to look at"). Every string read is passed through the diagnostics
bundle's redactor before it reaches the page: a credential in a URL or a key in a report's
detail never lands in a file meant to be shared."""

from __future__ import annotations

import argparse
import json
import socket
import time
from pathlib import Path
from typing import Any

from ..common.outputs import output_file, write_atomic
from ..common.prometheus_text import render
from ..fleet import fleet_metrics, fleet_report, release, rollout
from ..operate import redact
from ..operate import report as box_report
from .common import error, read_root, with_box_source
from .fleet import fleet_status_data
from .operate import box_sources


def scrub(value: Any, redactor: redact.Redactor) -> Any:
    """value with every string redacted (mappings' keys too)."""
    if isinstance(value, str):
        return redactor.text(value)
    if isinstance(value, dict):
        return {scrub(k, redactor): scrub(v, redactor) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v, redactor) for v in value]
    return value


def _html_output(path: str) -> Path:
    if not path.endswith((".html", ".htm")):
        raise ValueError(f"report {path}: name it FILE.html (it is one HTML page)")
    return output_file(path, "report")  # refused before anything is read


def _write(path: Path, page: str, redactor: redact.Redactor) -> None:
    write_atomic(path, page, 0o644)
    print(f"{path}: {len(page.encode())} bytes, {redactor.count} secret(s) redacted")


def _cmd_box(args: argparse.Namespace) -> int:
    output = _html_output(args.output)
    redactor = redact.Redactor([])
    found = scrub(box_sources(args, read_root(args)), redactor)  # what `operate metrics` reads
    name = args.name or (socket.gethostname() if args.root == "/" else Path(args.root).resolve().name)
    page = box_report.box_page(
        name,
        found["records"],
        found["facts"],
        found["start"],
        found["lines"],
        (found["health"][0], found["health"][1]),
        time.time(),
    )
    _write(output, page, redactor)
    return 0


def _latest_run(folder: Path) -> Path | None:
    """The run that rollout.start linked as latest under the record root, if there is one."""
    latest = folder / "latest"
    return latest.resolve() if (latest / rollout.HEADER).is_file() else None


def _cmd_fleet(args: argparse.Namespace) -> int:
    if not (args.output or args.metrics):
        raise ValueError("arcops fleet report: give --output FILE.html, --metrics FILE or both")
    output = _html_output(args.output) if args.output else None
    prom = output_file(args.metrics, "metrics file") if args.metrics else None
    if args.status:
        try:
            status = json.loads(Path(args.status).read_text(encoding="utf-8"))
        except ValueError as e:
            raise ValueError(f"--status {args.status}: not JSON ({e})") from None
        if not isinstance(status, dict) or not isinstance(status.get("rows"), list):
            raise ValueError(f"--status {args.status}: not what 'arcops fleet status --json' prints")
    else:
        status = fleet_status_data(args.inventory)
        if status is None:
            return 2
    base = Path(args.inventory).parent if args.inventory and Path(args.inventory).is_file() else None
    base = base or (Path(args.inventory) if args.inventory else None)
    release_file = args.release or (str(base / release.FILE_NAME) if base else None)
    found = None
    if release_file and Path(release_file).is_file():
        try:
            found = release.load(release_file)
        except release.ReleaseError as e:
            error(f"arcops fleet report: {release_file}: {e.problems[0]}")
    run = Path(args.rollout) if args.rollout else (_latest_run(base / "rollouts") if base else None)
    record = rollout.load(run) if run else None
    redactor = redact.Redactor([])
    status, found, record = scrub([status, found, record], redactor)
    now = time.time()
    if prom:
        write_atomic(prom, render(fleet_metrics.collect(status, found, record, now)))
        print(f"{prom}: the fleet's metrics")
    if output:
        title = args.inventory or args.status
        _write(output, fleet_report.page(status, found, record, now, title), redactor)
    return 0


def add_box(sub) -> None:
    p = sub.add_parser(
        "report", help="one HTML page for the box: stack, verify, vLLM start and health, resets, GPUs"
    )
    p.add_argument("--output", required=True, metavar="FILE.html", help="the page to write (atomically)")
    with_box_source(p)
    p.add_argument("--name", help="the box's name on the page (default: its hostname, or the root's folder)")
    p.set_defaults(func=_cmd_box)


def add_fleet(sub) -> None:
    p = sub.add_parser(
        "report",
        help="one HTML page for the fleet: every box against the release, drift, known-bad, last rollout",
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("-i", "--inventory", help="read every box now (runs what 'arcops fleet status' runs)")
    source.add_argument("--status", metavar="FILE", help="a saved 'arcops fleet status --json'")
    p.add_argument("--output", metavar="FILE.html", help="the page to write (atomically)")
    p.add_argument(
        "--metrics",
        metavar="FILE",
        help="also write the fleet's Prometheus metrics here (the control node's textfile folder)",
    )
    p.add_argument("--release", metavar="FILE", help="the release file (default: the inventory's stack.yml)")
    p.add_argument(
        "--rollout",
        metavar="RUN_DIR",
        help="a rollout's record folder (default: the inventory's rollouts/latest)",
    )
    p.set_defaults(func=_cmd_fleet)
