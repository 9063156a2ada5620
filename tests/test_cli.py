import json

from arcops.cli import main


def test_facts_json(dual_b60, capsys):
    assert main(["box", "facts", "--root", str(dual_b60), "--json", "--disk", "/tmp"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["simulated"] is True
    assert out["host"]["mem_total_gib"] == 62.7
    assert [g["device_id"] for g in out["gpus"]] == ["0xe211", "0xe211"]


def test_gpus_table_says_simulated_and_shows_the_slot_link(dual_b60, capsys):
    assert main(["box", "gpus", "--root", str(dual_b60)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("SIMULATED")
    assert out[1].split()[:3] == ["address", "device_id", "model"]
    assert "8GT/s x8 (max 32GT/s x8)" in out[2]
    assert out[2].split()[-1] == "70.60.0"


def test_firmware_version_refuses_a_non_blob(tmp_path, capsys):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"not firmware" * 20)
    assert main(["box", "firmware-version", str(junk)]) == 2
    assert "not a GuC/HuC firmware blob" in capsys.readouterr().err


def test_guc_loaded_from_a_journal_file(capsys):
    from .conftest import REPO

    log = REPO / "tests/fixtures/journal/xe-firmware-loads.log"
    assert main(["box", "guc-loaded", "--journal-file", str(log), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {(r["address"], r["kind"], r["version"]) for r in rows} >= {
        ("0000:29:00.0", "GuC", "70.60.0"),
        ("0000:2d:00.0", "GuC", "70.60.0"),
    }
