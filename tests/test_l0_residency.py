"""The Level Zero residency filter (arcops-l0-residency.so), built with gcc and run under the real
dynamic loader with LD_AUDIT, against a stub Level Zero loader that records every call it gets
(tests/fixtures/l0_residency: the stub and the program that calls it). What the filter does on a
real B60 pair is a hardware check (docs/host-ram.md)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from arcops.devtools.residencybench import build_stub
from arcops.vllm import residency_shim

from .helpers.ansible_run import needs_ansible, run_module

FIXTURES = Path(__file__).parent / "fixtures" / "l0_residency"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The filter, and the program on the stub loader (current, and without zeMemGetAllocProperties)."""
    root = tmp_path_factory.mktemp("l0")
    shim = residency_shim.build(root / "shim")
    programs = {
        "current": build_stub(root / "current", FIXTURES),
        "old": build_stub(root / "old", FIXTURES, without_alloc_properties=True),
    }
    return shim, programs


def run(program: Path, tmp_path: Path, shim: Path | None, *args: str, **env: str):
    """The program's stdout lines, stderr, and the stub's record of the calls it got."""
    log = tmp_path / "stub.log"
    log.unlink(missing_ok=True)
    environ = {"PATH": os.environ["PATH"], "STUB_ZE_LOG": str(log), **env}
    if shim is not None:
        environ[residency_shim.AUDIT_VAR] = str(shim)
    out = subprocess.run([str(program), *args], env=environ, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    calls = [line.split()[:2] for line in log.read_text().splitlines()] if log.exists() else []
    return out.stdout.splitlines(), out.stderr, calls


# The program's cases, in order: which device each residency call targets, and whether it is
# another device's device allocation (the only kind the filter may drop).
CASES = [
    ("own", "device=0x10", False),
    ("peer", "device=0x20", True),
    ("peer-back", "device=0x10", True),
    ("sub-device", "device=0x11", False),  # a tile of the owning card: the same memory
    ("host", "device=0x20", False),
    ("unknown", "device=0x20", False),  # not an allocation Level Zero knows
    ("peer-dlsym", "device=0x20", True),  # looked up with dlsym, not bound at link time
]
EVERY_CALL = [["resident", device] for _, device, _ in CASES] + [["free", "device=0"]]


def test_without_the_filter_every_call_reaches_level_zero(built, tmp_path):
    _, programs = built
    lines, _, calls = run(programs["current"], tmp_path, None, "calls")
    assert calls == EVERY_CALL
    assert lines == [f"{name} 0" for name, _, _ in CASES] + ["free 0"]


@pytest.mark.parametrize("bind_now", [False, True], ids=["lazy-binding", "bind-now"])
def test_peer_residency_of_device_memory_is_dropped_and_everything_else_kept(built, tmp_path, bind_now):
    shim, programs = built
    env = {"LD_BIND_NOW": "1"} if bind_now else {}
    lines, _, calls = run(programs["current"], tmp_path, shim, "calls", **env)
    kept = [["resident", device] for _, device, peer in CASES if not peer]
    assert calls == [*kept, ["free", "device=0"]]  # zeMemFree untouched
    # The application is told it succeeded: vLLM must not see an error for a call it did not need.
    assert lines == [f"{name} 0" for name, _, _ in CASES] + ["free 0"]


def test_peer_residency_asked_for_explicitly_passes_through(built, tmp_path):
    shim, programs = built
    _, _, calls = run(programs["current"], tmp_path, shim, "calls", **{residency_shim.PASS_ALL_VAR: "1"})
    assert calls == EVERY_CALL


def test_a_loader_without_the_ownership_query_is_left_alone(built, tmp_path):
    shim, programs = built
    _, _, calls = run(programs["old"], tmp_path, shim, "calls")
    assert calls == EVERY_CALL


def test_the_marker_and_the_counts_on_stderr_when_asked(built, tmp_path):
    shim, programs = built
    _, err, _ = run(programs["current"], tmp_path, shim, "calls", **{residency_shim.LOG_VAR: "1"})
    assert err.splitlines() == [
        "arcops-l0-residency 1: loaded",
        f"arcops-l0-residency: filtering {programs['current'].parent / 'libze_loader.so.1'}",
        "arcops-l0-residency: 4 residency calls kept, 3 peer calls skipped",
    ]
    _, quiet, _ = run(programs["current"], tmp_path, shim, "calls")
    assert quiet == ""


def test_processes_without_level_zero_run_unchanged(built, tmp_path):
    shim, _ = built
    env = {"PATH": os.environ["PATH"], residency_shim.AUDIT_VAR: str(shim), residency_shim.LOG_VAR: "1"}
    out = subprocess.run(["sh", "-c", "echo ok"], env=env, capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout) == (0, "ok\n")
    assert "filtering" not in out.stderr  # nothing to filter, nothing counted


def test_the_benchmark_mode_reports_per_call_costs(built, tmp_path):
    """The timing itself is `scripts/bench residency`'s job; this checks the mode it reads."""
    shim, programs = built
    lines, _, _ = run(programs["current"], tmp_path, shim, "bench", "1000")
    report = json.loads(lines[0])
    assert report["calls"] == 1000 and report["unrelated_ns"] > 0 and report["resident_ns"] > 0


def test_a_failed_build_says_what_the_compiler_said_and_leaves_nothing(tmp_path):
    with pytest.raises(residency_shim.BuildError, match="not found"):
        residency_shim.build(tmp_path / "a", compiler="no-such-compiler")
    fake = tmp_path / "cc"
    fake.write_text("#!/bin/sh\necho 'arcops-l0-residency.c:1: error: broken' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(residency_shim.BuildError, match=r"exit 1\): arcops-l0-residency.c:1: error: broken"):
        residency_shim.build(tmp_path / "b", compiler=str(fake))
    assert list((tmp_path / "b").iterdir()) == []


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--calls", "5"], "must be 1000..1000000000, not 5"),
        (["--runs", "x"], "not a whole number: 'x'"),
        (["--json", "/nonexistent/result.json"], "its folder /nonexistent does not exist"),
        (["--fixtures", "/nonexistent"], "--fixtures /nonexistent: no stub_ze_loader.c there"),
    ],
)
def test_the_benchmark_refuses_bad_input_in_one_line_before_building(argv, message, capsys):
    from arcops.devtools import residencybench

    try:
        code = residencybench.main(argv)
    except SystemExit as e:  # argparse's own refusals
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and message in err.splitlines()[-1]


def test_ensure_builds_once_and_again_only_when_the_library_source_or_flags_change(tmp_path, monkeypatch):
    out = tmp_path / "l0"
    source = tmp_path / "arcops-l0-residency.c"
    source.write_bytes(residency_shim.SOURCE.read_bytes())
    first = residency_shim.ensure(out, source)
    assert (first["changed"], first["reason"]) == (True, "not built")
    library = out / residency_shim.LIBRARY
    stamp = json.loads((out / residency_shim.STAMP).read_text())
    assert stamp["library_sha256"] == first["sha256"] == residency_shim._sha256(library)
    assert stamp["cflags"] == list(residency_shim.CFLAGS)
    # Unchanged: the compiler is not even looked for.
    again = residency_shim.ensure(out, source, compiler="/nonexistent/gcc")
    assert (again["changed"], again["sha256"]) == (False, first["sha256"])

    library.write_bytes(b"not a library")
    dry = residency_shim.ensure(out, source, check=True)
    assert (dry["changed"], dry["reason"], library.read_bytes()) == (
        True,
        "library does not match its stamp",
        b"not a library",
    )
    assert residency_shim.ensure(out, source)["sha256"] == first["sha256"]

    source.write_text(source.read_text() + "\n/* a change */\n")
    assert residency_shim.ensure(out, source)["reason"] == "source changed"
    monkeypatch.setattr(residency_shim, "CFLAGS", (*residency_shim.CFLAGS, "-g0"))
    assert residency_shim.ensure(out, source)["reason"] == "flags changed"
    assert sorted(p.name for p in out.iterdir()) == sorted([residency_shim.LIBRARY, residency_shim.STAMP])


def test_ensure_refuses_a_missing_source_or_compiler_and_writes_nothing(tmp_path):
    with pytest.raises(residency_shim.BuildError, match="no such source file"):
        residency_shim.ensure(tmp_path / "out", tmp_path / "missing.c")
    with pytest.raises(residency_shim.BuildError, match="/nonexistent/gcc not found"):
        residency_shim.ensure(tmp_path / "out", compiler="/nonexistent/gcc")
    assert not (tmp_path / "out" / residency_shim.LIBRARY).exists()


@needs_ansible
def test_module_builds_through_ansiballz_then_reports_ok_and_check_mode_writes_nothing(tmp_path, built):
    args = f"src={residency_shim.SOURCE} dest={tmp_path}/l0"
    dry = run_module("arcops_l0_filter", args, check=True)
    assert (dry["changed"], dry["reason"], (tmp_path / "l0").exists()) == (True, "not built", False)
    first = run_module("arcops_l0_filter", args)
    assert first["changed"] and first["library"] == f"{tmp_path}/l0/{residency_shim.LIBRARY}"
    again = run_module("arcops_l0_filter", args)
    assert (again["changed"], again["sha256"]) == (False, first["sha256"])
    # The library the box built is the filter: the stub program sees peer residency dropped.
    _, _, calls = run(built[1]["current"], tmp_path, Path(first["library"]), "calls")
    assert calls == [*[["resident", device] for _, device, peer in CASES if not peer], ["free", "device=0"]]
    bad = run_module("arcops_l0_filter", f"src={tmp_path}/none.c dest={tmp_path}/l0")
    assert (
        bad["failed"]
        and bad["msg"]
        == f"residency filter: {tmp_path}/none.c: no such source file (the residency filter's C source)"
    )


def test_the_filter_builds_without_level_zero_headers_and_its_declarations_match_them(tmp_path):
    """The box needs no Level Zero headers (the pinned runtime holds libze1): the plain build
    never includes ze_api.h, and built with ARCOPS_L0_CHECK_ABI next to Debian's real header,
    every value and offset the filter declares itself is checked against it."""
    poisoned = tmp_path / "poison" / "level_zero"
    poisoned.mkdir(parents=True)
    (poisoned / "ze_api.h").write_text('#error "the filter must not need ze_api.h"\n')
    plain = [*residency_shim.compile_command(tmp_path / "plain.so"), f"-I{poisoned.parent}"]
    done = subprocess.run(plain, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    checked = [*residency_shim.compile_command(tmp_path / "abi.so"), "-DARCOPS_L0_CHECK_ABI"]
    done = subprocess.run(checked, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    wrong = tmp_path / "wrong.c"
    wrong.write_text(residency_shim.SOURCE.read_text().replace("PROPERTIES = 0x17", "PROPERTIES = 0x18"))
    argv = [*residency_shim.compile_command(tmp_path / "wrong.so", source=wrong), "-DARCOPS_L0_CHECK_ABI"]
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode != 0 and "ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES" in done.stderr
