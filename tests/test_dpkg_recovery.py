"""A dpkg run cut off half-way, found and finished (arcops.kernel.dpkg_recovery, arcops_dpkg's
`recover`). The fixtures are dpkg's own words from a Debian 12 box; the module runs against real
dpkg in a container where a run was really cut off (dpkg killed while configuring)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from arcops.kernel import dpkg_recovery
from hypothesis import given
from hypothesis import strategies as st

from .helpers.ansible_run import needs_ansible, run_module
from .helpers.podman import podman_missing

FIXTURES = Path(__file__).parent / "fixtures" / "dpkg"
IMAGE = "localhost/arcops-bookworm-systemd"


def test_the_audit_names_each_package_left_part_way():
    text = (FIXTURES / "audit-cut-off.txt").read_text()
    assert dpkg_recovery.audit_packages(text) == ["arcops-test-unpacked", "arcops-test-cutoff"]
    assert dpkg_recovery.audit_packages("") == []


def test_only_numeric_names_are_dpkgs_journal():
    assert dpkg_recovery.pending_journal(["tmp.i", "0001", "0000", "٣", "x0"]) == ["0000", "0001"]


def test_reasons_say_what_was_found_and_nothing_when_dpkg_finished():
    assert dpkg_recovery.reasons([], []) == []
    why = dpkg_recovery.reasons(["0000", "0001"], [f"p{i}" for i in range(7)])
    assert why[0] == "dpkg's journal holds 2 unfinished update(s) in /var/lib/dpkg/updates"
    assert why[1] == "dpkg --audit lists 7 package(s) left part-way: p0, p1, p2, p3, p4 and 2 more"


def test_a_held_lock_is_told_from_a_failed_configure():
    assert dpkg_recovery.locked((FIXTURES / "lock-frontend.txt").read_text())
    assert dpkg_recovery.locked((FIXTURES / "lock-database.txt").read_text())
    assert dpkg_recovery.locked("E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 7")
    assert not dpkg_recovery.locked((FIXTURES / "configure-failed.txt").read_text())


def test_the_failure_line_is_dpkgs_first_error():
    failed = (FIXTURES / "configure-failed.txt").read_text()
    assert dpkg_recovery.failure_line(failed, "") == (
        "dpkg: error processing package arcops-test-halfconf (--configure):"
    )
    assert dpkg_recovery.failure_line("", "last\nwords\n") == "words"
    assert dpkg_recovery.failure_line("", "") == "no output"


@given(st.text())
def test_any_audit_text_reads_as_names_without_spaces(text):
    names = dpkg_recovery.audit_packages(text)
    assert all(n and not any(c.isspace() for c in n) for n in names)
    assert len(names) == len(set(names))


# A package whose first configure kills dpkg (as a control node's death or a power loss cuts a
# run off), and one left unpacked behind it in the same run.
POSTINST = "#!/bin/sh\n[ -e /var/tmp/cut-once ] && exit 0\ntouch /var/tmp/cut-once\nkill -9 $PPID\nsleep 5\n"


def _package(folder: Path, name: str, postinst: str | None = None) -> Path:
    root = folder / name
    (root / "DEBIAN").mkdir(parents=True)
    (root / "usr" / "share" / name).mkdir(parents=True)
    (root / "usr" / "share" / name / "file").write_text(name)
    (root / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: 1.0\nArchitecture: all\nMaintainer: T <t@example.invalid>\n"
        f"Description: {name}\n"
    )
    if postinst:
        (root / "DEBIAN" / "postinst").write_text(postinst)
        (root / "DEBIAN" / "postinst").chmod(0o755)
    deb = folder / f"{name}.deb"
    subprocess.run(["dpkg-deb", "--build", str(root), str(deb)], check=True, capture_output=True)
    return deb


@pytest.fixture
def cut_off_box(tmp_path):
    """A container whose dpkg run was cut off half-way; yields (name, exec)."""
    reason = podman_missing(IMAGE)
    if reason:
        pytest.skip(reason)
    _package(tmp_path, "arcops-test-cutoff", POSTINST)
    _package(tmp_path, "arcops-test-unpacked")
    name = f"arcops-dpkg-recovery-{time.monotonic_ns()}"
    subprocess.run(
        ["podman", "run", "-d", "--name", name, "-v", f"{tmp_path}:/debs:ro", IMAGE, "sleep", "infinity"],
        check=True,
        capture_output=True,
    )

    def run(*argv: str, check: bool = False) -> subprocess.CompletedProcess:
        return subprocess.run(["podman", "exec", name, *argv], capture_output=True, text=True, check=check)

    try:
        cut = run("dpkg", "-i", "/debs/arcops-test-cutoff.deb", "/debs/arcops-test-unpacked.deb")
        assert cut.returncode == 137, cut  # dpkg killed while configuring
        yield name, run
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "0", name], capture_output=True, check=False)


def _hold_the_lock(run, seconds: int) -> None:
    """Another process holds dpkg's frontend lock for SECONDS, from now."""
    holder = (
        "import fcntl, time; f = open('/var/lib/dpkg/lock-frontend', 'w'); fcntl.lockf(f, fcntl.LOCK_EX); "
        f"open('/tmp/locked', 'w').close(); time.sleep({seconds})"
    )
    run("sh", "-c", f'python3 -c "{holder}" >/dev/null 2>&1 &')
    while run("test", "-e", "/tmp/locked").returncode != 0:
        time.sleep(0.1)


def _journal(run) -> list[str]:
    return dpkg_recovery.pending_journal(run("ls", "/var/lib/dpkg/updates").stdout.split())


@needs_ansible
def test_a_cut_off_run_is_finished_once_and_a_held_lock_waited_for(cut_off_box):
    name, run = cut_off_box
    refused = run("apt-get", "install", "--yes", "/debs/arcops-test-unpacked.deb")
    assert "dpkg was interrupted" in refused.stdout + refused.stderr  # what the roles would meet

    dry = run_module("arcops_dpkg", json.dumps({"recover": True}), check=True, container=name)
    assert dry["changed"] and len(dry["recovered"]) == 2, dry
    assert _journal(run), "check mode changed nothing"

    # Another dpkg holds the lock for a few seconds: waited for, not failed.
    _hold_the_lock(run, 4)
    done = run_module("arcops_dpkg", json.dumps({"recover": True}), container=name)
    assert done["changed"] and done["recovered"][0].startswith("dpkg's journal holds"), done
    assert done["recovered"][1].endswith("part-way: arcops-test-unpacked, arcops-test-cutoff"), done
    assert run("dpkg", "--audit").stdout == "" and _journal(run) == []
    status = run("dpkg-query", "-W", "-f=${Status}\n", "arcops-test-cutoff", "arcops-test-unpacked").stdout
    assert status.split("\n")[:2] == ["install ok installed"] * 2

    again = run_module("arcops_dpkg", json.dumps({"recover": True}), container=name)
    assert not again["changed"] and again["recovered"] == [], again


@needs_ansible
def test_a_lock_held_past_the_timeout_fails_in_one_line(cut_off_box):
    name, run = cut_off_box
    _hold_the_lock(run, 60)
    failed = run_module("arcops_dpkg", json.dumps({"recover": True, "lock_timeout": 0}), container=name)
    assert failed["failed"] and "\n" not in failed["msg"], failed
    command = "dpkg --configure -a --force-confdef --force-confold"
    assert failed["msg"].startswith(f"{command} failed (dpkg's journal"), failed["msg"]
    assert " dpkg frontend lock was locked by another process with pid " in failed["msg"], failed["msg"]
