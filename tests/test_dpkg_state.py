"""arcops.kernel.dpkg_state: dpkg's real list formats, the plan, and the plan's commands run by the real
dpkg-divert against a scratch database and tree."""

import shutil
import subprocess
from pathlib import Path

import pytest
from arcops.kernel.dpkg_state import (
    Diversion,
    DpkgStateError,
    parse_diversions,
    parse_query,
    parse_selections,
    plan,
    query_argv,
)
from hypothesis import given
from hypothesis import strategies as st

FIXTURES = Path(__file__).parent / "fixtures" / "dpkg"
GUC = "/lib/firmware/xe/bmg_guc_70.bin.zst"


def test_diversions_real_list():
    got = parse_diversions((FIXTURES / "divert-list.txt").read_text())
    assert got[GUC] == Diversion(GUC, GUC + ".distrib", None)
    assert got["/usr/bin/pg_config"] == Diversion(
        "/usr/bin/pg_config", "/usr/bin/pg_config.libpq-dev", "postgresql-common"
    )
    assert len(got) == 6


def test_selections_real_list():
    got = parse_selections((FIXTURES / "get-selections.txt").read_text())
    assert got["libze1"] == "hold"  # the architecture qualifier is dropped
    assert got["adduser"] == "install"
    assert got["intel-opencl-icd"] == "deinstall"


def test_plan_only_what_is_missing():
    diversions = parse_diversions((FIXTURES / "divert-list.txt").read_text())
    selections = parse_selections((FIXTURES / "get-selections.txt").read_text())
    todo = plan(
        divert=[GUC, "/lib/firmware/xe/bmg_guc_70.bin"],
        undivert=["/usr/lib/firmware/xe/bmg_guc_70.bin", "/lib/firmware/xe/bmg_huc.bin"],
        hold=["libze1", "intel-opencl-icd", "adduser", "adduser"],
        diversions=diversions,
        selections=selections,
    )
    assert todo.diverted == ["/lib/firmware/xe/bmg_guc_70.bin"]
    assert todo.undiverted == ["/usr/lib/firmware/xe/bmg_guc_70.bin"]
    assert todo.held == ["intel-opencl-icd", "adduser"]
    assert todo.hold_input == "intel-opencl-icd hold\nadduser hold\n"
    assert todo.commands == [
        [
            "dpkg-divert",
            "--local",
            "--rename",
            "--divert",
            "/lib/firmware/xe/bmg_guc_70.bin.distrib",
            "--add",
            "/lib/firmware/xe/bmg_guc_70.bin",
        ],
        ["dpkg-divert", "--local", "--rename", "--remove", "/usr/lib/firmware/xe/bmg_guc_70.bin"],
        ["dpkg", "--set-selections"],
    ]
    assert todo.changed


def test_converged_plans_nothing():
    diversions = parse_diversions((FIXTURES / "divert-list.txt").read_text())
    todo = plan(
        divert=[GUC],
        undivert=["/nowhere"],
        hold=["libze1"],
        diversions=diversions,
        selections={"libze1": "hold"},
    )
    assert not todo.changed and todo.commands == [] and todo.hold_input == ""


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"divert": ["/usr/bin/pg_config"]},
            "divert: /usr/bin/pg_config is already diverted by the package postgresql-common",
        ),
        (
            {"undivert": ["/usr/bin/pg_config"]},
            "undivert: /usr/bin/pg_config is diverted by the package postgresql-common, not by arcops",
        ),
        ({"divert": ["/a"], "undivert": ["/a"]}, "divert and undivert both name /a"),
        ({"divert": ["relative/path"]}, "divert: 'relative/path' is not an absolute path"),
        ({"undivert": ["/a\nb"]}, "undivert: '/a\\nb' is not an absolute path"),
        ({"hold": ["Bad Name"]}, "hold: 'Bad Name' is not a Debian package name"),
        ({"hold": ["x\nlibc6 purge"]}, "hold: 'x\\nlibc6 purge' is not a Debian package name"),
    ],
)
def test_refused(kwargs, message):
    diversions = parse_diversions((FIXTURES / "divert-list.txt").read_text())
    args = {"divert": [], "undivert": [], "hold": [], "diversions": diversions, "selections": {}}
    with pytest.raises(DpkgStateError) as e:
        plan(**{**args, **kwargs})
    assert str(e.value) == message


@given(st.text())
def test_parsers_never_raise(text):
    for d in parse_diversions(text).values():
        assert d.path.startswith("/") and d.to.startswith("/")
    for name, state in parse_selections(text).items():
        assert name and state and ":" not in name


@pytest.mark.skipif(shutil.which("dpkg-divert") is None, reason="needs dpkg-divert (Debian/Ubuntu)")
def test_commands_against_real_dpkg_divert(tmp_path):
    """The planned commands, run by the real dpkg-divert on a scratch database and tree, divert
    and rename; read back, the plan is empty; undivert moves the file back."""
    admin, inst = tmp_path / "admin", tmp_path / "root"
    admin.mkdir()
    (admin / "diversions").touch()
    (inst / "lib/firmware/xe").mkdir(parents=True)
    (inst / GUC.lstrip("/")).write_text("distribution blob")

    def run(argv):
        assert argv[0] == "dpkg-divert"
        subprocess.run(
            [argv[0], "--admindir", str(admin), "--instdir", str(inst), *argv[1:]],
            check=True,
            capture_output=True,
        )

    def listed():
        out = subprocess.run(
            ["dpkg-divert", "--admindir", str(admin), "--list"], check=True, capture_output=True, text=True
        )
        return parse_diversions(out.stdout)

    todo = plan(divert=[GUC, GUC[: -len(".zst")]], undivert=[], hold=[], diversions=listed(), selections={})
    for argv in todo.commands:
        run(argv)
    assert (inst / (GUC.lstrip("/") + ".distrib")).read_text() == "distribution blob"
    assert not (inst / GUC.lstrip("/")).exists()
    assert set(listed()) == {GUC, GUC[: -len(".zst")]}
    assert not plan(divert=[GUC], undivert=[], hold=[], diversions=listed(), selections={}).changed

    for argv in plan(divert=[], undivert=[GUC], hold=[], diversions=listed(), selections={}).commands:
        run(argv)
    assert (inst / GUC.lstrip("/")).read_text() == "distribution blob"
    assert set(listed()) == {GUC[: -len(".zst")]}


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="needs dpkg-query (Debian/Ubuntu)")
def test_query_against_the_real_dpkg_database():
    """One dpkg-query call answers which packages are installed, at which version, and held."""
    version = subprocess.run(
        ["dpkg-query", "--show", "--showformat=${Version}", "dpkg"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    versions = {"dpkg": version, "coreutils": None, "bash": "0:0.0-arcops", "arcops-not-a-package": None}
    done = subprocess.run(query_argv(versions), capture_output=True, text=True)
    assert done.returncode in (0, 1)
    got = parse_query(versions, done.stdout)
    assert got.installed["dpkg"] == version and "coreutils" in got.installed
    assert got.off_pin == ["bash", "arcops-not-a-package"]


def test_query_reads_holds_and_names_are_checked():
    text = "libze1:amd64\t1.2\thold\tinstalled\nzstd\t1.5\tinstall\tconfig-files\nother\t1\thold\tinstalled\n"
    got = parse_query({"libze1": "1.2", "zstd": None}, text)
    assert (got.installed, got.off_pin, got.held) == ({"libze1": "1.2"}, ["zstd"], ["libze1"])
    with pytest.raises(DpkgStateError, match="query: 'Bad Name' is not a Debian package name"):
        query_argv({"Bad Name": None})


@given(st.text(), st.dictionaries(st.sampled_from(["a", "b", "libze1"]), st.none() | st.text(max_size=5)))
def test_any_query_output_parses(text, versions):
    got = parse_query(versions, text)
    assert set(got.off_pin) | set(got.installed) >= set(versions)
    assert set(got.held) <= set(versions)


def test_origin_says_which_files_arcops_put_in_place():
    """A local diversion moved the distribution's file aside: the file there is arcops' (pinned).
    A package's diversion or none: the packaged file (distribution)."""
    from arcops.kernel.dpkg_state import origin

    diversions = parse_diversions(
        "local diversion of /lib/firmware/xe/a.bin to /lib/firmware/xe/a.bin.distrib\n"
        "diversion of /lib/firmware/xe/b.bin to /lib/firmware/xe/b.bin.real by some-package\n"
    )
    paths = ["/lib/firmware/xe/a.bin", "/lib/firmware/xe/b.bin", "/lib/firmware/xe/c.bin"]
    assert origin(paths, diversions) == ["pinned", "distribution", "distribution"]
    with pytest.raises(DpkgStateError, match="origin: 'x' is not an absolute path"):
        origin(["x"], diversions)
