"""arcops operate diag: one tarball with what is needed to understand a misbehaving box, so nobody has to
walk its owner through the field report's manual steps.

What goes in (each entry in manifest.json with how it went):
- commands, each with a timeout: kernel, this boot's and the previous boot's kernel journal,
  the arcops services' status and bounded logs, apt holds and installed packages,
  `lspci -vvv` of Intel devices, free memory, the container engine's images and the vLLM
  container's inspect;
- arcops' own readers: facts and GPUs, GPU memory per card, the metrics, xe events per card of
  this boot and the previous one (counted from the journals above);
- files: every stage's record and state, the vLLM spec and start reports (stacks beside them),
  verify results, GRUB's defaults and saved entry, the kernel command line, apt pins, and per card the xe
  driver's sensors (hwmon: power, energy, temperatures, fans) and GT frequencies with their
  throttle reasons;
- devcoredumps: copied, then freed (the kernel keeps only one per device, for five minutes).

A command that is missing, fails or times out is recorded, not fatal. Every text is redacted
(arcops.operate.redact): the box's secret files are never read into the bundle, and their values
are scrubbed from everything else. --root reads files under a fixture tree; commands run as
they are found on PATH.
"""

from __future__ import annotations

import contextlib
import glob
import io
import json
import os
import platform
import subprocess
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..box import drm_memory, facts, gpu_power, xe_events
from ..common.outputs import OutputError, sync_dir
from ..common.prometheus_text import render
from ..common.records import FACT_DIR, STATE_ROOT, read_published
from ..common.sysroot import SysRoot
from ..common.times import utc_iso, utc_stamp
from ..vllm import evidence
from . import metrics
from .redact import SECRET_PATHS, Redactor, secret_values

TIMEOUT = 30.0
MAX_OUTPUT = 64 * 2**20  # per command or file; more is cut, and the manifest says so
LOG_LINES = "5000"
UNITS = (
    "arcops-vllm.service",
    "arcops-vllm-health.service",
    "arcops-metrics.service",
    "arcops-llama-server.service",
    "docker.service",
)

COMMANDS: list[tuple[str, list[str]]] = [
    ("system/uname.txt", ["uname", "-a"]),
    ("system/free.txt", ["free", "-b"]),
    ("journal/kernel-this-boot.log", ["journalctl", "-k", "-b", "0", "-o", "short-iso", "--no-pager"]),
    ("journal/kernel-previous-boot.log", ["journalctl", "-k", "-b", "-1", "-o", "short-iso", "--no-pager"]),
    *[
        (
            f"journal/{unit.removesuffix('.service')}.log",
            ["journalctl", "-u", unit, "-b", "0", "-n", LOG_LINES, "-o", "short-iso", "--no-pager"],
        )
        for unit in UNITS
    ],
    ("services/status.txt", ["systemctl", "status", "--no-pager", "--lines=50", *UNITS]),
    ("packages/holds.txt", ["apt-mark", "showhold"]),
    ("packages/installed.txt", ["dpkg-query", "-W", "-f", "${Package} ${Version} ${db:Status-Status}\\n"]),
    ("pci/intel-lspci.txt", ["lspci", "-vvv", "-d", "8086:"]),
    ("container/images.txt", ["docker", "images", "--digests", "--no-trunc"]),
]
VLLM_SPEC = "/etc/arcops/vllm/spec.json"
FILE_GLOBS = [
    f"{FACT_DIR}/arcops*.fact",
    f"{STATE_ROOT}/*/state.json",
    f"{STATE_ROOT}/vllm/starts/*",
    f"{STATE_ROOT}/verify/*",
    VLLM_SPEC,
    "/etc/default/grub",
    # GRUB's saved default, read as a file: `grub-editenv list` creates a missing grubenv.
    "/boot/grub/grubenv",
    "/etc/default/grub.d/*",
    "/proc/cmdline",
    "/etc/os-release",
    "/etc/apt/preferences.d/*",
]
# Per card (its PCI address): the xe driver's sensors and GT frequencies.
CARD_GLOBS = [
    "hwmon/hwmon*/name",
    "hwmon/hwmon*/power*_input",
    "hwmon/hwmon*/power*_crit",
    "hwmon/hwmon*/power*_max",
    "hwmon/hwmon*/energy*_input",
    "hwmon/hwmon*/temp*_input",
    "hwmon/hwmon*/temp*_label",
    "hwmon/hwmon*/fan*_input",
    "hwmon/hwmon*/in*_input",
    "tile*/gt*/freq0/*_freq",
    "tile*/gt*/freq0/throttle/*",
]


@dataclass
class Entry:
    name: str  # path in the bundle
    source: str  # the command line or the path read
    result: str  # ok | failed | missing | timeout | unreadable | truncated
    seconds: float = 0.0
    exit_code: int | None = None
    bytes: int = 0
    note: str = ""


class Bundle:
    """Entries in memory until written: redacted as they are added."""

    def __init__(self, redactor: Redactor, secret_files: list[str] | None = None):
        self.redactor = redactor
        self.secret_files = list(secret_files or SECRET_PATHS)  # never read into the bundle
        self.entries: list[Entry] = []
        self.files: dict[str, bytes] = {}

    def add(self, entry: Entry, data: bytes | str | None, binary: bool = False) -> None:
        if data is not None:
            if isinstance(data, str):
                data = self.redactor.text(data).encode()
            elif binary:
                data = self.redactor.data(data)
            else:
                data = self.redactor.text(data.decode("utf-8", errors="replace")).encode()
            if len(data) > MAX_OUTPUT:
                data, entry.result = data[:MAX_OUTPUT], "truncated"
            self.files[entry.name] = data
            entry.bytes = len(data)
        self.entries.append(entry)


def run_command(bundle: Bundle, name: str, argv: list[str], timeout: float) -> str | None:
    """Run argv (never through a shell); its stdout goes in, stderr in the manifest's note."""
    source = " ".join(argv)
    t0 = time.monotonic()
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False
        )
    except FileNotFoundError:
        bundle.add(Entry(name, source, "missing", note=f"{argv[0]} not found"), None)
        return None
    except subprocess.TimeoutExpired as e:
        entry = Entry(
            name, source, "timeout", round(time.monotonic() - t0, 3), note=f"killed after {timeout:g} s"
        )
        bundle.add(entry, e.stdout or b"")
        return None
    except OSError as e:
        bundle.add(Entry(name, source, "failed", note=e.strerror or str(e)), None)
        return None
    note = bundle.redactor.text(done.stderr.decode("utf-8", errors="replace").strip())[-500:]
    entry = Entry(
        name,
        source,
        "ok" if done.returncode == 0 else "failed",
        round(time.monotonic() - t0, 3),
        done.returncode,
        note=note,
    )
    bundle.add(entry, done.stdout)
    return done.stdout.decode("utf-8", errors="replace") if done.returncode == 0 else None


# Where a record names a file that holds a key (the vLLM endpoint's api_key_file, the spec's
# env_file): a key moved out of its default place is still known, and its file still left out.
_KEY_FILE_FIELDS = ("api_key_file", "api_key_env_file", "env_file")


def secret_paths(root: SysRoot, records: dict) -> list[str]:
    """The box's key files: the default places and every one its records or the vLLM spec name."""
    found = set(SECRET_PATHS)

    def walk(value) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key in _KEY_FILE_FIELDS and isinstance(inner, str) and inner.startswith("/"):
                    found.add(inner)
                else:
                    walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(records)
    with contextlib.suppress(ValueError):
        walk(json.loads(root.read(VLLM_SPEC) or "null"))
    return sorted(found)


def _is_secret(root: SysRoot, path: Path, secret_files: list[str]) -> bool:
    return any(path == root.path(p) for p in secret_files)


def add_files(bundle: Bundle, root: SysRoot, patterns: list[str], prefix: str = "files") -> None:
    """Each file the patterns match, once (two patterns may match the same file)."""
    seen: set[Path] = set()
    for pattern in patterns:
        for found in sorted(glob.glob(str(root.path(pattern)))):
            path = Path(found)
            if path in seen or not path.is_file() or _is_secret(root, path, bundle.secret_files):
                continue
            seen.add(path)
            host_path = "/" + str(path.relative_to(root.path("/")))
            name = f"{prefix}{host_path}"
            try:
                with open(path, "rb") as f:
                    data = f.read(MAX_OUTPUT + 1)
            except OSError as e:
                bundle.add(Entry(name, host_path, "unreadable", note=e.strerror or str(e)), None)
                continue
            bundle.add(Entry(name, host_path, "ok"), data)


def add_devcoredumps(bundle: Bundle, root: SysRoot, free: bool) -> None:
    """Each card's devcoredump, taken as the watchdog takes them (arcops.vllm.evidence: copied
    whole, then freed so the next hang can leave one), into the bundle."""
    with tempfile.TemporaryDirectory(prefix="arcops-diag-") as tmp:
        for dump in evidence.take_devcoredumps(root, Path(tmp), free=free):
            name = f"devcoredump/{dump['card']}.data"
            source = f"/sys/class/drm/{dump['card']}/device/devcoredump/data"
            if "error" in dump:
                bundle.add(Entry(name, source, "unreadable", note=dump["error"]), None)
                continue
            note = f"device {dump['device']}" + (", freed" if dump["freed"] else "")
            bundle.add(Entry(name, source, "ok", note=note), Path(dump["file"]).read_bytes(), binary=True)


def _json(value) -> str:
    return json.dumps(value, indent=1, sort_keys=True, default=str) + "\n"


def collect(
    root: SysRoot, timeout: float = TIMEOUT, free_devcoredumps: bool = True, now: float | None = None
) -> Bundle:
    now = time.time() if now is None else now
    records = read_published(root.path(FACT_DIR))
    secret_files = secret_paths(root, records)
    secrets: list[str] = []
    for path in secret_files:
        text = root.read(path)
        if text:
            secrets += secret_values(text)
    bundle = Bundle(Redactor(secrets), secret_files)

    outputs = {name: run_command(bundle, name, argv, timeout) for name, argv in COMMANDS}
    vllm = records.get("vllm_service") if isinstance(records.get("vllm_service"), dict) else {}
    if vllm.get("container"):
        run_command(
            bundle, "container/vllm-inspect.json", ["docker", "inspect", str(vllm["container"])], timeout
        )

    box = facts.collect(root)
    bundle.add(Entry("arcops/facts.json", "arcops box facts", "ok"), _json(box))
    found, skipped = drm_memory.clients(root)
    memory = {"cards": drm_memory.per_card(found), "unreadable_processes": skipped}
    bundle.add(Entry("arcops/gpu-memory.json", "arcops box gpu-memory", "ok"), _json(memory))
    journals = {
        boot: None if (text := outputs.get(f"journal/kernel-{boot}.log")) is None else text.splitlines()
        for boot in ("this-boot", "previous-boot")
    }
    boots = {boot: None if lines is None else xe_events.count(lines) for boot, lines in journals.items()}
    bundle.add(Entry("arcops/xe-events.json", "xe events per card (from the journals)", "ok"), _json(boots))
    report = metrics.last_start_report(root, vllm.get("report_dir"))
    power = gpu_power.cards(root)
    text = render(metrics.collect(records, box, report, journals["this-boot"], now, power=power))
    bundle.add(Entry("arcops/metrics.prom", "arcops operate metrics", "ok"), text)

    add_files(bundle, root, FILE_GLOBS)
    for gpu in box["gpus"]:
        if gpu.get("driver") == "xe" and gpu.get("address"):
            device = f"/sys/bus/pci/devices/{gpu['address']}"
            add_files(bundle, root, [f"{device}/{g}" for g in CARD_GLOBS], prefix="gpu")
    add_devcoredumps(bundle, root, free_devcoredumps)
    return bundle


def write(bundle: Bundle, output: Path, now: float | None = None) -> dict:
    """The tar.gz, written beside and renamed; its manifest (also inside, first)."""
    now = time.time() if now is None else now
    top = f"arcops-diag-{platform.node() or 'box'}-{utc_stamp(now)}"
    manifest = {
        "format": 1,
        "created_at": utc_iso(now),
        "redactions": bundle.redactor.count,
        "entries": [asdict(e) for e in bundle.entries],
    }
    files = {"manifest.json": _json(manifest).encode(), **bundle.files}
    # Created exclusively, 0600 from the first byte: the partial bundle under a name nobody can
    # guess (mkstemp), the bundle by a link that fails when OUTPUT exists (never written through a
    # file or link somebody else put there).
    fd, partial_name = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=output.parent or ".")
    partial = Path(partial_name)
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
            for name, data in files.items():
                info = tarfile.TarInfo(f"{top}/{name}")
                info.size, info.mtime, info.mode = len(data), int(now), 0o600
                tar.addfile(info, io.BytesIO(data))
        with open(partial, "rb") as f:
            os.fsync(f.fileno())
        try:
            os.link(partial, output)
        except FileExistsError:
            raise OutputError(
                f"output file {output}: exists; a bundle is never written over a file"
            ) from None
    finally:
        partial.unlink(missing_ok=True)
    sync_dir(output.parent)
    return manifest
