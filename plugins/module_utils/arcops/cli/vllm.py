"""arcops vllm render, watchdog: the vLLM container spec and its start watchdog."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..common.report import print_json, print_table
from ..common.sysroot import SysRoot
from ..vllm.watch_options import DEFAULT_REPORT_DIR, WatchdogOptions
from . import health
from .common import error, finite, positive_int, seconds

WATCHDOG = WatchdogOptions()


def _cmd_vllm_render(args: argparse.Namespace) -> int:
    from ..box import host
    from ..vllm import role_vars, vllm_spec

    try:
        given: dict = {}
        for path in args.vars:
            given.update({str(k): v for k, v in role_vars.load(path).items()})
        for n, item in enumerate(args.extra, 1):
            key, sep, value = item.partition("=")
            if not sep or not key:  # not echoed: it may be a secret
                raise ValueError(f"-e number {n} is not key=value: give variables as key=value")
            try:
                given[key] = json.loads(value)
            except ValueError:
                given[key] = value
        extra = {item.partition("=")[0] for item in args.extra}
        settings, problems, unread = role_vars.vllm_settings(given, extra)
        if args.host_mem_gib is not None:
            mem, figure = args.host_mem_gib, f"--host-mem-gib {args.host_mem_gib:g}"
        else:
            mem = host.mem_total_gib(SysRoot("/"))
            figure = f"this machine's MemTotal, {mem:.1f} GiB" if mem else "none (no MemTotal): no RAM check"
        error(f"arcops: host RAM figure for the check: {figure}")
        nodes = [n for n in args.render_nodes.split(",") if n] if args.render_nodes is not None else None
        pairs = arc_gpus = None
        if nodes is None:  # this machine: its Arc GPUs stand for empty devices, and P2P is judged on it
            from ..vllm import peer_access

            nodes, pairs, arc_gpus = peer_access.this_box(bool(settings.get("devices")))
        try:
            spec = vllm_spec.render(settings, mem, nodes, pairs, arc_gpus)
            if spec["p2p"]["warning"]:
                error(f"arcops: warning: {spec['p2p']['warning']}")
        except vllm_spec.SpecError as e:
            required = tuple(f"{key} is required" for key in unread)  # already said: unreadable
            problems += [p for p in e.problems if not (unread and p.startswith(required))]
        if problems:
            raise vllm_spec.SpecError(problems)
    except vllm_spec.SpecError as e:  # every problem on its own line: fixed in one pass
        for n, problem in enumerate(e.problems):
            error(f"arcops: {problem}" if n == 0 else problem)
        return 2
    except (ValueError, OSError) as e:
        error(f"arcops: {e}")
        return 2
    print(json.dumps(spec, indent=2))
    return 0


def _cmd_vllm_startlog(args: argparse.Namespace) -> int:
    from ..common.inputs import open_input
    from ..vllm import startlog

    with open_input(args.log, "start log") as f:
        found = startlog.read(line.decode("utf-8", errors="replace") for line in f)
    if args.json:
        print_json(found)
    else:
        rows = [
            {"what": k, "value": v if not isinstance(v, list) else ", ".join(v)} for k, v in found.items()
        ]
        print_table(rows, ["what", "value"])
    return 0 if found["ready"] else 1


def _cmd_watchdog(args: argparse.Namespace) -> int:
    """Start the spec's vLLM container under the xe watchdog (exit codes: arcops.vllm.watchdog)."""
    import signal

    from ..vllm import docker_api, watchdog

    try:
        spec = watchdog.load_spec(args.spec)
        engine = docker_api.Engine(args.docker_host)
    except (watchdog.SpecError, docker_api.DockerError) as e:
        error(f"arcops: {e}")
        return watchdog.EXIT_ERROR
    options = watchdog.Options(
        report_dir=Path(args.report_dir),
        attempts=args.attempts,
        start_timeout=args.start_timeout,
        dump_settle=args.dump_settle,
        py_spy=args.py_spy,
        warm_restart=args.warm_restart,
        until_ready=args.until_ready,
    )
    dog = watchdog.Watchdog(spec, engine, options, sysroot=SysRoot(args.root))
    handlers = {
        s: signal.signal(s, lambda signum, _frame: dog.request_stop(signum))
        for s in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        return dog.run()
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def _cmd_health_watch(args: argparse.Namespace) -> int:
    """Watch a ready vLLM: stalls and new xe events -> evidence, a restart the policy allows, a report."""
    from ..vllm import docker_api, health_box, vllm_spec, watchdog

    try:
        spec = watchdog.load_spec(args.spec)
    except watchdog.SpecError as e:
        error(f"arcops: {e}")
        return 2
    try:
        url = vllm_spec.endpoint(spec)["url"]
        engine = docker_api.Engine(args.docker_host)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        print(
            f"arcops: spec {args.spec}: no port or argv to reach vLLM at (write it with the role)",
            file=sys.stderr,
        )
        return 2
    except docker_api.DockerError as e:
        error(f"arcops: {e}")
        return 2
    sysroot = SysRoot(args.root)
    evidence = health_box.evidence_taker(engine, spec["name"], sysroot, args.py_spy)
    return health.watch_box(args, url, sysroot, evidence)


def _box_options(p: argparse.ArgumentParser, reports: str) -> None:
    """What the watchdog and the health watch both take: the spec, the engine, where their
    reports go, py-spy and the root /sys and /proc are read under."""
    p.add_argument("--spec", required=True, metavar="FILE", help="the container spec JSON the role wrote")
    p.add_argument(
        "--docker-host",
        metavar="URL",
        help="engine socket, unix:///run/docker.sock style (default: $DOCKER_HOST, else "
        "unix:///var/run/docker.sock)",
    )
    p.add_argument(
        "--report-dir",
        default=DEFAULT_REPORT_DIR,
        metavar="D",
        help=f"where {reports} go (default {DEFAULT_REPORT_DIR})",
    )
    p.add_argument("--py-spy", default="py-spy", metavar="PATH", help="py-spy command (default py-spy)")
    p.add_argument("--root", default="/", help="root to read /sys and /proc under (fixture trees)")
    p.add_argument("--sysfs-root", dest="root", help=argparse.SUPPRESS)  # the old name, for one release


def add(sub) -> None:
    vsub = sub
    q = vsub.add_parser(
        "render", help="print the container spec for vllm_service_* variables as JSON (exit 2: refused)"
    )
    q.add_argument(
        "--vars",
        action="append",
        default=[],
        metavar="FILE",
        help="YAML or JSON vars file with vllm_service_* variables (others ignored; later files win)",
    )
    q.add_argument(
        "-e",
        dest="extra",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a variable, as ansible -e (VALUE is JSON when it parses, else a string); wins over --vars",
    )
    q.add_argument(
        "--host-mem-gib",
        type=finite,
        metavar="N",
        help="host MemTotal (GiB) for the RAM check (default: this machine's /proc/meminfo)",
    )
    q.add_argument(
        "--render-nodes",
        metavar="NODE,...",
        help="render nodes that empty vllm_service_devices stand for (default: this machine's Arc GPUs)",
    )
    q.set_defaults(func=_cmd_vllm_render)
    q = vsub.add_parser(
        "startlog",
        help="what a saved vLLM start log says: ready or not, seconds, KV cache tokens, weights; "
        "exit 1 when it never became ready",
    )
    q.add_argument("log", help="a vLLM start log (journalctl -u arcops-vllm -o cat, docker logs, ...)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=_cmd_vllm_startlog)

    p = vsub.add_parser(
        "watchdog", help="start the vLLM container; restart it on xe hangs before it is ready"
    )
    _box_options(p, "the JSON reports, stacks and devcoredumps")
    p.add_argument(
        "--attempts",
        type=positive_int,
        default=WATCHDOG.attempts,
        help=f"starts at most (default {WATCHDOG.attempts})",
    )
    p.add_argument(
        "--start-timeout",
        type=finite,
        default=WATCHDOG.start_timeout,
        metavar="S",
        help=f"seconds to ready (default {WATCHDOG.start_timeout:g})",
    )
    p.add_argument(
        "--dump-settle",
        type=seconds,
        default=WATCHDOG.dump_settle,
        metavar="S",
        help="seconds to wait after an xe event for more events and the devcoredump "
        f"(default {WATCHDOG.dump_settle:g})",
    )
    p.add_argument(
        "--warm-restart",
        action="store_true",
        help="after a ready start on cold caches, restart once so vLLM sizes its KV cache warm",
    )
    p.add_argument(
        "--until-ready", action="store_true", help="exit 0 once ready, leaving the container running"
    )
    p.set_defaults(func=_cmd_watchdog)

    p = vsub.add_parser(
        "health-watch",
        help="after start-up: on a stall or a new xe event, take evidence, restart within limits, report",
    )
    _box_options(p, "health reports, restarts and evidence")
    health.add_options(p, "arcops-vllm")
    p.set_defaults(func=_cmd_health_watch)
