"""Firmware files xe asked for in vain: read from the kernel's own journal lines (text and JSON
export, user-space look-alikes ignored), checked against what is installed now, judged by preflight."""

import json

import yaml
from arcops.box import firmware_requests, preflight
from arcops.box.facts import collect
from arcops.box.preflight import Platform, Settings
from arcops.common.sysroot import SysRoot
from hypothesis import given
from hypothesis import strategies as st

from .conftest import HOST_FIXTURES, REPO
from .helpers.fuzz import FUZZ

LOG = REPO / "tests/fixtures/journal/xe-firmware-missing.log"
RELEASE = "6.17.0-1009-intel"
NOBLE = Platform("Ubuntu", "24.04", "24", RELEASE, "root", 0)
DEFAULTS = yaml.safe_load((REPO / "roles/preflight/defaults/main.yml").read_text())


def role_settings() -> Settings:
    """The role's defaults (the literal ones) with no disk need."""
    keys = ("supported_os", "lab_os", "gpu_allowed_ids", "min_link_width", "ram_required_gib")
    base = {key: DEFAULTS[f"preflight_{key}"] for key in keys}
    return Settings.from_mapping({**base, "disk_requirements": [{"path": "/", "gib": 0.0, "why": "nothing"}]})


def _lines():
    with LOG.open(encoding="utf-8") as f:
        yield from f


def test_each_failed_load_of_the_kernel_is_read_once_in_the_order_seen():
    assert firmware_requests.requests(_lines()) == [
        ("0000:29:00.0", "xe/bmg_guc_70.bin", -2),
        ("0000:2d:00.0", "xe/bmg_huc.bin", -2),
        ("0000:2d:00.0", "i915/bmg_dmc.bin", -2),
        ("0000:2d:00.0", "xe/bmg_guc_70.bin", -13),
    ]  # not fwtest[812]'s look-alike, not a name that climbs out of the firmware folder


def test_json_export_counts_only_the_kernels_entries():
    message = "xe 0000:29:00.0: Direct firmware load for xe/bmg_guc_70.bin failed with error -2"
    lines = [
        json.dumps({"_TRANSPORT": "stdout", "SYSLOG_IDENTIFIER": "fwtest", "MESSAGE": message}),
        json.dumps(
            {"_TRANSPORT": "kernel", "SYSLOG_IDENTIFIER": "kernel", "MESSAGE": list(message.encode())}
        ),
    ]
    assert firmware_requests.requests(lines[:1]) == []
    assert firmware_requests.requests(lines) == [("0000:29:00.0", "xe/bmg_guc_70.bin", -2)]


def test_dmesg_and_cat_forms_are_the_kernels():
    bare = "xe 0000:29:00.0: Direct firmware load for xe/bmg_huc.bin failed with error -2\n"
    assert firmware_requests.requests([bare, "[    4.518832] " + bare]) == [
        ("0000:29:00.0", "xe/bmg_huc.bin", -2)
    ]


def test_a_file_installed_since_boot_is_present_now_in_any_folder_and_form(tmp_path):
    (tmp_path / f"lib/firmware/updates/{RELEASE}/xe").mkdir(parents=True)
    (tmp_path / f"lib/firmware/updates/{RELEASE}/xe/bmg_huc.bin.zst").write_bytes(b"x")
    (tmp_path / "lib/firmware/i915").mkdir(parents=True)
    (tmp_path / "lib/firmware/i915/bmg_dmc.bin").write_bytes(b"x")
    (tmp_path / "lib/firmware/xe").mkdir(parents=True)
    (tmp_path / "lib/firmware/xe/bmg_guc_70.bin").mkdir()  # a folder is no firmware file
    found = firmware_requests.missing(SysRoot(tmp_path), _lines(), RELEASE)
    assert [(m.file, m.present_now) for m in found] == [
        ("xe/bmg_guc_70.bin", False),
        ("xe/bmg_huc.bin", True),
        ("i915/bmg_dmc.bin", True),
        ("xe/bmg_guc_70.bin", False),
    ]


def test_preflight_names_the_file_and_the_package_and_warns_for_one_installed_since(tmp_path):
    (tmp_path / "lib/firmware/xe").mkdir(parents=True)
    (tmp_path / "lib/firmware/xe/bmg_huc.bin").write_bytes(b"x")
    facts = collect(SysRoot(HOST_FIXTURES / "dual-b60"), ["/"], read_journal=False)
    facts["firmware_missing"] = [
        m.as_dict() for m in firmware_requests.missing(SysRoot(tmp_path), _lines(), RELEASE)
    ]
    problems, warnings = preflight.judge(NOBLE, facts, role_settings())
    assert problems == [
        "0000:29:00.0: the xe driver asked for firmware xe/bmg_guc_70.bin and it is not installed: install "
        "linux-firmware (it ships /lib/firmware/xe/bmg_guc_70.bin), then reboot",
        "0000:2d:00.0: the xe driver asked for firmware i915/bmg_dmc.bin and it is not installed: install "
        "linux-firmware (it ships /lib/firmware/i915/bmg_dmc.bin), then reboot",
        "0000:2d:00.0: the xe driver asked for firmware xe/bmg_guc_70.bin and it is unreadable (error -13): "
        "install linux-firmware (it ships /lib/firmware/xe/bmg_guc_70.bin), then reboot",
    ]
    assert warnings[-1] == (
        "0000:2d:00.0: the xe driver could not load firmware xe/bmg_huc.bin at boot; it is installed now "
        "and loads on the next boot"
    )
    debian, _ = firmware_requests.problems(facts["firmware_missing"][:1], "Debian")
    assert "firmware-misc-nonfree (Debian 12)" in debian[0]


def test_a_fixture_tree_has_no_journal_and_so_no_missing_firmware():
    assert collect(SysRoot(HOST_FIXTURES / "dual-b60"))["firmware_missing"] == []


def test_damaged_entries_in_facts_are_passed_over():
    assert firmware_requests.problems([None, [], "x", 3], "Ubuntu") == ([], [])


@FUZZ
@given(st.lists(st.text(max_size=160) | st.just("xe 0000:29:00.0: Direct firmware load for "), max_size=8))
def test_any_lines_give_well_formed_requests(lines):
    for device, name, error in firmware_requests.requests(lines):
        assert len(device) == 12 and error < 0 and ".." not in name.split("/") and not name.startswith("/")
