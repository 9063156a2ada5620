"""Intel's offline installer bundle: read its layout, lock it, verify it against the lock.

The bundle (multi-arc-bmg-offline-installer-<ver>.tar.xz) unpacks to one folder with a VERSION
file and per-flavour package trees (ubuntu-24.04-server/, ubuntu-24.04-desktop/) holding .debs
in sub-folders, and firmware blobs. Package file names differ per release and are not
published, so nothing here assumes them: packages are found by walking the tree and named by
their own control data, firmware by its header.

The lock (JSON, committed to the inventory) pins the tarball's sha256 and every package's and
firmware file's sha256, name and version. Anything that differs from it is refused.
"""

from __future__ import annotations

import errno
import json
import lzma
import os
import re
import tarfile
import tempfile
import zlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..box.firmware import FirmwareError, blob_version
from ..common.checksum import sha256_file
from .debs import DebError, control_fields

FLAVOURS = {"server": "ubuntu-24.04-server", "desktop": "ubuntu-24.04-desktop"}
LOCK_FORMAT = 1

# Compute runtime packages (Level Zero loader and GPU driver, OpenCL ICD, IGC, gmmlib, ocloc).
DEFAULT_RUNTIME_PATTERNS = (
    r"libze1",
    r"libze-dev",
    r"libze-intel-gpu1",
    r"intel-level-zero-gpu.*",
    r"level-zero.*",
    r"intel-opencl-icd",
    r"libigc\d*",
    r"libigdfcl\d*",
    r"intel-igc-.*",
    r"libigdgmm\d*",
    r"intel-ocloc.*",
)
_IMAGE_RE = re.compile(r"^linux-image-(?:unsigned-)?(?P<release>\d+\.\d+.*)$")
_ABI_RE = re.compile(r"^(\d+\.\d+(?:\.\d+)?[^-]*-\d+|\d+\.\d+(?:\.\d+)?[^-]*)")
_VERSION_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+~_-]{0,63}")
_SHA256_RE = re.compile(r"[0-9a-f]{64}")
# What a real bundle holds (a few hundred files, a few GiB): far past it, the tarball is refused
# before it is unpacked.
MAX_MEMBERS = 100_000
MAX_UNPACKED_BYTES = 64 * 2**30
_FIRMWARE_RE = re.compile(r"^(?P<platform>[a-z0-9]+)_(?P<kind>guc|huc)(?:_\d+)?\.bin(?:\.zst)?$")


class BundleError(ValueError):
    """The bundle is unusable or differs from its lock; the message says how."""


@dataclass
class Package:
    path: str  # relative to the bundle's top folder
    name: str
    version: str
    arch: str
    group: str  # kernel, runtime or other
    sha256: str


@dataclass
class Firmware:
    path: str
    name: str  # file name as installed under /lib/firmware/xe
    kind: str  # GuC or HuC
    platform: str  # bmg, lnl, ...
    version: str
    sha256: str


@dataclass
class Bundle:
    version: str
    flavour: str
    kernel_release: str | None
    packages: list[Package] = field(default_factory=list)
    firmware: list[Firmware] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def top_folder(extracted: Path) -> Path:
    """The bundle's top folder: the one holding VERSION (the tarball's single root folder)."""
    if (extracted / "VERSION").is_file():
        return extracted
    tops = [p for p in extracted.iterdir() if p.is_dir() and (p / "VERSION").is_file()]
    if len(tops) != 1:
        raise BundleError(
            f"{extracted}: not an Intel offline installer (no single folder with a VERSION file)"
        )
    return tops[0]


def _version(path: Path) -> str:
    """The first line of the bundle's VERSION file: text, one version word."""
    if not path.is_file():
        raise BundleError(f"{path}: missing or not a regular file")
    try:
        lines = path.read_bytes()[:4096].decode("utf-8").strip().splitlines()
    except UnicodeDecodeError:
        raise BundleError(f"{path}: not UTF-8 text") from None
    version = lines[0].strip() if lines else ""
    if not _VERSION_RE.fullmatch(version):
        raise BundleError(f"{path}: first line {version[:80]!r} is not a version")
    return version


def kernel_abi(release: str) -> str:
    """'6.17.0-1009-intel' -> '6.17.0-1009': the part every package of that kernel names."""
    m = _ABI_RE.match(release)
    return m.group(1) if m else release


def _group(name: str, abi: str | None, runtime: list[re.Pattern]) -> str:
    if abi and name.startswith("linux-") and abi in name:
        return "kernel"
    if any(p.fullmatch(name) for p in runtime):
        return "runtime"
    return "other"


def scan(
    top: Path,
    flavour: str,
    runtime_patterns: Iterable[str] = DEFAULT_RUNTIME_PATTERNS,
    firmware_platforms: Iterable[str] = ("bmg",),
    strict: bool = True,
) -> Bundle:
    """Read the bundle's version, packages (of one flavour) and firmware, with checksums.
    strict=False keeps a package whose control data cannot be read, named "?" (verify compares
    its checksum with the lock instead)."""
    if flavour not in FLAVOURS:
        raise BundleError(f"unknown flavour {flavour!r}: use one of {', '.join(FLAVOURS)}")
    tree = top / FLAVOURS[flavour]
    if not tree.is_dir():
        raise BundleError(f"{top}: has no {FLAVOURS[flavour]}/ folder")
    version = _version(top / "VERSION")
    runtime = [re.compile(p) for p in runtime_patterns]
    platforms = set(firmware_platforms)

    debs = []
    for deb in sorted(tree.rglob("*.deb")):
        try:
            fields = control_fields(deb, "Package", "Version", "Architecture")
        except DebError as e:
            if strict:
                raise BundleError(str(e)) from None
            # verify() reports it by its checksum against the lock, the clearer message
            fields = {"Package": "?", "Version": "?", "Architecture": "?"}
        debs.append((deb, fields))
    images = sorted({m["release"] for _unused, f in debs if (m := _IMAGE_RE.match(f["Package"]))})
    if len(images) > 1:
        raise BundleError(f"{tree}: holds several kernels ({', '.join(images)}); arcops pins one")
    release = images[0] if images else None
    abi = kernel_abi(release) if release else None

    bundle = Bundle(version=version, flavour=flavour, kernel_release=release)
    for deb, f in debs:
        bundle.packages.append(
            Package(
                path=str(deb.relative_to(top)),
                name=f["Package"],
                version=f["Version"],
                arch=f["Architecture"],
                group=_group(f["Package"], abi, runtime),
                sha256=sha256_file(deb),
            )
        )
    # Firmware may sit in the flavour tree or in a top-level firmware/ folder.
    for blob in sorted({*tree.rglob("*.bin*"), *(top / "firmware").glob("*.bin*")}):
        m = _FIRMWARE_RE.match(blob.name)
        if not m or m["platform"] not in platforms:
            continue
        try:
            found = blob_version(blob)
        except FirmwareError as e:
            raise BundleError(str(e)) from e
        bundle.firmware.append(
            Firmware(
                path=str(blob.relative_to(top)),
                name=blob.name,
                kind={"guc": "GuC", "huc": "HuC"}[m["kind"]],
                platform=m["platform"],
                version=found.version,
                sha256=sha256_file(blob),
            )
        )
    return bundle


def _extract(tarball: Path, dest: Path) -> None:
    """Unpack with the data filter (no links out, no devices), within the limits, and read the
    compressed stream to its end: a CRC error or trailing garbage after the last member fails."""
    with tarfile.open(tarball) as tar:
        members = []
        total = 0
        for info in tar:
            members.append(info)
            total += info.size
            if len(members) > MAX_MEMBERS or total > MAX_UNPACKED_BYTES:
                raise BundleError(
                    f"{tarball}: holds more than {MAX_MEMBERS} files or {MAX_UNPACKED_BYTES >> 30} GiB"
                )
            if not (info.isfile() or info.isdir() or info.issym() or info.islnk()):
                raise BundleError(f"{tarball}: member {info.name} is a device or FIFO")
        _extract_members(tar, dest, members)
        stream = tar.fileobj
        while stream is not None and stream.read(1 << 20):
            pass
    _refuse_link_loops(tarball, dest)


def _refuse_link_loops(tarball: Path, dest: Path) -> None:
    """A symbolic link that never ends (a -> b -> a) is refused by name: a scan would not find
    what it stands for, and a reader that follows it would fail later with less to say."""
    for folder, dirs, files in os.walk(dest):
        for name in dirs + files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                continue
            try:
                os.path.realpath(path, strict=True)
            except OSError as e:
                if e.errno == errno.ELOOP:
                    member = os.path.relpath(path, dest)
                    raise BundleError(f"{tarball}: member {member} is a symbolic link loop") from None


def _extract_members(tar: tarfile.TarFile, dest: Path, members: list[tarfile.TarInfo]) -> None:
    """extractall with the "data" filter. Python before 3.11.4 (Debian 12 has 3.11.2) has no
    filters: the same refusals are made by hand there, before anything is written. Either way a
    refusal is a TarError, which make_lock reports as "cannot unpack"."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, members=members, filter="data")
        return
    root = os.path.realpath(dest)

    def inside(path: str) -> bool:
        return os.path.commonpath([root, os.path.realpath(path)]) == root

    for info in members:
        info.name = info.name.lstrip("/")  # as the data filter does
        target = os.path.join(root, info.name)
        if not inside(target):
            raise tarfile.TarError(f"member {info.name} lies outside the folder it unpacks into")
        if info.issym() and (
            os.path.isabs(info.linkname) or not inside(os.path.join(os.path.dirname(target), info.linkname))
        ):
            raise tarfile.TarError(f"member {info.name} links to {info.linkname}, outside the bundle")
        if info.islnk() and (os.path.isabs(info.linkname) or not inside(os.path.join(root, info.linkname))):
            raise tarfile.TarError(f"member {info.name} links to {info.linkname}, outside the bundle")
        info.mode &= 0o755  # as the data filter: no setuid, setgid or world-writable files
        info.uid = info.gid = 0
        info.uname = info.gname = ""
    tar.extractall(dest, members=members)


def make_lock(tarball: str | Path, flavour: str, **scan_args) -> dict:
    """The lock for a real tarball: its sha256 plus every package's and firmware file's."""
    tarball = Path(tarball)
    if not tarball.is_file():
        raise BundleError(f"{tarball}: no such file")
    digest = sha256_file(tarball)
    with tempfile.TemporaryDirectory(prefix="arcops-bundle-") as tmp:
        try:
            _extract(tarball, Path(tmp))
        except (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError) as e:
            raise BundleError(f"{tarball}: cannot unpack: {' '.join(str(e).split())}") from None
        bundle = scan(top_folder(Path(tmp)), flavour, **scan_args)
    return {"format": LOCK_FORMAT, "installer": {"file": tarball.name, "sha256": digest}, **bundle.as_dict()}


_ENTRY_KEYS = {
    "packages": ("path", "name", "version", "arch", "group", "sha256"),
    "firmware": ("path", "name", "kind", "platform", "version", "sha256"),
}


# Every key a lock holds (make_lock): another one is a lock of another schema, refused by name.
_LOCK_KEYS = {"format", "installer", "version", "flavour", "kernel_release", "packages", "firmware"}


def lock_problems(lock: object) -> list[str]:
    """Everything wrong with a lock's shape, each naming the field (empty: it can be used)."""
    if not isinstance(lock, dict):
        return [f"the lock is {type(lock).__name__}, not a JSON object: re-run `arcops stack bundle lock`"]
    if lock.get("format") != LOCK_FORMAT or isinstance(lock.get("format"), bool):
        return [f"lock format {lock.get('format')!r} is not {LOCK_FORMAT}: re-run `arcops stack bundle lock`"]
    problems = []
    unknown = sorted(set(lock) - _LOCK_KEYS, key=str)
    if unknown:
        problems.append(
            f"unknown key(s) {', '.join(map(repr, unknown))}: a lock of another arcops? "
            "re-run `arcops stack bundle lock`"
        )
    installer = lock.get("installer")
    if not (
        isinstance(installer, dict)
        and isinstance(installer.get("file"), str)
        and _SHA256_RE.fullmatch(str(installer.get("sha256")))
    ):
        problems.append("installer must be {file, sha256} with a 64-digit lower-case sha256")
    elif set(installer) - {"file", "sha256"}:
        problems.append(
            f"installer: unknown key(s) {', '.join(map(repr, sorted(set(installer) - {'file', 'sha256'})))}"
        )
    if not isinstance(lock.get("version"), str):
        problems.append("version must be a string")
    if lock.get("flavour") not in FLAVOURS:
        problems.append(f"flavour must be one of {', '.join(FLAVOURS)}")
    if not isinstance(lock.get("kernel_release"), str | None):
        problems.append("kernel_release must be a string or null")
    for kind, keys in _ENTRY_KEYS.items():
        entries = lock.get(kind)
        if not isinstance(entries, list):
            problems.append(f"{kind} must be a list")
            continue
        for n, entry in enumerate(entries):
            bad = [k for k in keys if not isinstance(entry, dict) or not isinstance(entry.get(k), str)]
            extra = sorted(set(entry) - set(keys), key=str) if isinstance(entry, dict) else []
            if bad:
                problems.append(f"{kind}[{n}] lacks {', '.join(bad)} (strings)")
            elif extra:
                problems.append(f"{kind}[{n}]: unknown key(s) {', '.join(map(repr, extra))}")
            elif not _SHA256_RE.fullmatch(entry["sha256"]):
                problems.append(f"{kind}[{n}].sha256 is not a 64-digit lower-case sha256")
    return problems


def load_lock(path: str | Path) -> dict:
    """A lock file, parsed and checked; BundleError naming the file and the field otherwise."""
    path = Path(path)
    if not path.is_file():
        raise BundleError(
            f"lock {path}: no such file (make it with `arcops stack bundle lock TARBALL -o {path}`)"
        )
    try:
        lock = json.loads(path.read_bytes(), parse_constant=_no_json)
    except RecursionError:
        raise BundleError(f"lock {path}: nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise BundleError(f"lock {path}: not JSON: {e}") from None
    problems = lock_problems(lock)
    if problems:
        raise BundleError(f"lock {path}: " + "; ".join(problems))
    return lock


def _no_json(constant: str) -> float:
    raise ValueError(f"{constant} is not JSON")


def verify(top: Path, lock: dict, **scan_args) -> Bundle:
    """Scan an unpacked bundle and refuse anything that differs from the lock."""
    problems = lock_problems(lock)
    if problems:
        raise BundleError("the lock cannot be used: " + "; ".join(problems))
    bundle = scan(top, lock["flavour"], strict=False, **scan_args)
    problems = []
    if bundle.version != lock["version"]:
        problems.append(f"bundle version {bundle.version}, lock says {lock['version']}")
    for kind, found, locked in (
        ("package", bundle.packages, lock["packages"]),
        ("firmware", bundle.firmware, lock["firmware"]),
    ):
        by_path = {item.path: item for item in found}
        for entry in locked:
            item = by_path.pop(entry["path"], None)
            if item is None:
                problems.append(f"{kind} {entry['path']} is in the lock but not in the bundle")
            elif item.sha256 != entry["sha256"]:
                problems.append(f"{kind} {entry['path']}: sha256 {item.sha256} differs from the lock")
        problems.extend(f"{kind} {path} is in the bundle but not in the lock" for path in sorted(by_path))
    if problems:
        raise BundleError("bundle differs from its lock: " + "; ".join(problems))
    return bundle
