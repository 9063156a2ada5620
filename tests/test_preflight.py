"""Preflight's judgement: every problem and warning at once, in the role's words, from real
fixture trees; the module reads, judges and records in one call and never writes for an unfit box."""

import json
from pathlib import Path

import pytest
import yaml
from arcops.box import preflight
from arcops.box.facts import collect
from arcops.box.preflight import Platform, Settings
from arcops.common import records
from arcops.common.sysroot import SysRoot
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .conftest import HOST_FIXTURES, REPO
from .helpers.ansible_run import needs_ansible, run_module

DEFAULTS = yaml.safe_load((REPO / "roles/preflight/defaults/main.yml").read_text())
NOBLE = Platform("Ubuntu", "24.04", "24", "6.17.0-1009-intel", "root", 0)
BOOKWORM = Platform("Debian", "12.8", "12", "6.1.0-28-cloud-amd64", "root", 0)


def role_settings(**over) -> Settings:
    """The role's defaults (the literal ones), for a graph_mtp box, with OVER on top."""
    base = {
        "supported_os": DEFAULTS["preflight_supported_os"],
        "lab_os": DEFAULTS["preflight_lab_os"],
        "gpu_allowed_ids": DEFAULTS["preflight_gpu_allowed_ids"],
        "min_link_width": DEFAULTS["preflight_min_link_width"],
        "ram_required_gib": DEFAULTS["preflight_ram_required_gib"],
        "disk_requirements": [{"path": "/", "gib": 0.0, "why": "nothing"}],
    }
    return Settings.from_mapping({**base, **over})


def judged(tree: str, platform: Platform = NOBLE, **over):
    s = role_settings(**over)
    facts = collect(SysRoot(HOST_FIXTURES / tree), [d["path"] for d in s.disk_requirements])
    return preflight.judge(platform, facts, s)


def test_the_dual_b60_box_passes_with_its_gen3_links_reported():
    problems, warnings = judged("dual-b60")
    assert problems == []
    assert warnings == [
        f"{a}: PCIe link runs below what the card supports (see arcops box gpus)"
        for a in ("0000:29:00.0", "0000:2d:00.0")
    ]


@pytest.mark.parametrize(
    ("tree", "over", "expected"),
    [
        ("one-gpu-unbound", {}, "GPU(s) not bound to xe: 0000:2d:00.0 driver=none. Install the pinned stack"),
        (
            "no-intel-gpu",
            {},
            "Found 0 supported GPU(s), need 2. Intel display devices seen: none. Check the cards",
        ),
        (
            "low-ram-32g",
            {},
            "Host RAM: MemTotal 31.4 GiB, profile graph_mtp needs 64 GB installed (MemTotal 60.16 GiB",
        ),
        (
            "low-ram-32g",
            {"vllm_profile": "eager", "unsigned_kernel": True},
            "Secure Boot is on and an unsigned mainline kernel is planned (arcops_mainline_kernel is set)",
        ),
        (
            "dual-b60",
            {"bundle": "/nonexistent/b.tar.xz", "bundle_on_controller": False},
            "Offline bundle /nonexistent/b.tar.xz is not on the control node. Download Intel's",
        ),
        (
            "dual-b60",
            {"disk_requirements": [{"path": "/", "gib": 1e9, "why": "a huge cache"}]},
            "Disk: / has ",
        ),
    ],
)
def test_each_unfit_box_is_refused_with_what_to_do(tree, over, expected):
    problems, _ = judged(tree, **over)
    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_every_problem_is_reported_at_once_in_reading_order():
    problems, _ = judged(
        "low-ram-32g",
        platform=Platform("Fedora", "41", "41", "6.11", "ops", 1000),
        bundle="/nonexistent/b.tar.xz",
        bundle_on_controller=False,
    )
    assert [p.split(" ")[0] for p in problems] == ["Fedora", "arcops", "Host", "Offline"]
    assert problems[0].endswith(
        "arcops targets Ubuntu 24.04. Debian is accepted only in test labs (arcops_lab_mode=true)."
    )
    assert problems[1].startswith("arcops runs as ops (uid 1000) on the box and needs root")


def test_debian_passes_only_in_lab_mode_by_its_major_version():
    assert judged("dual-b60", platform=BOOKWORM)[0][0].startswith("Debian 12.8 is not supported")
    assert judged("dual-b60", platform=BOOKWORM, lab_mode=True)[0] == []


def test_low_ram_is_accepted_when_asked_and_a_url_bundle_is_not_checked_here():
    assert judged("low-ram-32g", allow_low_ram=True)[0] == []
    assert judged("dual-b60", bundle="https://mirror/b.tar.xz", bundle_on_controller=False)[0] == []


def test_warnings_name_the_narrow_link_and_the_small_bar_but_not_the_igpu_display():
    _, warnings = judged("pcie-downgraded")
    assert [w for w in warnings if "narrower than x8" in w] == [
        "0000:2d:00.0: PCIe slot link narrower than x8; tensor-parallel all-reduce will be slower"
    ]
    assert [w[:12] for w in warnings if "resizable BAR looks off" in w] == ["0000:2d:00.0"]
    problems, warnings = judged("mixed-igpu-display")
    assert problems == [] and not [w for w in warnings if "drives the display" in w]


def test_the_record_is_deterministic_and_lists_only_allowed_gpus():
    s = role_settings()
    facts = collect(SysRoot(HOST_FIXTURES / "mixed-igpu-display"), ["/"])
    first = preflight.record(NOBLE, facts, s, [])
    facts["free_gib"] = {"/": 1.0}  # free disk moves; the record must not
    assert preflight.record(NOBLE, facts, s, []) == first
    assert [g["address"] for g in first["gpus"]] == ["0000:29:00.0", "0000:2d:00.0"]
    assert first["display_gpu"] == "0000:00:02.0" and first["os"] == "Ubuntu 24.04"


def _root(tmp_path: Path, os_release: str, debian_version: str | None = None) -> SysRoot:
    (tmp_path / "etc").mkdir(parents=True)
    (tmp_path / "etc/os-release").write_text(os_release)
    if debian_version is not None:
        (tmp_path / "etc/debian_version").write_text(debian_version + "\n")
    return SysRoot(tmp_path)


# Real /etc/os-release files (Ubuntu 24.04, Debian 12) and what Ansible's setup reports for them.
NOBLE_OS_RELEASE = (
    'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\nID_LIKE=debian\n'
)
BOOKWORM_OS_RELEASE = (
    'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n'
)


def test_the_platform_reads_as_ansible_reports_it(tmp_path):
    noble = preflight.read_platform(_root(tmp_path / "u", NOBLE_OS_RELEASE))
    assert (noble.distribution, noble.version, noble.major_version) == ("Ubuntu", "24.04", "24")
    bookworm = preflight.read_platform(_root(tmp_path / "d", BOOKWORM_OS_RELEASE, "12.8"))
    assert (bookworm.distribution, bookworm.version, bookworm.major_version) == ("Debian", "12.8", "12")
    # A testing/sid debian_version is not a point release of VERSION_ID: VERSION_ID stays.
    odd = preflight.read_platform(_root(tmp_path / "s", BOOKWORM_OS_RELEASE, "trixie/sid"))
    assert odd.version == "12"
    other = preflight.read_platform(_root(tmp_path / "f", 'NAME="Fedora Linux"\nID=fedora\nVERSION_ID=41\n'))
    assert (other.distribution, other.version) == ("Fedora", "41")
    empty = preflight.read_platform(SysRoot(tmp_path / "nothing"))
    assert empty.distribution == "unknown" and empty.kernel


@pytest.mark.parametrize(
    ("values", "error"),
    [
        ({"gpu_count": "two"}, "settings.gpu_count: must be of type int, got str"),
        ({"gpu_count": True}, "settings.gpu_count: must be of type int, got bool"),
        ({"lab_mode": "yes"}, "settings.lab_mode: must be of type bool, got str"),
        ({"gpu_cuont": 2}, "settings.gpu_cuont: not a preflight setting"),
        (
            {"disk_requirements": [{"path": "/"}]},
            "settings.disk_requirements[0]: must be a mapping with path",
        ),
        ({"disk_requirements": ["/"]}, "settings.disk_requirements[0]: must be a mapping with path"),
        (
            {"disk_requirements": [{"path": "var", "gib": 1}]},
            "settings.disk_requirements[0]: must be a mapping",
        ),
        ({"supported_os": ["Ubuntu 24.04"]}, "settings.supported_os[0]: must be a mapping with distribution"),
        (
            {"ram_required_gib": {"eager": "32"}},
            "settings.ram_required_gib['eager']: must be a number of GiB",
        ),
    ],
)
def test_bad_settings_are_refused_by_name(values, error):
    with pytest.raises(ValueError) as e:
        Settings.from_mapping(values)
    assert str(e.value).startswith(error)


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.dictionaries(st.sampled_from([*Settings.__dataclass_fields__, "other"]), _JSONISH, max_size=6))
@example({"disk_requirements": [{"path": "/", "gib": True}]})  # a bool is not a number of GiB
@example({"ram_required_gib": {"graph_mtp": "64"}, "vllm_profile": "graph_mtp"})
@example({"disk_requirements": [{"path": "/\x00", "gib": 1}]})  # statvfs refuses a NUL byte
def test_any_settings_are_judged_or_refused_never_a_crash(values):
    """Whatever the module is handed: Settings or a ValueError; a Settings is then judged."""
    try:
        s = Settings.from_mapping(values)
    except ValueError as e:
        assert str(e).startswith("settings.")
        return
    facts = collect(SysRoot(HOST_FIXTURES / "dual-b60"), [d["path"] for d in s.disk_requirements])
    problems, warnings = preflight.judge(NOBLE, facts, s)
    assert all(isinstance(p, str) for p in problems + warnings)


HERE = preflight.read_platform()  # the module runs on this machine: accept its OS
MODULE_SETTINGS = {
    "supported_os": [{"distribution": HERE.distribution, "version": HERE.version}],
    "gpu_allowed_ids": ["0xe211"],
    "ram_required_gib": {"none": 1},
    "vllm_profile": "none",
    "disk_requirements": [],
}


def _module(tmp_path, check=False, **over):
    args = {
        "root": str(HOST_FIXTURES / "dual-b60"),
        "fact_dir": str(tmp_path / "facts"),
        "settings": {**MODULE_SETTINGS, **over},
    }
    return run_module("arcops_preflight", json.dumps(args), check=check)


@needs_ansible
def test_module_writes_the_record_once_and_never_for_an_unfit_box(tmp_path):
    fact = tmp_path / "facts" / records.STAGES["preflight"]
    unfit = _module(tmp_path, gpu_count=3)
    assert unfit["problems"][0].startswith("Found 2 supported GPU(s), need 3")
    assert unfit["changed"] is False and not fact.exists()
    dry = _module(tmp_path, check=True)
    assert dry["changed"] is True and not fact.exists()
    first = _module(tmp_path)
    assert first["changed"] is True and json.loads(fact.read_text())["vllm_profile"] == "none"
    again = _module(tmp_path)
    assert again["changed"] is False and again["problems"] == []
    assert [g["address"] for g in again["gpus"]] == ["0000:29:00.0", "0000:2d:00.0"]
    assert again["ansible_facts"]["arcops"]["simulated"] is True
    assert again["ansible_facts"]["kernel"] and again["ansible_facts"]["stage_seal_survey"] == {}


@needs_ansible
def test_module_refuses_bad_settings_by_name(tmp_path):
    bad = _module(tmp_path, gpu_count="two")
    assert bad["failed"] and bad["msg"] == "settings.gpu_count: must be of type int, got str"


def test_module_documents_the_seal_folder_it_reads():
    """The survey's folder is records.STATE_ROOT; the doc and every stage's default agree."""
    assert (
        f"C({records.STATE_ROOT}/<stage>/seal.json)"
        in (REPO / "plugins/modules/arcops_preflight.py").read_text()
    )
    for stage in ("intel_stack", "mainline_kernel", "llama_cpp_sycl", "vllm_service"):
        for layer in ("defaults", "vars"):
            path = REPO / "roles" / stage / layer / "main.yml"
            value = (yaml.safe_load(path.read_text()) or {}).get(f"{stage}_state_dir")
            if value is not None:
                assert value == f"{records.STATE_ROOT}/{stage}", path


def test_the_ram_rule_has_one_home():
    """Preflight judges a box and the vLLM spec refuses settings by the same figures
    (arcops.box.ram_rule): the role states none of its own."""
    from arcops.box import ram_rule
    from arcops.vllm import spec_checks

    assert DEFAULTS["preflight_ram_required_gib"] == {}
    assert spec_checks.RAM_REQUIRED_GIB is ram_rule.REQUIRED_GIB
    assert Settings().ram_visible_factor == ram_rule.VISIBLE_FACTOR == spec_checks.VISIBLE_FACTOR
