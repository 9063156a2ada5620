"""Signed apt repositories for tests: what a role's apt path runs against from a file: URL.

Offline boxes install Intel's and Docker's packages from local mirrors of their repositories;
the tests build small ones the same shape (dists/SUITE/Release + InRelease, COMPONENT/
binary-amd64/Packages, pool/), signed with a throwaway key the role must check by sha256.
"""

from __future__ import annotations

import hashlib
import subprocess
import tarfile
import tempfile
from pathlib import Path


def build_deb(stage: Path, control: dict[str, str], out: Path) -> Path:
    """dpkg-deb -b of a staged tree with this control file (root-owned, like a real package)."""
    (stage / "DEBIAN").mkdir(parents=True, exist_ok=True)
    (stage / "DEBIAN" / "control").write_text("".join(f"{k}: {v}\n" for k, v in control.items()))
    argv = ["dpkg-deb", "--root-owner-group", "-b", str(stage), str(out)]
    subprocess.run(argv, check=True, capture_output=True)
    return out


def signed_repo(out_dir: Path | str, name: str, suite: str, component: str, debs: list[Path]) -> Path:
    """OUT_DIR/NAME (also packed as OUT_DIR/NAME.tar) holding debs; returns the key (OUT_DIR/NAME.asc)."""
    out = Path(out_dir)
    repo, key = out / name, out / f"{name}.asc"
    pool, index = repo / "pool", repo / "dists" / suite / component / "binary-amd64"
    pool.mkdir(parents=True, exist_ok=True)
    index.mkdir(parents=True, exist_ok=True)
    for deb in debs:
        (pool / deb.name).write_bytes(deb.read_bytes())
    packages = subprocess.run(
        ["dpkg-scanpackages", "pool", "/dev/null"], cwd=repo, check=True, capture_output=True
    ).stdout
    (index / "Packages").write_bytes(packages)
    digest = hashlib.sha256(packages).hexdigest()
    release_file = repo / "dists" / suite / "Release"
    release_file.write_text(
        f"Origin: arcops tests\nLabel: {name}\nSuite: {suite}\nCodename: {suite}\n"
        f"Date: Mon, 30 Nov 2026 00:00:00 UTC\nArchitectures: amd64 all\nComponents: {component}\n"
        f"SHA256:\n {digest} {len(packages)} {component}/binary-amd64/Packages\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "gnupg"
        home.mkdir(mode=0o700)
        gpg = ["gpg", "--batch", "--homedir", str(home), "--pinentry-mode", "loopback", "--passphrase", ""]
        subprocess.run(
            [*gpg, "--quick-gen-key", "arcops test repository", "ed25519", "sign", "never"],
            check=True,
            capture_output=True,
        )
        inrelease = release_file.with_name("InRelease")
        inrelease.unlink(missing_ok=True)
        subprocess.run(
            [*gpg, "--clearsign", "-o", str(inrelease), str(release_file)], check=True, capture_output=True
        )
        key.write_bytes(subprocess.run([*gpg, "--armor", "--export"], check=True, capture_output=True).stdout)
    with tarfile.open(out / f"{name}.tar", "w") as tar:  # one file to copy to a box
        tar.add(repo, arcname=repo.name)
    return key
