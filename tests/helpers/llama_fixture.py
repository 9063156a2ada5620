"""A git repository shaped like llama.cpp's SYCL backend, at three tagged commits.

See tests/fixtures/llama_cpp/README.md. Used by the unit tests (source detection and the change,
compiled against PyPI's SYCL) and by the llama_cpp_sycl molecule scenario (clone, change, build).

    python -m tests.helpers.llama_fixture DEST      # creates DEST (a bare repository), prints tag -> sha
    python -m tests.helpers.llama_fixture DEST.tar  # the same, as one tar of the bare repository (to copy)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "llama_cpp"
# Tag -> what the commit does to the previous one, in commit order: a tree overlaid on its
# files, or a patch applied to them.
COMMITS = [("fixture-old", "old"), ("fixture-recent", "recent.patch"), ("fixture-unsupported", "unsupported")]
GIT_ENV = {
    "GIT_AUTHOR_NAME": "arcops tests",
    "GIT_AUTHOR_EMAIL": "tests@arcops.invalid",
    "GIT_AUTHOR_DATE": "2026-04-07T00:00:00Z",
    "GIT_COMMITTER_NAME": "arcops tests",
    "GIT_COMMITTER_EMAIL": "tests@arcops.invalid",
    "GIT_COMMITTER_DATE": "2026-04-07T00:00:00Z",
}


def _git(cwd: Path, *args: str) -> str:
    env = dict(os.environ, **GIT_ENV)
    done = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def make_repo(dest: Path | str) -> dict[str, str]:
    """Create the bare repository dest; return tag -> commit sha. Same content, same shas."""
    dest = Path(dest)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        _git(work, "init", "-q", "-b", "master")
        shas = {}
        for tag, tree in COMMITS:
            if tag == "fixture-unsupported":  # a side branch off old, not a successor of recent
                _git(work, "checkout", "-q", "-b", "unsupported", shas["fixture-old"])
            if tree.endswith(".patch"):
                _git(work, "apply", str(FIXTURE / tree))
            else:
                shutil.copytree(FIXTURE / tree, work, dirs_exist_ok=True)
            _git(work, "add", "-A")
            _git(work, "commit", "-q", "-m", f"llama.cpp fixture: {tree.removesuffix('.patch')}")
            _git(work, "tag", tag)
            shas[tag] = _git(work, "rev-parse", "HEAD")
        _git(work, "checkout", "-q", "master")
        if dest.exists():
            shutil.rmtree(dest)
        _git(work, "clone", "-q", "--bare", str(work), str(dest))
    return shas


def export(repo: Path | str, rev: str, dest: Path | str) -> Path:
    """The tree of rev, as a plain folder (what the role builds from)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "--git-dir", str(repo), "archive", rev], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def make_tar(dest: Path | str) -> dict[str, str]:
    """make_repo, packed as DEST (a tar whose top folder is the bare repository's name)."""
    dest = Path(dest)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / dest.name.removesuffix(".tar")
        shas = make_repo(repo)
        dest.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(dest, "w") as tar:
            tar.add(repo, arcname=repo.name)
    return shas


if __name__ == "__main__":
    out = sys.argv[1]
    print(json.dumps((make_tar if out.endswith(".tar") else make_repo)(out), indent=2))


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under ROOT, by relative path: what a run changed, compared."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
