"""box/card_firmware.py on igsc's own output (tests/fixtures/igsc: an Arc Pro B50's and an A750's
answers as their owners posted them, Solaris17/Arc-Firmware#10 and #2; the dual-B60 listing is
made in igsc's listing format for the fixture tree's two addresses), the per-boot cache, the
metrics, and the fleet's drift flag."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from arcops.box import card_firmware as cf
from arcops.fleet import fleet_status
from arcops.operate import metrics
from hypothesis import example, given
from hypothesis import strategies as st

from .helpers.fuzz import FUZZ

IGSC = Path(__file__).parent / "fixtures" / "igsc"


def text(name: str) -> str:
    return (IGSC / name).read_text()


def b50(argv: list[str]) -> str | None:
    """igsc on the B50's box: answers by command; its card has no option ROM data partition."""
    answers = {
        "list-devices": "list-devices-b50.txt",
        "fw": "fw-version-b50.txt",
        "oprom-code": "oprom-code-version-b50.txt",
        "fw-data": "fw-data-version-b50.txt",
    }
    name = answers.get(argv[0])
    return text(name) if name else None


def test_each_card_s_flashed_firmware_by_pci_address():
    assert cf.read(b50) == {
        "source": "igsc",
        "cards": {
            "0000:04:00.0": {
                "fw": "BMG__21.1162",
                "oprom_code": "17 00 25 04 00 00 00 00",
                "oprom_data": None,
                "fw_data": "Format 2, Major Version: 203, OEM Manufacturing Data Version: 31, Major VCN: 0",
            }
        },
    }


def test_older_cards_formats_and_the_listing_s_hex_bus():
    a750 = text("info-a750.txt")
    assert cf.version("fw", a750) == "DG02_1.3257"
    assert cf.version("oprom_data", a750) == "14 00 24 04 00 00 00 00"
    assert cf.devices(text("list-devices-dual-b60.txt")) == {
        "0000:29:00.0": "/dev/mei1",
        "0000:2d:00.0": "/dev/mei2",
    }


def test_without_igsc_nothing_is_read_and_the_facts_say_why():
    found = cf.read(lambda argv: None)
    assert found["cards"] == {} and found["source"].startswith("not read (/usr/bin/igsc")


@FUZZ
@given(st.text(max_size=300))
@example("Device: FW Version: BMG__21.1162; rm -rf /")
@example("OPROM CODE Version: 17 00 25 04 00 00 00 00 00")
def test_any_answer_is_a_version_of_the_kind_s_shape_or_none(answer):
    for kind in cf.KINDS:
        found = cf.version(kind, answer)
        assert found is None or (len(found) <= 120 and "\n" not in found and ";" not in found)
    assert all(a.count(":") == 2 for a in cf.devices(answer))


def test_igsc_is_asked_once_per_boot_and_a_cache_root_does_not_own_is_not_trusted(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the cache is written by root only")
    calls = []

    def counting(argv):
        calls.append(argv)
        return b50(argv)

    boot = tmp_path / "boot_id"
    boot.write_text("one\n")
    cache = tmp_path / "run" / "card-firmware.json"
    first = cf.read_for_boot(counting, str(cache), boot)
    asked = len(calls)
    assert cf.read_for_boot(counting, str(cache), boot) == first and len(calls) == asked
    assert json.loads(cache.read_text())["boot_id"] == "one"
    boot.write_text("two\n")  # a new boot asks the cards again
    cf.read_for_boot(counting, str(cache), boot)
    assert len(calls) == 2 * asked
    os.chmod(cache, 0o666)  # anyone could have written it: asked again
    cf.read_for_boot(counting, str(cache), boot)
    assert len(calls) == 3 * asked


def test_the_packaged_igsc_runs_with_a_clean_environment(tmp_path, monkeypatch):
    stand_in = tmp_path / "igsc"
    stand_in.write_text(f'#!/bin/sh\ncat {IGSC}/list-devices-b50.txt\necho "PATH=$PATH" >&2\n')
    stand_in.chmod(0o755)
    monkeypatch.setattr(cf, "IGSC", str(stand_in))
    assert cf.devices(cf.run_igsc(["list-devices"])) == {"0000:04:00.0": "/dev/mei1"}
    stand_in.write_text("#!/bin/sh\nexit 3\n")
    assert cf.run_igsc(["list-devices"]) is None


def test_metrics_carry_each_card_s_firmware():
    facts = {"card_firmware": cf.read(b50), "gpus": []}
    families = metrics.collect({}, facts, None, None, now=0.0)
    found = next(f for f in families if f.name.endswith("gpu_card_firmware_info"))
    assert ({"card": "0000:04:00.0", "kind": "fw", "version": "BMG__21.1162"}, 1.0) in found.samples
    assert all(labels["kind"] != "oprom_data" for labels, _ in found.samples)


def box(fw: str, oprom: str = "17 00 25 04 00 00 00 00", cards: int = 2) -> dict:
    flashed = {
        f"0000:{29 + 4 * n:02x}:00.0": {"fw": fw, "oprom_code": oprom, "oprom_data": None}
        for n in range(cards)
    }
    facts = {"host": {"kernel": "6.17.0-1009-intel"}, "gpus": [], "card_firmware": {"cards": flashed}}
    return fleet_status.box_facts({}, facts, None, 0)


def test_a_box_whose_cards_differ_from_most_of_the_fleet_is_flagged():
    boxes = {"a": box("BMG__21.1174"), "b": box("BMG__21.1174"), "c": box("BMG__21.1162"), "d": box("")}
    boxes["d"]["card_fw"] = {}  # igsc not installed there: not judged
    out = fleet_status.fleet({"canary": ["a"], "fleet": ["b", "c", "d"]}, list(boxes), [1], {}, boxes, {})
    rows = {r["box"]: r for r in out["rows"]}
    assert rows["c"]["card_fw"] == "BMG__21.1162 (drift)" and rows["c"]["card_fw_drift"]
    assert rows["a"]["card_fw"] == "BMG__21.1174" and "card_fw_drift" not in rows["a"]
    assert rows["d"]["card_fw"] == "-"
    assert out["firmware_drift"] == [
        "c: card firmware fw BMG__21.1162, oprom_code 17 00 25 04 00 00 00 00; "
        "most boxes run fw BMG__21.1174, oprom_code 17 00 25 04 00 00 00 00"
    ]
    assert "card_fw" in fleet_status.table(out["rows"])[0].split()


def test_one_firmware_fleet_wide_is_no_drift_and_an_option_rom_alone_is():
    same = {"a": box("BMG__21.1174"), "b": box("BMG__21.1174")}
    assert fleet_status.fleet({"fleet": ["a", "b"]}, ["a", "b"], [1], {}, same, {})["firmware_drift"] == []
    rom = {"a": box("BMG__21.1174"), "b": box("BMG__21.1174", oprom="17 00 28 04 00 00 00 00")}
    found = fleet_status.fleet({"fleet": ["a", "b"]}, ["a", "b"], [1], {}, rom, {})["firmware_drift"]
    assert len(found) == 1  # a tie: the newer-sorting set is taken as the usual one
