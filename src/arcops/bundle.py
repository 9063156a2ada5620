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

import re
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .checksum import sha256_file
from .debs import control_fields
from .firmware import FirmwareError, blob_version

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
) -> Bundle:
    """Read the bundle's version, packages (of one flavour) and firmware, with checksums."""
    if flavour not in FLAVOURS:
        raise BundleError(f"unknown flavour {flavour!r}: use one of {', '.join(FLAVOURS)}")
    tree = top / FLAVOURS[flavour]
    if not tree.is_dir():
        raise BundleError(f"{top}: has no {FLAVOURS[flavour]}/ folder")
    version = (top / "VERSION").read_text().strip().splitlines()[0].strip()
    runtime = [re.compile(p) for p in runtime_patterns]
    platforms = set(firmware_platforms)

    debs = []
    for deb in sorted(tree.rglob("*.deb")):
        fields = control_fields(deb, "Package", "Version", "Architecture")
        debs.append((deb, fields))
    images = sorted({m["release"] for _, f in debs if (m := _IMAGE_RE.match(f["Package"]))})
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
    with tarfile.open(tarball) as tar:
        try:
            tar.extractall(dest, filter="data")
        except TypeError:  # Python without extraction filters
            tar.extractall(dest)


def make_lock(tarball: str | Path, flavour: str, **scan_args) -> dict:
    """The lock for a real tarball: its sha256 plus every package's and firmware file's."""
    tarball = Path(tarball)
    if not tarball.is_file():
        raise BundleError(f"{tarball}: no such file")
    digest = sha256_file(tarball)
    with tempfile.TemporaryDirectory(prefix="arcops-bundle-") as tmp:
        try:
            _extract(tarball, Path(tmp))
        except (tarfile.TarError, OSError) as e:
            raise BundleError(f"{tarball}: cannot unpack: {e}") from e
        bundle = scan(top_folder(Path(tmp)), flavour, **scan_args)
    return {"format": LOCK_FORMAT, "installer": {"file": tarball.name, "sha256": digest}, **bundle.as_dict()}


def verify(top: Path, lock: dict, **scan_args) -> Bundle:
    """Scan an unpacked bundle and refuse anything that differs from the lock."""
    if lock.get("format") != LOCK_FORMAT:
        raise BundleError(
            f"lock format {lock.get('format')!r} is not {LOCK_FORMAT}: re-run `arcops bundle lock`"
        )
    bundle = scan(top, lock["flavour"], **scan_args)
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
