import json

from arcops.cli import main


def test_gpus_json(dual_b60, capsys):
    assert main(["gpus", "--root", str(dual_b60), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["simulated"] is True
    assert [g["device_id"] for g in out["gpus"]] == ["0xe211", "0xe211"]


def test_gpus_table_says_simulated(dual_b60, capsys):
    assert main(["gpus", "--root", str(dual_b60)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("SIMULATED")
    assert out[1].split() == ["address", "device_id", "model", "driver", "card", "render", "numa_node"]
    assert out[2].split()[:2] == ["0000:29:00.0", "0xe211"]
