#!/usr/bin/env python3
"""Build a synthetic Intel offline installer bundle for tests, in the real bundle's layout.

Tiny .debs with the real package names and versions of the stack (kernel image, modules,
headers; Level Zero, OpenCL, IGC, gmmlib) and firmware blobs with valid headers for a chosen
GuC version. The packages install marker files only, so a container can install them.

    python3 tests/helpers/bundle_builder.py OUTDIR [--kernel-release R] [--guc 70.60.0] [--version V]
        [--kernel-deb DEB]... [--runtime-deb DEB]... [--runtime-version PACKAGE=VERSION]...
prints the tarball's path. --runtime-deb ships a real package in gfxdrv/gpgpu instead of the
synthetic one of the same name (the lab ships Debian's Level Zero loader and headers, as Intel's
bundle ships its own, so llama.cpp's build finds them).
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import tarfile
import tempfile
from pathlib import Path

RUNTIME = [  # (folder, package, version, architecture)
    ("gfxdrv/base", "libigdgmm12", "22.8.2-1~24.04", "amd64"),
    ("gfxdrv/gpgpu", "libze1", "1.24.2-1~24.04", "amd64"),
    ("gfxdrv/gpgpu", "libze-intel-gpu1", "25.48.36300.8-1~24.04", "amd64"),
    ("gfxdrv/gpgpu", "intel-opencl-icd", "25.48.36300.8-1~24.04", "amd64"),
    ("gfxdrv/gpgpu", "libigc2", "2.24.8-1~24.04", "amd64"),
    ("gfxdrv/gpgpu", "libigdfcl2", "2.24.8-1~24.04", "amd64"),
    ("gfxdrv/gpgpu", "intel-ocloc", "25.48.36300.8-1~24.04", "amd64"),
    ("tools", "xpu-smi", "1.3.5-20251210", "amd64"),  # not a runtime package: never installed
]


def css_blob(version: str, payload: int = 4096) -> bytes:
    """A GuC blob with a valid CSS header (see arcops.box.firmware): the header, PAYLOAD bytes of
    code (size_dw counts header and code, as the kernel reads it), then a 256-byte RSA key."""
    major, minor, patch = (int(v) for v in version.split("."))
    header = bytearray(128)
    header_dw = 32 + 64 + 64 + 1
    struct.pack_into("<5I", header, 0, 6, header_dw, 0x10000, 0, 0x8086)
    struct.pack_into("<4I", header, 24, header_dw + payload // 4, 64, 64, 1)
    struct.pack_into("<I", header, 64, (major << 16) | (minor << 8) | patch)
    return bytes(header) + bytes(range(256)) * (payload // 256) + b"\x5a" * 256


def gsc_huc_blob(version: str, build: int = 1627) -> bytes:
    """A HuC blob in the GSC layout: $CPD directory with a HUCP.man manifest entry."""
    major, minor, patch = (int(v) for v in version.split("."))
    header = struct.pack("<II4BII", 0x44504324, 1, 2, 1, 20, 0, 0, 0)  # 20-byte CPD header v2
    entry = b"HUCP.man".ljust(12, b"\0") + struct.pack("<II4x", 64, 128)
    manifest = struct.pack("<9I4H", 4, 32, 0x10000, 0, 0x8086, 0, 32, 0, 0, major, minor, patch, build)
    blob = bytearray(header + entry)
    blob += b"\0" * (64 - len(blob)) + manifest
    return bytes(blob) + b"\0" * 256


def build_deb(out: Path, name: str, version: str, arch: str, files: dict[str, str]) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "DEBIAN").mkdir()
        (root / "DEBIAN/control").write_text(
            f"Package: {name}\nVersion: {version}\nArchitecture: {arch}\n"
            "Maintainer: arcops tests <tests@arcops.invalid>\nSection: misc\nPriority: optional\n"
            f"Description: synthetic {name} for arcops tests\n"
        )
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        deb = out / f"{name}_{version}_{arch}.deb"
        subprocess.run(
            ["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root), str(deb)],
            check=True,
            capture_output=True,
        )
    return deb


def kernel_packages(release: str) -> list[tuple[str, str, str, dict[str, str]]]:
    abi = release.rsplit("-", 1)[0] if release.count("-") >= 2 else release
    version = f"{abi}.{abi.rsplit('-', 1)[-1]}" if "-" in abi else f"{abi}-1"
    marker = f"synthetic {release}\n"
    return [
        (f"linux-image-{release}", version, "amd64", {f"boot/vmlinuz-{release}": marker}),
        (f"linux-modules-{release}", version, "amd64", {f"lib/modules/{release}/modules.order": marker}),
        (
            f"linux-modules-extra-{release}",
            version,
            "amd64",
            {f"lib/modules/{release}/kernel/drivers/gpu/drm/xe/xe.ko": marker},
        ),
        (f"linux-headers-{release}", version, "amd64", {f"usr/src/linux-headers-{release}/Makefile": marker}),
    ]


def _package_name(deb: Path) -> str:
    return subprocess.run(
        ["dpkg-deb", "--field", str(deb), "Package"], capture_output=True, text=True, check=True
    ).stdout.strip()


def _ship(deb: Path, folder: Path, shipped: dict[str, Path]) -> None:
    """Put a real .deb in FOLDER: copied the first time, hard-linked after (tar keeps one copy,
    so a bundle with a real kernel in both flavours costs its size once to build, copy and unpack)."""
    dest = folder / deb.name
    if deb.name in shipped:
        os.link(shipped[deb.name], dest)
    else:
        shutil.copy(deb, dest)
        shipped[deb.name] = dest


def build_bundle(
    out: Path,
    version: str = "26.18.8.2",
    kernel_release: str = "6.17.0-1009-intel",
    guc: str = "70.60.0",
    huc: str = "8.2.10",
    kernel_debs: list[Path] | None = None,
    runtime_debs: list[Path] | None = None,
    runtime_versions: dict[str, str] | None = None,
) -> Path:
    """Write multi-arc-bmg-offline-installer-VERSION.tar.xz into `out`; return its path.

    kernel_debs: real kernel packages to ship instead of the synthetic ones (the VM tier boots them).
    runtime_debs: real runtime packages, each instead of the synthetic package of its name.
    """
    real = {_package_name(deb): deb for deb in runtime_debs or []}
    shipped: dict[str, Path] = {}  # a real .deb is in the tarball once; the other flavour links it
    out.mkdir(parents=True, exist_ok=True)
    name = f"multi-arc-bmg-offline-installer-{version}"
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp) / name
        top.mkdir()
        (top / "VERSION").write_text(f"{version}\n")
        (top / "README.md").write_text("Synthetic Intel offline installer layout for arcops tests.\n")
        for script in ("installer.sh", "install", "uninstall"):
            (top / script).write_text("#!/bin/sh\necho 'arcops never runs this'\nexit 1\n")
        for folder in ("bin", "results", "scripts", "tools"):
            (top / folder).mkdir()
        for flavour in ("ubuntu-24.04-server", "ubuntu-24.04-desktop"):
            tree = top / flavour
            (tree / "base").mkdir(parents=True)
            if kernel_debs:
                for deb in kernel_debs:
                    _ship(deb, tree / "base", shipped)
            else:
                for pkg, ver, arch, files in kernel_packages(kernel_release):
                    build_deb(tree / "base", pkg, ver, arch, files)
            for folder, pkg, ver, arch in RUNTIME:
                ver = (runtime_versions or {}).get(pkg, ver)
                (tree / folder).mkdir(parents=True, exist_ok=True)
                if pkg not in real:
                    marker = {f"usr/share/doc/{pkg}/arcops-synthetic": f"{pkg} {ver}\n"}
                    build_deb(tree / folder, pkg, ver, arch, marker)
            for deb in real.values():
                _ship(deb, tree / "gfxdrv" / "gpgpu", shipped)
        fw = top / "firmware"
        fw.mkdir()
        (fw / "bmg_guc_70.bin").write_bytes(css_blob(guc))
        (fw / "bmg_huc.bin").write_bytes(gsc_huc_blob(huc))
        (fw / "lnl_guc_70.bin").write_bytes(css_blob("70.40.2"))  # another platform: ignored
        for blob in fw.glob("*.bin"):  # Intel ships them zstd-compressed
            subprocess.run(["zstd", "-q", "--rm", str(blob)], check=True)
        tarball = out / f"{name}.tar.xz"
        # Preset 0: what it holds (.debs, zstd blobs) is compressed already, and xz's default
        # preset spends seconds per MB on the host to gain nothing.
        with tarfile.open(tarball, "w:xz", preset=0) as tar:
            tar.add(top, arcname=name)
    return tarball


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--version", default="26.18.8.2")
    parser.add_argument("--kernel-release", default="6.17.0-1009-intel")
    parser.add_argument("--guc", default="70.60.0")
    parser.add_argument("--kernel-deb", type=Path, action="append", help="ship this real kernel .deb instead")
    parser.add_argument(
        "--runtime-deb", type=Path, action="append", help="ship this real runtime .deb (gfxdrv/gpgpu) instead"
    )
    parser.add_argument(
        "--runtime-version",
        action="append",
        default=[],
        metavar="PACKAGE=VERSION",
        help="build this synthetic runtime package at another version (a newer compute runtime)",
    )
    args = parser.parse_args()
    versions = dict(v.split("=", 1) for v in args.runtime_version)
    print(
        build_bundle(
            args.out,
            args.version,
            args.kernel_release,
            args.guc,
            kernel_debs=args.kernel_deb,
            runtime_debs=args.runtime_deb,
            runtime_versions=versions,
        )
    )


if __name__ == "__main__":
    if shutil.which("dpkg-deb") is None or shutil.which("zstd") is None:
        raise SystemExit("needs dpkg-deb and zstd")
    main()
