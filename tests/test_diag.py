"""arcops diag: the bundle of a fixture box (tests/fixtures/hosts/dual-b60 with records, a start
report, xe sensors and a devcoredump), with the box's commands played by stand-ins on PATH. A key
is planted wherever a secret could leak (its env file, a journal line, the container's inspect,
a service's status, a start report's stacks, a devcoredump) and must be in no file of the bundle."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tarfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arcops import cli
from arcops.operate import redact
from arcops.stages import records

from .test_fuzz import FUZZ

FIXTURES = Path(__file__).parent / "fixtures"
HANG = FIXTURES / "journal" / "xe-dual-b60-hang.log"
KEY = "sk-planted-7f3a9c1e0d"
STARTS = "/var/lib/arcops/vllm/starts"
CARD = "sys/bus/pci/devices/0000:29:00.0"
DUMP = "sys/class/drm/card1/device/devcoredump/data"


def script(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


@pytest.fixture
def box(tmp_path, monkeypatch):
    root = tmp_path / "box"
    shutil.copytree(FIXTURES / "hosts" / "dual-b60", root, symlinks=True)
    (root / "etc/arcops/vllm").mkdir(parents=True)
    (root / "etc/arcops/vllm/api-key.env").write_text(f"VLLM_API_KEY={KEY}\n")
    facts = root / records.FACT_DIR.lstrip("/")
    facts.mkdir(parents=True, exist_ok=True)
    vllm = {"image": "intel/llm-scaler-vllm:0.26.0-b2", "container": "vllm", "report_dir": STARTS}
    (facts / records.STAGES["vllm_service"]).write_text(records.render(vllm))
    starts = root / STARTS.lstrip("/")
    starts.mkdir(parents=True)
    (starts / "latest.json").write_text(json.dumps({"result": "ready", "attempts": []}))
    # The verify stage's state: two of diag's patterns match it (every stage's state, verify's folder).
    (root / "var/lib/arcops/verify").mkdir(parents=True)
    (root / "var/lib/arcops/verify/state.json").write_text('{"passed": true}\n')
    (starts / "20261203T100000Z-1.stacks.txt").write_text(f"Thread 7 (idle): env VLLM_API_KEY={KEY}\n")
    hwmon = root / CARD / "hwmon" / "hwmon3"
    hwmon.mkdir(parents=True)
    for name, value in {
        "name": "xe",
        "power1_input": "71000000",
        "energy1_input": "123456789",
        "temp2_input": "54000",
    }.items():
        (hwmon / name).write_text(value + "\n")
    freq = root / CARD / "tile0" / "gt0" / "freq0"
    (freq / "throttle").mkdir(parents=True)
    (freq / "act_freq").write_text("2400\n")
    (freq / "throttle" / "reason_pl1").write_text("0\n")
    # The second card's devcoredump, where the kernel puts it (the card's device/devcoredump).
    (root / "sys/class/drm/card1").mkdir(parents=True)
    os.symlink("../../../bus/pci/devices/0000:2d:00.0", root / "sys/class/drm/card1/device")
    (root / "sys/bus/pci/devices/0000:2d:00.0/devcoredump").mkdir()
    (root / DUMP).write_bytes(b"**** Xe Device Coredump ****\x00\x01" + KEY.encode() + b"\x02")

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script(
        bin_dir, "journalctl", f"/bin/cat {HANG}\necho \"curl -H 'Authorization: Bearer {KEY}' localhost\"\n"
    )
    script(
        bin_dir,
        "docker",
        f'echo \'[{{"Config": {{"Env": ["VLLM_API_KEY={KEY}", "CCL_TOPO_P2P_ACCESS=1"]}}}}]\'\n',
    )
    script(bin_dir, "systemctl", f'echo "arcops-vllm.service: docker run ... --api-key {KEY}"\nexit 3\n')
    script(bin_dir, "lspci", "/bin/sleep 5\n")
    monkeypatch.setenv("PATH", str(bin_dir))  # uname, free, apt-mark, dpkg-query: missing here
    return root


def bundle_files(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers()}


def test_the_bundle_has_everything_with_no_secret_in_it(box, tmp_path, capsys):
    out = tmp_path / "diag.tar.gz"
    assert cli.main(["diag", "--root", str(box), "--output", str(out), "--timeout", "1", "--json"]) == 0
    manifest = json.loads(capsys.readouterr().out)
    files = bundle_files(out)
    assert all(KEY.encode() not in data for data in files.values())
    assert manifest["redactions"] >= 6
    assert not any("api-key.env" in name for name in files)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600

    results = {e["name"]: e for e in manifest["entries"]}
    assert len(results) == len(manifest["entries"])  # each file once
    assert results["files/var/lib/arcops/verify/state.json"]["result"] == "ok"
    assert results["journal/kernel-this-boot.log"]["result"] == "ok"
    assert results["system/uname.txt"]["result"] == "missing"  # recorded, not fatal
    assert results["pci/intel-lspci.txt"]["result"] == "timeout"
    assert results["services/status.txt"]["exit_code"] == 3
    assert results["container/vllm-inspect.json"]["result"] == "ok"
    assert (
        json.loads(files["container/vllm-inspect.json"])[0]["Config"]["Env"][0] == "VLLM_API_KEY=[REDACTED]"
    )
    assert "Bearer [REDACTED]" in files["journal/kernel-this-boot.log"].decode()
    events = json.loads(files["arcops/xe-events.json"])
    assert events["this-boot"]["by_device"]["0000:2d:00.0"]["gt_reset"] == 1
    assert f"files{STARTS}/latest.json" in files and f"files{STARTS}/20261203T100000Z-1.stacks.txt" in files
    assert files[f"gpu/{CARD}/hwmon/hwmon3/power1_input"] == b"71000000\n"
    assert files[f"gpu/{CARD}/tile0/gt0/freq0/throttle/reason_pl1"] == b"0\n"
    assert "arcops_gpu_guc_info" in files["arcops/metrics.prom"].decode()
    # The devcoredump: copied (its secret scrubbed), then freed.
    assert files["devcoredump/card1.data"].startswith(b"**** Xe Device Coredump ****")
    assert results["devcoredump/card1.data"]["note"] == "device 0000:2d:00.0, freed"
    assert (box / DUMP).read_bytes() == b"1"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no partial left


def test_a_bad_output_is_refused_before_anything_is_read_or_freed(box, tmp_path, capsys):
    dump = box / DUMP
    before = dump.read_bytes()
    for output, message in (
        (tmp_path / "nowhere" / "d.tar.gz", "does not exist"),
        (tmp_path, "is a folder"),
        (tmp_path / "d.zip", "name it FILE.tar.gz"),
    ):
        assert cli.main(["diag", "--root", str(box), "--output", str(output)]) == 2
        assert message in capsys.readouterr().err
    assert (
        cli.main(["diag", "--root", str(box), "--output", str(tmp_path / "d.tar.gz"), "--timeout", "0"]) == 2
    )
    assert dump.read_bytes() == before and not (tmp_path / "d.tar.gz").exists()


def test_keep_devcoredumps_leaves_them(box, tmp_path, capsys):
    out = tmp_path / "diag.tar.gz"
    assert (
        cli.main(["diag", "--root", str(box), "--output", str(out), "--timeout", "1", "--keep-devcoredumps"])
        == 0
    )
    assert (box / DUMP).read_bytes().startswith(b"**** Xe")
    assert "devcoredump/card1.data" in bundle_files(out)
    assert "entries ok" in capsys.readouterr().out


def test_the_shapes_secrets_take_in_text():
    r = redact.Redactor(redact.secret_values("# a key\nVLLM_API_KEY='sk-known-123456'\nshort=abc\n"))
    assert r.values == ["sk-known-123456"]
    text = "\n".join(
        [
            "the key sk-known-123456 in a log",
            "HF_TOKEN=hf_abcdef api_key: 'zzz999' password=hunter22",
            "Authorization: Bearer abc.def-ghi",
            "vllm serve --api-key s3cr3t-value --port 8000",
            "git clone https://user:pa55@example.com/repo.git",
            "$ANSIBLE_VAULT;1.1;AES256\n6162636465\n3132333435\nafter",
        ]
    )
    assert r.text(text).splitlines() == [
        "the key [REDACTED] in a log",
        "HF_TOKEN=[REDACTED] api_key: '[REDACTED]' password=[REDACTED]",
        "Authorization: Bearer [REDACTED]",
        "vllm serve --api-key [REDACTED] --port 8000",
        "git clone https://[REDACTED]@example.com/repo.git",
        "[REDACTED]",
        "after",
    ]


@settings(FUZZ)
@given(st.text(max_size=200), st.text(alphabet="abcdefXYZ0123456789-_", min_size=6, max_size=20))
def test_a_known_secret_never_survives_redaction(text, secret):
    planted = f"{text}{secret}{text}VLLM_API_KEY={secret}"
    out = redact.Redactor([secret]).text(planted)
    assert secret not in out
