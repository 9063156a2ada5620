"""The ``arcops`` command: thin argument handling over the helper modules."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

from . import __version__, allocprobe, bundle, debrepack, facts, firmware, grub, journal, llama_source
from .debs import DebError
from .inputs import open_input, read_bytes
from .outputs import OutputError, output_file, write_atomic
from .pcie import PCI_DEVICES
from .report import print_json, print_table
from .sysroot import SysRoot

GPU_COLUMNS = [
    "address",
    "device_id",
    "model",
    "driver",
    "render",
    "numa_node",
    "bar2_mib",
    "slot_link",
    "guc_loaded",
]


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _link_text(link: dict | None) -> str | None:
    if not link or link.get("width") is None:
        return None
    text = f"{link['speed_gts']:g}GT/s x{link['width']}"
    return text + (f" (max {link['max_speed_gts']:g}GT/s x{link['max_width']})" if link["downgraded"] else "")


def _simulated_banner(data: dict) -> None:
    if data["simulated"]:
        print(f"SIMULATED hardware view from {data['root']}")


def _sysroot(args: argparse.Namespace) -> SysRoot:
    root = SysRoot(args.root)
    root.check()
    return root


def _cmd_facts(args: argparse.Namespace) -> int:
    data = facts.collect(_sysroot(args), args.disk)
    if args.json:
        print_json(data)
        return 0
    _simulated_banner(data)
    print_table([{"fact": k, "value": v} for k, v in data["host"].items()], ["fact", "value"])
    print()
    rows = [{**g, "slot_link": _link_text(g["link"])} for g in data["gpus"]]
    print_table(rows, GPU_COLUMNS)
    print(f"\ndisplay GPU: {data['display_gpu'] or 'none of these (or no display)'}")
    for path, gib in data["free_gib"].items():
        print(f"free for {path}: {gib} GiB")
    return 0


def _cmd_gpus(args: argparse.Namespace) -> int:
    """Exit 1 when there is no Intel GPU: a box without one cannot serve, and scripts ask this."""
    root = _sysroot(args)
    data = facts.collect(root)
    if args.json:
        print_json({k: data[k] for k in ("root", "simulated", "gpus", "display_gpu")})
    else:
        _simulated_banner(data)
        if data["gpus"]:
            print_table([{**g, "slot_link": _link_text(g["link"])} for g in data["gpus"]], GPU_COLUMNS)
    if not data["gpus"]:
        print(f"arcops: no Intel GPU found in {root.path(PCI_DEVICES)}", file=sys.stderr)
        return 1
    return 0


def _cmd_firmware_version(args: argparse.Namespace) -> int:
    try:
        found = firmware.blob_version(args.path)
    except firmware.FirmwareError as e:
        print(f"arcops: {e}", file=sys.stderr)
        return 2
    if args.json:
        print_json(found.as_dict())
    else:
        print(found.version)
    return 0


def _cmd_guc_loaded(args: argparse.Namespace) -> int:
    """GuC versions the driver loaded, from a kernel log file or this boot's journal."""
    if args.journal_file:
        with open_input(args.journal_file, "kernel log") as raw:  # streamed: logs can be large
            loads = firmware.loaded_from_journal(io.TextIOWrapper(raw, encoding="utf-8", errors="replace"))
    else:
        loads = firmware.loaded_from_journal(journal.kernel_lines())
    rows = [vars(fw) for fw in loads.values()]
    if args.json:
        print_json(rows)
    else:
        print_table(rows, ["address", "gt", "kind", "file", "version"])
    return 0


def _cmd_bundle_lock(args: argparse.Namespace) -> int:
    try:
        if args.output:
            output_file(args.output, "lock file (-o)")
        lock = bundle.make_lock(args.tarball, args.flavour)
    except (bundle.BundleError, DebError, OutputError) as e:
        print(f"arcops: {e}", file=sys.stderr)
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
        print(f"arcops: {e}", file=sys.stderr)
        return 2
    print(f"bundle {found.version} matches {args.lock}")
    return 0


def _cmd_boot_entry(args: argparse.Namespace) -> int:
    entry = grub.boot_entry(_sysroot(args), args.release, args.grub_cfg).as_dict()
    if args.json:
        print_json(entry)
    else:
        print_table([{"fact": k, "value": v} for k, v in entry.items()], ["fact", "value"])
    return 0 if entry["bootable"] else 1


def _cmd_debrepack(args: argparse.Namespace) -> int:
    try:
        reports = debrepack.repack_all(args.debs, args.output)
    except debrepack.RepackError as e:
        print(f"arcops: {e}", file=sys.stderr)
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


def _cmd_llama_source(args: argparse.Namespace) -> int:
    try:
        result = llama_source.apply(args.source, llama_source.shipped_helper(), check=args.check).as_dict()
    except (llama_source.SourceMismatch, OSError) as e:
        print(f"arcops: {e}", file=sys.stderr)
        return 2
    if args.json:
        print_json(result)
        return 0
    if result["path"] == "upstream":
        print(f"upstream Level Zero allocation path ({', '.join(result['evidence'])}); source left as is")
        for where in result["unrouted"]:
            print(f"  still sycl::malloc_device: {where}")
    elif result["changed"]:
        verb = "would route" if args.check else "routed"
        print(f"arcops change: {verb} {len(result['sites'])} call(s) through {llama_source.HELPER}")
        for site in result["sites"]:
            print(f"  {site['file']}:{site['line']}: {site['before']}")
    else:
        print("arcops change already applied")
    print("cmake: " + " ".join(result["cmake_args"]))
    return 0


def _cmd_alloc_probe_verdict(args: argparse.Namespace) -> int:
    try:
        text = sys.stdin.buffer.read() if args.report == "-" else read_bytes(args.report, "probe report")
        found = allocprobe.verdict(allocprobe.parse(text), args.max_host_ram_fraction)
    except (allocprobe.ProbeError, OSError, ValueError) as e:
        print(f"arcops: {e}", file=sys.stderr)
        return 2
    if args.json:
        print_json(found.as_dict())
    else:
        print("\n".join(found.summary()))
        print("verdict: " + ("ok" if found.ok else "FAILED"))
    return 0 if found.ok else 1


def _cmd_vllm_render(args: argparse.Namespace) -> int:
    from . import host, role_vars, vllm_spec

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
        print(f"arcops: host RAM figure for the check: {figure}", file=sys.stderr)
        try:
            spec = vllm_spec.render(settings, mem)
        except vllm_spec.SpecError as e:
            required = tuple(f"{key} is required" for key in unread)  # already said: unreadable
            problems += [p for p in e.problems if not (unread and p.startswith(required))]
        if problems:
            raise vllm_spec.SpecError(problems)
    except (ValueError, OSError) as e:  # SpecError is a ValueError
        print(f"arcops: {e}", file=sys.stderr)
        return 2
    print(json.dumps(spec, indent=2))
    return 0


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def _cmd_watchdog(args: argparse.Namespace) -> int:
    """Start the spec's vLLM container under the xe watchdog (exit codes: arcops.watchdog)."""
    import signal

    from . import docker_api, watchdog

    try:
        spec = watchdog.load_spec(args.spec)
        engine = docker_api.Engine(args.docker_host)
    except (watchdog.SpecError, docker_api.DockerError) as e:
        print(f"arcops: {e}", file=sys.stderr)
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
    dog = watchdog.Watchdog(spec, engine, options, sysroot=SysRoot(args.sysfs_root))
    handlers = {
        s: signal.signal(s, lambda signum, _frame: dog.request_stop(signum))
        for s in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        return dog.run()
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


class _Parser(argparse.ArgumentParser):
    """Usage errors on one line (exit 2), naming the command and pointing at its --help."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _number(text: str, zero_ok: bool) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        raise argparse.ArgumentTypeError(f"{text} is not a {'' if zero_ok else 'positive, '}finite number")
    return value


def _finite(text: str) -> float:
    return _number(text, zero_ok=False)


def _seconds(text: str) -> float:
    return _number(text, zero_ok=True)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="arcops", description="Facts and checks for Intel Arc inference boxes.")
    parser.add_argument("--version", action="version", version=f"arcops {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def with_root(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument(
            "--root", default="/", help="filesystem root to read sysfs/procfs under (fixture trees)"
        )
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")
        return p

    p = with_root(sub.add_parser("facts", help="host, GPUs, PCIe links, loaded GuC, free disk"))
    p.add_argument("--disk", action="append", default=[], metavar="PATH", help="report free space for PATH")
    p.set_defaults(func=_cmd_facts)

    p = with_root(sub.add_parser("gpus", help="Intel GPUs, their drivers, slot links and loaded GuC"))
    p.set_defaults(func=_cmd_gpus)

    p = sub.add_parser("firmware-version", help="version in a GuC/HuC blob's header (.bin or .bin.zst)")
    p.add_argument("path")
    p.add_argument("--json", action="store_true", help="print JSON (layout, major, minor, patch, build)")
    p.set_defaults(func=_cmd_firmware_version)

    p = sub.add_parser("guc-loaded", help="GuC/HuC versions the xe driver logged loading (kernel journal)")
    p.add_argument("--journal-file", metavar="FILE", help="read these kernel log lines instead of journalctl")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_cmd_guc_loaded)

    p = sub.add_parser("bundle", help="Intel offline installer bundles: lock and verify")
    bsub = p.add_subparsers(dest="bundle_command", required=True, parser_class=_Parser)
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

    p = sub.add_parser(
        "llama-source",
        help="llama.cpp source: detect its Level Zero allocation path, or route allocations through arcops'",
    )
    p.add_argument("source", help="llama.cpp source tree (changed in place unless --check)")
    p.add_argument("--check", action="store_true", help="report what would change; write nothing")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_llama_source)

    p = sub.add_parser(
        "alloc-probe-verdict", help="judge arcops-alloc-probe JSON (exit 0 ok, 1 failed, 2 bad input)"
    )
    p.add_argument("report", help="the probe's JSON output, or - for standard input")
    p.add_argument(
        "--max-host-ram-fraction",
        type=float,
        default=allocprobe.DEFAULT_MAX_FRACTION,
        help="host RAM a Level Zero allocation may cost, as a fraction of its size (default 0.01)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_alloc_probe_verdict)

    p = sub.add_parser("vllm", help="the vLLM container the vllm_service role deploys")
    vsub = p.add_subparsers(dest="vllm_command", required=True, parser_class=_Parser)
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
        type=_finite,
        metavar="N",
        help="host MemTotal (GiB) for the RAM check (default: this machine's /proc/meminfo)",
    )
    q.set_defaults(func=_cmd_vllm_render)

    p = sub.add_parser(
        "watchdog",
        help="start the vLLM container; restart it on xe hangs before it is ready",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Start the spec's container (created by the vllm_service role) and follow the kernel\n"
        "journal for xe hang events until vLLM logs 'Application startup complete.'. On an xe\n"
        "event: py-spy stacks, devcoredumps copied and freed, container stopped and started again.",
        epilog="exit codes:\n"
        "  0  ready (then stopped by SIGTERM/SIGINT, or --until-ready); stopped by a signal before ready\n"
        "  1  crash: the container exited on its own with no xe event (before or after ready)\n"
        "  2  usage, spec or engine error\n"
        "  3  xe events on every attempt\n"
        "  4  neither ready nor an xe event within --start-timeout (container stopped, not retried)\n"
        "A JSON report of every run goes to --report-dir as <UTC timestamp>.json and latest.json.",
    )
    p.add_argument("--spec", required=True, metavar="FILE", help="the container spec JSON the role wrote")
    p.add_argument(
        "--docker-host",
        metavar="URL",
        help="engine socket, unix:///run/docker.sock style (default: $DOCKER_HOST, else "
        "unix:///var/run/docker.sock)",
    )
    p.add_argument("--attempts", type=_positive_int, default=3, help="starts at most (default 3)")
    p.add_argument(
        "--start-timeout", type=_finite, default=900.0, metavar="S", help="seconds to ready (default 900)"
    )
    p.add_argument(
        "--report-dir",
        default="/var/lib/arcops/vllm/starts",
        metavar="D",
        help="where the JSON reports, stacks and devcoredumps go (default /var/lib/arcops/vllm/starts)",
    )
    p.add_argument(
        "--dump-settle",
        type=_seconds,
        default=3.0,
        metavar="S",
        help="seconds to wait after an xe event for more events and the devcoredump (default 3)",
    )
    p.add_argument("--py-spy", default="py-spy", metavar="PATH", help="py-spy command (default py-spy)")
    p.add_argument("--sysfs-root", default="/", help="root to read /sys and /proc under (fixture trees)")
    p.add_argument(
        "--warm-restart",
        action="store_true",
        help="after a ready start on cold caches, restart once so vLLM sizes its KV cache warm",
    )
    p.add_argument(
        "--until-ready", action="store_true", help="exit 0 once ready, leaving the container running"
    )
    p.set_defaults(func=_cmd_watchdog)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("arcops: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (| head): nothing more to say
        return 0
    except ValueError as e:  # the helpers' own refusals (InputError, SpecError, ...) are ValueErrors
        print(f"arcops: {_one_line(e)}", file=sys.stderr)
        return 2
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"arcops {args.command}: {where}{e.strerror or _one_line(e)}", file=sys.stderr)
        return 2
    except RecursionError:
        print(f"arcops {args.command}: input nested too deeply", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
