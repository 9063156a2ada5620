#!/usr/bin/env python3
"""Real kernel packages for the debrepack and mainline_kernel tests, built or rewritten once and cached.

As a command (molecule prepare steps use it):
    kernel_debs.py tiny                 build (once) a tinyconfig kernel from Debian's linux-source-7.2
                                        with the kernel's own `make bindeb-pkg`; prints its packages,
                                        one per line: linux-image, then linux-libc-dev
    kernel_debs.py two-dirs IN OUT      copy a Debian kernel .deb whose maintainer scripts call run-parts
                                        on /etc/kernel/X.d only into one that passes both hook directories
                                        (Ubuntu's template form), as newer kernel packaging does

The tiny kernel's scripts are what `make bindeb-pkg` writes in 7.x: a loop collects the hook
directories that exist and one run-parts call gets them all, which noble's (and Debian 12's)
run-parts refuses. The cache (ARCOPS_CACHE/kernel-tiny) keeps later runs to a file lookup.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    from .debian_mirror import fetch_deb
except ImportError:  # run as a script: its folder is on sys.path
    from debian_mirror import fetch_deb

CACHE = Path(os.environ.get("ARCOPS_CACHE", "/var/cache/arcops")) / "kernel-tiny"
SOURCE_SUITE = os.environ.get("ARCOPS_KERNEL_SOURCE_SUITE", "forky")
SOURCE_PACKAGE = "linux-source-7.2"
LOCALVERSION = "-arcops-tiny"


def _run(argv: list[str], cwd: Path | None = None) -> None:
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def tiny_kernel() -> Path:
    """linux-image .deb of a tinyconfig build (initrd support on, so the initramfs hook runs)."""
    return tiny_packages()[0]


def tiny_packages() -> list[Path]:
    """The packages of the tinyconfig build: linux-image first, then linux-libc-dev (no
    maintainer scripts: what a package that needs no repack looks like). Built once."""
    done = CACHE / "packages.txt"
    if done.exists():
        return [CACHE / name for name in done.read_text().split()]
    source_deb = fetch_deb(SOURCE_SUITE, "main", SOURCE_PACKAGE)
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        work = Path(tmp)
        tarball = f"usr/src/{SOURCE_PACKAGE}.tar.xz"
        fsys = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(source_deb)], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(work), f"./{tarball}"], stdin=fsys.stdout, check=True)
        fsys.wait()
        _run(["tar", "-xJf", str(work / tarball), "-C", str(work)])
        tree = work / SOURCE_PACKAGE
        jobs = str(os.cpu_count() or 2)
        # ARCH=x86_64: tinyconfig alone would build a 32-bit kernel (an i386 package).
        _run(["make", "ARCH=x86_64", "tinyconfig"], cwd=tree)
        _run(
            ["scripts/config", "--enable", "BLK_DEV_INITRD", "--set-str", "LOCALVERSION", LOCALVERSION],
            cwd=tree,
        )
        _run(["make", "ARCH=x86_64", "olddefconfig"], cwd=tree)
        # DPKG_FLAGS=-d: the build needs only what is installed; skip dpkg's build-depends check.
        _run(
            [
                "make",
                "ARCH=x86_64",
                f"-j{jobs}",
                "bindeb-pkg",
                "DPKG_FLAGS=-d",
                "KDEB_PKGVERSION=7.2-1arcops",
            ],
            cwd=tree,
        )
        image = next(d for d in work.glob("linux-image-*.deb") if "-dbg_" not in d.name)
        built = [image, next(work.glob("linux-libc-dev_*.deb"))]
        for deb in built:
            shutil.move(str(deb), CACHE / deb.name)
        done.write_text("".join(f"{deb.name}\n" for deb in built))
    return tiny_packages()


_ONE_DIR = re.compile(r"(run-parts\b[^\n]*?(?:\\\n[^\n]*?)*)/etc/kernel/(\w+)\.d\b")
_IF_ONE_DIR = re.compile(r"\[ -d /etc/kernel/(\w+)\.d \]")


def two_dirs(src: Path, dest: Path) -> Path:
    """Rewrite every `run-parts ... /etc/kernel/X.d` into the two-directory template form."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "pkg"
        _run(["dpkg-deb", "-R", str(src), str(tree)])
        for script in ("preinst", "postinst", "prerm", "postrm"):
            path = tree / "DEBIAN" / script
            if not path.exists():
                continue
            text = path.read_text()
            text = _IF_ONE_DIR.sub(r"[ -d /etc/kernel/\1.d ] || [ -d /usr/share/kernel/\1.d ]", text)
            text = _ONE_DIR.sub(r"\1/etc/kernel/\2.d /usr/share/kernel/\2.d", text)
            path.write_text(text)
        dest.parent.mkdir(parents=True, exist_ok=True)
        _run(["dpkg-deb", "-Zgzip", "-z1", "-b", str(tree), str(dest)])
    return dest


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("tiny")
    rewrite = sub.add_parser("two-dirs")
    rewrite.add_argument("src", type=Path)
    rewrite.add_argument("dest", type=Path)
    args = parser.parse_args()
    if args.command == "tiny":
        print("\n".join(str(p) for p in tiny_packages()))
    else:
        print(two_dirs(args.src, args.dest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
