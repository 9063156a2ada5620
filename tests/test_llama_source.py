"""Source detection and the arcops change: the git fixture (always) and real llama.cpp (when available)."""

import re
import subprocess

import pytest
from arcops import cli
from arcops.llama import change_manifest, cxx_scopes, llama_source

from .helpers.llama_fixture import FIXTURE, export, tree_digest

HELPER = llama_source.shipped_helper()
SYCL = llama_source.SYCL_DIR


@pytest.fixture
def source(llama_fixture_repo, tmp_path):
    repo, shas = llama_fixture_repo
    return lambda tag: export(repo, shas[tag], tmp_path / tag)


def test_old_source_gets_every_device_allocation_and_free_routed(source):
    root = source("fixture-old")
    before = tree_digest(root)
    result = llama_source.apply(root, HELPER)
    assert (result.path, result.changed) == ("arcops", True)
    # Frees by what they release: fixture_buffer_free pairs with fixture_buffer_alloc (device),
    # fixture_host_free with fixture_host_alloc (host); release_extra_gpu's pointer is not traced.
    assert [(s.file.rsplit("/", 1)[1], s.line, s.kind) for s in result.sites] == [
        ("common.cpp", 6, "free_unknown"),
        ("ggml-sycl.cpp", 14, "alloc"),
        ("ggml-sycl.cpp", 20, "free"),
        ("ggml-sycl.cpp", 24, "alloc"),
        ("ggml-sycl.cpp", 31, "alloc"),
        ("ggml-sycl.cpp", 37, "alloc"),
        ("ggml-sycl.cpp", 41, "alloc"),
        ("ggml-sycl.cpp", 49, "free_host"),
    ]
    assert result.counts() == {"alloc": 5, "free": 1, "free_host": 1, "free_shared": 0, "free_unknown": 1}
    by_line = {(s.file.rsplit("/", 1)[1], s.line): s for s in result.sites}
    assert by_line["ggml-sycl.cpp", 14].before == "sycl::malloc_device( size, *stream)"
    assert by_line["ggml-sycl.cpp", 14].after == "arcops_ze_malloc_device(size, *stream)"
    assert by_line["ggml-sycl.cpp", 37].after == (
        "static_cast<float *>(arcops_ze_malloc_device((n) * sizeof(float), *qptr))"
    )
    assert by_line["ggml-sycl.cpp", 41].before == "sycl::malloc(size, *stream, sycl::usm::alloc::device)"
    assert by_line["common.cpp", 6].after == "arcops_ze_free_device(data_device[i], *(streams[i]))"
    assert result.files == [
        f"{SYCL}/common.cpp",
        f"{SYCL}/ggml-sycl.cpp",
        f"{SYCL}/CMakeLists.txt",
        f"{SYCL}/arcops-ze-alloc.hpp",
    ]
    assert result.as_dict()["cmake_args"] == ["-DGGML_SYCL=ON", "-DGGML_SYCL_F16=ON"]

    # After the rewrite (one line per call now), each call is found again where it landed.
    assert len(result.routed) == 8 and result.routed[0] == f"{SYCL}/common.cpp:7"
    after = tree_digest(root)
    # The helper, and the change's own record of what it rewrote (llama/change_manifest.py).
    assert sorted(set(after) - set(before)) == [
        f"{SYCL}/{change_manifest.NAME}",
        f"{SYCL}/arcops-ze-alloc.hpp",
    ]
    assert sorted(k for k in before if before[k] != after[k]) == sorted(result.files[:3])
    code = (root / SYCL / "ggml-sycl.cpp").read_text()
    assert "sycl::malloc_device(\n" not in code and "sycl::malloc_host(size, *qptr)" in code  # host untouched
    assert "// Buffers come from sycl::malloc_device(size, *stream)" in code  # comment untouched
    assert '"sycl::malloc_device(size, q) in a string is not a call"' in code
    assert (root / SYCL / "dpct/helper.hpp").read_text() == (
        FIXTURE / "old" / SYCL / "dpct/helper.hpp"
    ).read_text()
    assert code.count('#include "arcops-ze-alloc.hpp"') == 1
    cmake = (root / SYCL / "CMakeLists.txt").read_text()
    assert "target_link_libraries(ggml-sycl PRIVATE ${ARCOPS_ZE_LOADER})" in cmake
    assert (root / SYCL / "arcops-ze-alloc.hpp").read_text() == HELPER


def test_second_run_and_check_mode_change_nothing(source):
    root = source("fixture-old")
    check = llama_source.apply(root, HELPER, check=True)
    assert check.changed and tree_digest(root) == tree_digest(FIXTURE / "old")  # nothing written
    first = llama_source.apply(root, HELPER)
    done = tree_digest(root)
    again = llama_source.apply(root, HELPER)
    assert (again.path, again.changed, again.files) == ("arcops", False, [])
    assert len(again.routed) == 8  # a re-run still says what the change routed
    # ... and what it rewrote, by kind (a run cut off before the build records these again)
    assert again.sites == first.sites and again.counts() == first.counts() != {}
    assert tree_digest(root) == done


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "[]",
        '{"format": 2, "sites": []}',
        '{"format": 1, "sites": {}}',
        '{"format": 1, "sites": [1]}',
        '{"format": 1, "sites": [{"file": "a", "line": true, "kind": "alloc", "before": "", "after": ""}]}',
        "[" * 100_000,
        "\udcff",
    ],
)
def test_a_damaged_change_record_reads_as_unknown(source, text):
    root = source("fixture-old")
    llama_source.apply(root, HELPER)
    (root / SYCL / change_manifest.NAME).write_text(text, errors="surrogateescape")
    again = llama_source.apply(root, HELPER)
    assert (again.changed, again.sites, len(again.routed)) == (False, [], 8)


def test_interrupted_run_completes_without_double_includes(source):
    root = source("fixture-old")
    llama_source.apply(root, HELPER)
    (root / SYCL / "arcops-ze-alloc.hpp").unlink()  # as if stopped before the last write
    done = llama_source.apply(root, HELPER)
    assert (done.path, done.changed, done.sites, done.files) == (
        "arcops",
        True,
        [],
        [f"{SYCL}/arcops-ze-alloc.hpp"],
    )
    assert (root / SYCL / "ggml-sycl.cpp").read_text().count("arcops-ze-alloc.hpp") == 1
    assert (root / SYCL / "CMakeLists.txt").read_text().count(llama_source.CMAKE_MARK) == 1


def test_recent_source_keeps_upstreams_allocator_and_routes_what_it_left(source):
    root = source("fixture-recent")
    before = tree_digest(root)
    check = llama_source.apply(root, HELPER, check=True)
    assert tree_digest(root) == before
    result = llama_source.apply(root, HELPER)
    assert (check.path, check.changed, check.files) == (result.path, result.changed, result.files)
    assert (result.path, result.changed) == ("upstream", True)
    assert result.evidence == [f"{SYCL}/common.cpp:15"]
    assert result.as_dict()["cmake_args"] == [
        "-DGGML_SYCL=ON",
        "-DGGML_SYCL_F16=ON",
        "-DGGML_SYCL_SUPPORT_LEVEL_ZERO_API=ON",
    ]
    # The flash-attention buffer's allocation and its frees (an alias of the allocation, traced);
    # upstream's allocator and free (common.cpp, they call Level Zero) are not touched.
    assert [(s.file.rsplit("/", 1)[1], s.line, s.kind) for s in result.sites] == [
        ("fattn-buffers.cpp", 13, "free"),
        ("fattn-buffers.cpp", 18, "alloc"),
        ("fattn-buffers.cpp", 27, "free"),
        ("ggml-sycl.cpp", 46, "free_host"),
    ]
    assert result.unrouted == []
    assert result.files == [
        f"{SYCL}/fattn-buffers.cpp",
        f"{SYCL}/ggml-sycl.cpp",
        f"{SYCL}/CMakeLists.txt",
        f"{SYCL}/arcops-ze-alloc.hpp",
    ]
    common = (root / SYCL / "common.cpp").read_text()
    assert tree_digest(root)[f"{SYCL}/common.cpp"] == before[f"{SYCL}/common.cpp"]
    assert "return sycl::malloc_device(size, q);" in common and "    sycl::free(ptr, q);" in common
    fattn = (root / SYCL / "fattn-buffers.cpp").read_text()
    assert "dev_ptr = arcops_ze_malloc_device(need_bytes, *qptr)" in fattn and "sycl::free" not in fattn

    again = llama_source.apply(root, HELPER)
    assert (again.path, again.changed, again.files, again.unrouted) == ("upstream", False, [], [])
    assert (
        again.routed
        == result.routed
        == [
            f"{SYCL}/fattn-buffers.cpp:14",
            f"{SYCL}/fattn-buffers.cpp:19",
            f"{SYCL}/fattn-buffers.cpp:27",
            f"{SYCL}/ggml-sycl.cpp:47",
        ]
    )


def test_recent_source_untouched_when_asked_lists_what_upstream_left(source):
    root = source("fixture-recent")
    before = tree_digest(root)
    result = llama_source.apply(root, HELPER, leftovers=False)
    assert (result.path, result.changed, result.files, result.sites) == ("upstream", False, [], [])
    assert result.unrouted == [f"{SYCL}/fattn-buffers.cpp:18: sycl::malloc_device( need_bytes, *qptr)"]
    assert tree_digest(root) == before
    assert result.as_dict(f16=False)["cmake_args"][1] == "-DGGML_SYCL_F16=OFF"


def test_free_kinds_come_from_the_allocation_they_release():
    code = llama_source._mask(
        """
struct pool_host {
    void * alloc(size_t n) { void * ptr = (void *) sycl::malloc_host(n, *qptr); return ptr; }
    ~pool_host() { for (auto & b : bufs) { sycl::free(b.ptr, *qptr); } }
};
void * my_host_malloc(size_t n) { return sycl::malloc(n, q, sycl::usm::alloc::host); }
void my_host_free(void * p) try { sycl::free(p, q); } catch (sycl::exception const & e) {}
void reorder(size_t n) { auto * tmp_buf = sycl::malloc_shared<uint8_t>(n, q); sycl::free(tmp_buf, q); }
void grow(size_t n) {
    void * dev_ptr; CHECK(dev_ptr = sycl::malloc_device(n, q)); buf = static_cast<half *>(dev_ptr);
}
buffer::~buffer() { sycl::free(buf, q); }
void mixed() { sycl::free(other[i], q); }
"""
    )
    blocks = cxx_scopes.blocks(code)
    allocs = cxx_scopes.allocations(code)
    kinds = []
    for m in re.finditer(r"sycl::free\((\w+(?:\.\w+|\[i\])?)", code):
        kinds.append((m.group(1), cxx_scopes.free_kind(code, blocks, allocs, m.start(), m.group(1))))
    assert kinds == [
        ("b.ptr", "host"),  # the class allocates host memory into ptr
        ("p", "host"),  # my_host_free pairs with my_host_malloc
        ("tmp_buf", "shared"),
        ("buf", "device"),  # an alias of dev_ptr
        ("other[i]", "unknown"),
    ]
    functions = [b.name for b in blocks if b.kind == "function"]
    assert functions == [
        "alloc",
        "~pool_host",
        "my_host_malloc",
        "my_host_free",
        "reorder",
        "grow",
        "buffer::~buffer",
        "mixed",
    ]
    assert [b.name for b in blocks if b.kind == "class"] == ["pool_host"]


def test_unsupported_allocation_form_fails_naming_it_and_writes_nothing(source):
    root = source("fixture-unsupported")
    before = tree_digest(root)
    with pytest.raises(
        llama_source.SourceMismatch, match=r"ggml-sycl.cpp:7: `sycl::aligned_alloc_device\(64, size"
    ):
        llama_source.apply(root, HELPER)
    assert tree_digest(root) == before


def test_source_without_the_sycl_target_or_backend_is_refused(source, tmp_path):
    root = source("fixture-old")
    cmake = root / SYCL / "CMakeLists.txt"
    cmake.write_text(
        cmake.read_text().replace("ggml_add_backend_library(ggml-sycl", "add_library(ggml-other")
    )
    with pytest.raises(llama_source.SourceMismatch, match="no ggml-sycl target"):
        llama_source.apply(root, HELPER)
    assert not (root / SYCL / "arcops-ze-alloc.hpp").exists()
    with pytest.raises(llama_source.SourceMismatch, match=r"not a llama\.cpp source with the SYCL backend"):
        llama_source.apply(tmp_path / "empty", HELPER)
    with pytest.raises(llama_source.SourceMismatch, match="the helper given is not"):
        llama_source.apply(root, "// some other header\n")


def test_changed_fixture_compiles_and_its_allocations_work_on_the_cpu_device(source, sycl_sdk, tmp_path):
    """g++ + PyPI SYCL: the rewritten call sites compile against the helper and run (fallback path)."""
    driver = FIXTURE / "driver.cpp"

    def build_and_run(root, name):
        sycl = root / SYCL
        exe = sycl_sdk.compile([sycl / "ggml-sycl.cpp", sycl / "common.cpp", driver], tmp_path / name, [sycl])
        env = sycl_sdk.env(tmp_path, cpu_device=True)
        done = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=120)
        symbols = subprocess.run(
            ["nm", "-C", "--undefined-only", str(exe)], capture_output=True, text=True
        ).stdout
        return done, symbols

    root = source("fixture-old")
    plain, plain_symbols = build_and_run(root, "plain")
    llama_source.apply(root, HELPER)
    changed, changed_symbols = build_and_run(root, "changed")
    for done in (plain, changed):
        assert done.returncode == 0, done.stdout + done.stderr
        assert [line.split()[1] for line in done.stdout.splitlines()[:7]] == ["ok"] * 7
    assert "zeMemAllocDevice" not in plain_symbols
    assert "zeMemAllocDevice" in changed_symbols and "zeMemFree" in changed_symbols


def test_recent_fixture_with_its_leftovers_routed_compiles_and_runs_on_the_cpu_device(
    source, sycl_sdk, tmp_path
):
    """Upstream's allocator with its Level Zero option on, the fattn buffer through the helper."""
    root = source("fixture-recent")
    llama_source.apply(root, HELPER)
    sycl = root / SYCL
    sources = [
        sycl / "ggml-sycl.cpp",
        sycl / "common.cpp",
        sycl / "fattn-buffers.cpp",
        FIXTURE / "driver.cpp",
    ]
    defines = ["GGML_SYCL_SUPPORT_LEVEL_ZERO_API", "ARCOPS_FIXTURE_FATTN"]
    exe = sycl_sdk.compile(sources, tmp_path / "recent", [sycl], defines)
    done = subprocess.run(
        [str(exe)], env=sycl_sdk.env(tmp_path, cpu_device=True), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results = dict(line.split()[:2] for line in done.stdout.splitlines() if not line.startswith("device:"))
    assert results == dict.fromkeys(
        ["buffer", "split", "pool", "typed", "reorder", "host", "dpct", "fattn", "fattn-grown"], "ok"
    )


def test_cli_reports_the_path_and_exit_codes(source, capsys):
    root = source("fixture-old")
    assert cli.main(["llama", "source", "--check", str(root)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "arcops change: would route 5 device allocation(s), 1 device free(s), 1 host free(s), "
        "1 untraced free(s) through arcops-ze-alloc.hpp\n"
    )
    assert f"  {SYCL}/ggml-sycl.cpp:49: host free: sycl::free(ptr, *qptr)\n" in out
    assert "cmake: -DGGML_SYCL=ON -DGGML_SYCL_F16=ON" in out
    assert cli.main(["llama", "source", str(root)]) == 0
    assert cli.main(["llama", "source", str(root)]) == 0
    assert "arcops change already applied" in capsys.readouterr().out
    recent = source("fixture-recent")
    assert cli.main(["llama", "source", "--upstream-untouched", str(recent)]) == 0
    assert capsys.readouterr().out.splitlines()[:3] == [
        f"upstream Level Zero allocation path ({SYCL}/common.cpp:15)",
        "source left as is",
        f"  still sycl::malloc_device: {SYCL}/fattn-buffers.cpp:18: sycl::malloc_device( need_bytes, *qptr)",
    ]
    assert cli.main(["llama", "source", str(recent)]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        "leftovers: routed 1 device allocation(s), 2 device free(s), 1 host free(s) "
        "through arcops-ze-alloc.hpp"
    )
    assert cli.main(["llama", "source", str(recent)]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "leftovers already routed (4 call(s))"
    assert cli.main(["llama", "source", str(source("fixture-unsupported"))]) == 2
    assert "aligned_alloc_device" in capsys.readouterr().err
