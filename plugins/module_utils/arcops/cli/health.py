"""What `arcops vllm health-watch` and `arcops llama health-watch` share: the policy's options, and
the loop that runs a watch until a signal (or --looks) with the journal follower closed after.
`arcops llama health-watch` itself is here too: llama-server on the box, no container."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..vllm.out_of_service import REBOOTS
from ..vllm.watch_options import HEALTH_INTERVAL, LLAMA_REPORT_DIR, HealthOptions
from .common import error, finite, positive_int, seconds, whole

HEALTH = HealthOptions()


# The policy's options, each setting the HealthOptions field of its name (its default there):
# flag, type, metavar, what it means.
POLICY = (
    ("--stall-seconds", finite, "S", "requests running with no progress this long is a stall"),
    ("--max-restarts-per-hour", positive_int, "N", "restarts in any hour, at most"),
    ("--min-interval", seconds, "S", "seconds between restarts, at least"),
    ("--unreachable-after", positive_int, "N", "looks in a row without /metrics before that is reported"),
    (
        "--max-reboots-per-day",
        whole,
        "N",
        f"a wedged GPU (a failed GT reset) reboots the box, at most N times in any day, counted box-wide "
        f"in {REBOOTS}; 0: never",
    ),
)


def _field(flag: str) -> str:
    return flag[2:].replace("-", "_")


def add_options(p: argparse.ArgumentParser, unit: str) -> None:
    """The unit, the look's pace and the restart policy, with their defaults."""
    p.add_argument("--unit", default=unit, help=f"the server's unit to restart (default {unit})")
    p.add_argument(
        "--interval",
        type=finite,
        default=HEALTH_INTERVAL,
        metavar="S",
        help=f"seconds between looks (default {HEALTH_INTERVAL:g})",
    )
    for flag, kind, metavar, about in POLICY:
        default = getattr(HEALTH, _field(flag))
        about = f"{about} (default {default:g})"
        p.add_argument(flag, type=kind, default=default, metavar=metavar, help=about)
    p.add_argument(
        "--looks", type=positive_int, metavar="N", help="stop after N looks (default: until a signal)"
    )


def options(args: argparse.Namespace) -> HealthOptions:
    return HealthOptions(**{_field(row[0]): getattr(args, _field(row[0])) for row in POLICY})


def watch_box(args: argparse.Namespace, url: str, sysroot, evidence, **more) -> int:
    """Follow the kernel journal and run a watch wired to the box: systemd restarts, stops and
    reboots, the box-wide out-of-service mark and reboot ledger (MORE: the server's own parts)."""
    from ..box import journal
    from ..vllm import health_box, health_watch, out_of_service

    try:
        lines = health_box.KernelLines(journal.follow())
    except journal.JournalError as e:
        error(f"arcops: {e}")
        return 2
    watch = health_watch.HealthWatch(
        url,
        Path(args.report_dir),
        options(args),
        new_kernel_lines=lines,
        evidence=evidence,
        restart=health_box.systemd_restart(args.unit),
        stop=health_box.systemd_stop(args.unit),
        out_of_service=sysroot.path(out_of_service.MARK),
        reboot=health_box.systemd_reboot(),
        reboots=sysroot.path(out_of_service.REBOOTS),
        **more,
    )
    return run(args, watch, lines, url)


def run(args: argparse.Namespace, watch, lines, url: str) -> int:
    """Run WATCH every --interval seconds while --unit is up, until SIGTERM or SIGINT."""
    import signal
    import threading

    from ..vllm import health_box

    stop = threading.Event()
    handlers = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
    print(
        f"watching {url}/metrics and the kernel journal every {args.interval:g} s while {args.unit} is up "
        f"(stall after {args.stall_seconds:g} s; at most {args.max_restarts_per_hour} restart(s) an hour, "
        f"{args.min_interval:g} s apart; "
        + (
            f"a wedged GPU reboots the box, at most {args.max_reboots_per_day} time(s) in 24 h"
            if args.max_reboots_per_day
            else "a wedged GPU leaves the box to a person"
        )
        + f"); reports -> {args.report_dir}",
        flush=True,
    )
    try:
        return health_box.run(
            watch,
            args.interval,
            health_box.systemd_active(args.unit),
            stop,
            lambda text: print(text, flush=True),
            args.looks,
        )
    finally:
        lines.close()
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def _cmd_llama_health_watch(args: argparse.Namespace) -> int:
    """Watch a running llama-server: stalls (its /metrics silent while /health answers, or requests
    running with no decode) and new xe events -> evidence, a restart the policy allows, a report."""
    from ..common.sysroot import SysRoot
    from ..prove.openai_api import ApiError, base_url, read_key_file
    from ..vllm import health_box

    try:
        url = base_url(args.url)
        key = read_key_file(args.api_key_file) if args.api_key_file else None
    except (ApiError, ValueError) as e:
        error(f"arcops: {e}")
        return 2
    # llama-server asks the key for /metrics, not for /health.
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    sysroot = SysRoot(args.root)
    return watch_box(
        args,
        url,
        sysroot,
        health_box.devcoredump_taker(sysroot),
        fetch=health_box.metrics_fetch(headers),
        server="llama-server",
        alive=health_box.health_route(url),
    )


def add_llama(sub) -> None:
    p = sub.add_parser(
        "health-watch",
        help="while llama-server is up: on a stall or a new xe event, take evidence, restart within "
        "limits, report",
    )
    p.add_argument(
        "--url",
        default="http://127.0.0.1:8080",
        help="llama-server's address, started with --metrics (default http://127.0.0.1:8080)",
    )
    p.add_argument(
        "--api-key-file",
        metavar="FILE",
        help="the server's API key file, when it has one (its /metrics asks for the key)",
    )
    p.add_argument(
        "--report-dir",
        default=LLAMA_REPORT_DIR,
        metavar="D",
        help=f"where health reports, restarts and evidence go (default {LLAMA_REPORT_DIR})",
    )
    p.add_argument("--root", default="/", help="root to read /sys under (fixture trees)")
    add_options(p, "arcops-llama-server")
    p.set_defaults(func=_cmd_llama_health_watch)
