"""arcops operate diag: the bundle of a fixture box (tests/fixtures/hosts/dual-b60 with records, a start
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
from arcops import cli
from arcops.common import records
from arcops.operate import redact
from hypothesis import given, settings
from hypothesis import strategies as st

from .helpers.fuzz import FUZZ

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
    assert (
        cli.main(["operate", "diag", "--root", str(box), "--output", str(out), "--timeout", "1", "--json"])
        == 0
    )
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
        assert cli.main(["operate", "diag", "--root", str(box), "--output", str(output)]) == 2
        assert message in capsys.readouterr().err
    assert (
        cli.main(
            ["operate", "diag", "--root", str(box), "--output", str(tmp_path / "d.tar.gz"), "--timeout", "0"]
        )
        == 2
    )
    assert dump.read_bytes() == before and not (tmp_path / "d.tar.gz").exists()


def test_keep_devcoredumps_leaves_them(box, tmp_path, capsys):
    out = tmp_path / "diag.tar.gz"
    assert (
        cli.main(
            [
                "operate",
                "diag",
                "--root",
                str(box),
                "--output",
                str(out),
                "--timeout",
                "1",
                "--keep-devcoredumps",
            ]
        )
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


# Each shape a secret takes in argv, logs and records (issue: every shape, one by one), and
# what must be left alone: (text, what the bundle says).
SHAPES = [
    ("vllm serve --api-key sk-1 --port 8000", "vllm serve --api-key [REDACTED] --port 8000"),
    ("vllm serve --api_key sk-1", "vllm serve --api_key [REDACTED]"),
    ("vllm serve --api-key=sk-1", "vllm serve --api-key=[REDACTED]"),
    ("--api-key 'two words' --port 1", "--api-key '[REDACTED]' --port 1"),
    ('--api-key "two words"', '--api-key "[REDACTED]"'),
    ('"Args": ["--model", "m", "--api-key", "sk-1"]', '"Args": ["--model", "m", "--api-key", "[REDACTED]"]'),
    ("argv: ['--api-key', 'sk-1', '--port', '8000']", "argv: ['--api-key', '[REDACTED]', '--port', '8000']"),
    ('"Cmd": ["--api-key=sk-1"]', '"Cmd": ["--api-key=[REDACTED]"]'),
    ("--hf-token hf_x1 --password=p4", "--hf-token [REDACTED] --password=[REDACTED]"),
    ("Authorization: Bearer abc.def-ghi", "Authorization: Bearer [REDACTED]"),
    ("Authorization: Token abc", "Authorization: Token [REDACTED]"),
    ("Authorization: ApiKey abc", "Authorization: ApiKey [REDACTED]"),
    ("authorization: rawkey", "authorization: [REDACTED]"),
    ('"Authorization": "Basic dXNlcjpwYXNz"', '"Authorization": "Basic [REDACTED]"'),
    ("curl -H 'Bearer abc123'", "curl -H 'Bearer [REDACTED]'"),
    ("git clone https://user:pa55@example.com/repo.git", "git clone https://[REDACTED]@example.com/repo.git"),
    ("fetched https://ghp_TOKEN123@example.com/x", "fetched https://[REDACTED]@example.com/x"),
    ('API_KEY="a b c" next', 'API_KEY="[REDACTED]" next'),
    ("VLLM_API_KEY=k", "VLLM_API_KEY=[REDACTED]"),
    ('{"api_key": "zz"}', '{"api_key": "[REDACTED]"}'),
    ("HF_TOKEN=hf_abc other", "HF_TOKEN=[REDACTED] other"),
    # Not secrets: a key's file, token counts, a tokenizer, an ssh address.
    ("--api-key-file /etc/arcops/llama-server.key", "--api-key-file /etc/arcops/llama-server.key"),
    ("api_key_file: /etc/arcops/vllm/api-key.env", "api_key_file: /etc/arcops/vllm/api-key.env"),
    ("--max-num-batched-tokens 8192 --tokenizer /m", "--max-num-batched-tokens 8192 --tokenizer /m"),
    ("max_num_batched_tokens: 8192", "max_num_batched_tokens: 8192"),
    ("git@example.com:repo.git", "git@example.com:repo.git"),
]


@pytest.mark.parametrize(("text", "expected"), SHAPES, ids=[s[0][:40] for s in SHAPES])
def test_each_shape_a_secret_takes_is_redacted(text, expected):
    assert redact.Redactor([]).text(text) == expected


def test_a_short_known_key_is_scrubbed_as_a_word_only():
    """A key file holding a short key: scrubbed where it stands alone, not inside other words."""
    r = redact.Redactor(redact.secret_values("abc\n"))
    assert r.text("key abc used; abcdef and xabc stay") == "key [REDACTED] used; abcdef and xabc stay"
    assert r.data(b"\x00abc\x00") == b"\x00[REDACTED]\x00"
    assert redact.secret_values("VLLM_API_KEY=ab\n") == []  # two characters are no key


@settings(FUZZ)
@given(st.text(max_size=200), st.text(alphabet="abcdefXYZ0123456789-_", min_size=6, max_size=20))
def test_a_known_secret_never_survives_redaction(text, secret):
    planted = f"{text}{secret}{text}VLLM_API_KEY={secret}"
    out = redact.Redactor([secret]).text(planted)
    assert secret not in out


def test_a_key_file_moved_out_of_its_default_place_is_still_known(box, tmp_path, capsys):
    """The key in a non-default key file (named by the vLLM record's endpoint) is scrubbed
    everywhere and the file is never put in the bundle."""
    other = "sk-elsewhere-5e6f7a8b"
    keys = box / "srv/keys"
    keys.mkdir(parents=True)
    (keys / "vllm.env").write_text(f"VLLM_API_KEY={other}\n")
    facts = box / records.FACT_DIR.lstrip("/")
    vllm = json.loads((facts / records.STAGES["vllm_service"]).read_text())
    vllm["endpoint"] = {"url": "http://127.0.0.1:8000", "api_key_file": "/srv/keys/vllm.env"}
    (facts / records.STAGES["vllm_service"]).write_text(records.render(vllm))
    (box / STARTS.lstrip("/") / "seen.log").write_text(f"started with {other}\n")
    stray = box / "var/lib/arcops/verify/keys.json"
    stray.write_text(json.dumps({"copied": other}))
    out = tmp_path / "diag.tar.gz"
    assert (
        cli.main(["operate", "diag", "--root", str(box), "--output", str(out), "--timeout", "1", "--json"])
        == 0
    )
    files = bundle_files(out)
    assert all(other.encode() not in data for data in files.values())
    assert not any(name.endswith("vllm.env") for name in files)


def test_a_bundle_is_made_exclusively_and_never_over_a_file(box, tmp_path, capsys):
    out = tmp_path / "diag.tar.gz"
    argv = ["operate", "diag", "--root", str(box), "--output", str(out), "--timeout", "1"]
    assert cli.main(argv) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    before = out.read_bytes()
    assert cli.main(argv) == 2  # exists: refused before anything is read
    assert out.read_bytes() == before
    assert "exists; name a new file" in capsys.readouterr().err
    # A link somebody left at the name is neither followed nor replaced.
    target = tmp_path / "victim"
    target.write_text("keep")
    link = tmp_path / "link.tar.gz"
    link.symlink_to(target)
    assert cli.main([*argv[:4], "--output", str(link), "--timeout", "1"]) == 2
    assert target.read_text() == "keep" and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no partial left
