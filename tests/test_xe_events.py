import itertools
import json

import pytest
from arcops.box.xe_events import (
    ENGINE_RESET,
    GT_RESET,
    GT_RESET_FAILED,
    KINDS,
    PAGE_FAULT,
    TIMEDOUT_JOB,
    count,
    events,
    parse_line,
)
from hypothesis import given
from hypothesis import strategies as st

from .conftest import REPO
from .helpers.fuzz import FUZZ

JOURNALS = REPO / "tests/fixtures/journal"
RESET = "xe 0000:29:00.0: [drm] Tile0: GT0: Engine reset: engine_class=bcs, logical_mask: 0x1, guc_id=32"


def _lines(name):
    with open(JOURNALS / name, encoding="utf-8") as f:
        yield from f


def test_the_field_reports_engine_reset():
    event = parse_line(RESET)
    assert event is not None
    assert (event.kind, event.device, event.gt) == (ENGINE_RESET, "0000:29:00.0", 0)
    assert event.detail == {"engine_class": "bcs", "logical_mask": "0x1", "guc_id": 32}
    assert event.line == RESET
    assert json.loads(json.dumps(event.as_dict()))["detail"]["guc_id"] == 32


@pytest.mark.parametrize(
    "prefix",
    [
        "",  # MESSAGE as journalctl -o cat / json give it
        "2026-11-30T14:03:12+0000 arc kernel: ",  # -o short-iso
        "2026-11-30T14:03:12+00:00 arc kernel: ",  # -o short-iso, systemd >= 254
        "Nov 30 14:03:12 arc kernel: ",  # -o short
        "[ 8231.442113] ",  # dmesg
    ],
)
def test_any_journal_prefix(prefix):
    event = parse_line(prefix + RESET + "\n")
    assert event is not None and event.kind == ENGINE_RESET and event.device == "0000:29:00.0"
    assert event.line == prefix + RESET


@pytest.mark.parametrize(
    ("message", "detail"),
    [
        # Newer kernels name the process.
        (
            "Tile0: GT0: Timedout job: seqno=4294967169, lrc_seqno=4294967169, guc_id=32, flags=0x0 "
            "in python3 [41234]",
            {
                "seqno": 4294967169,
                "lrc_seqno": 4294967169,
                "guc_id": 32,
                "flags": "0x0",
                "process": "python3",
                "pid": 41234,
            },
        ),
        (
            "Tile0: GT0: Timedout job: seqno=2741, lrc_seqno=2741, guc_id=4, flags=0x0",
            {"seqno": 2741, "lrc_seqno": 2741, "guc_id": 4, "flags": "0x0"},
        ),
        # drm_notice before xe_gt_notice: no GT prefix; before lrc_seqno existed.
        ("Timedout job: seqno=17, guc_id=3, flags=0x8", {"seqno": 17, "guc_id": 3, "flags": "0x8"}),
        (
            "Tile0: GT1: Timedout job: seqno=5, lrc_seqno=5, guc_id=2, flags=0x0 in kworker/u49:0 [-1]",
            {"seqno": 5, "lrc_seqno": 5, "guc_id": 2, "flags": "0x0", "process": "kworker/u49:0", "pid": -1},
        ),
    ],
)
def test_timedout_job_formats(message, detail):
    event = parse_line(f"xe 0000:2d:00.0: [drm] {message}")
    assert event is not None and event.kind == TIMEDOUT_JOB
    assert event.detail == detail
    assert event.gt == (None if "GT" not in message else int(message.split("GT")[1][0]))


def test_gt_reset_started_and_failed_but_not_done_or_queued():
    base = "xe 0000:03:00.0: [drm] "
    started = parse_line(base + "Tile0: GT0: reset started")
    assert started is not None and started.kind == GT_RESET and started.detail == {}
    old = parse_line(base + "GT1: reset started")  # before the Tile prefix
    assert old is not None and old.kind == GT_RESET and old.gt == 1
    failed = parse_line(base + "*ERROR* Tile0: GT0: reset failed (-ETIMEDOUT)")
    assert failed is not None and failed.kind == GT_RESET_FAILED and failed.detail == {"error": "-ETIMEDOUT"}
    for message in (
        "Tile0: GT0: reset done",
        "Tile0: GT0: reset queued",
        "Tile0: GT0: trying reset from guc_exec_queue_timedout_job+0x1a0/0x7c0 [xe]",
    ):
        assert parse_line(base + message) is None, message


@pytest.mark.parametrize(
    "line",
    [
        "xe 0000:29:00.0: [drm] Tile0: GT0: Using GuC firmware from xe/bmg_guc_70.bin version 70.60.0",
        "xe 0000:29:00.0: [drm] Xe device coredump has been created",
        "xe 0000:29:00.0: [drm] Check your /sys/class/drm/card1/device/devcoredump/data",
        "i915 0000:00:02.0: [drm] GPU HANG: ecode 12:1:85dffffb, in Xorg [1234]",
        "[UFW BLOCK] IN=enp5s0 OUT= SRC=192.168.1.20 DST=192.168.1.255 PROTO=UDP",
        "amdgpu 0000:03:00.0: Engine reset: engine_class=bcs, logical_mask: 0x1, guc_id=32",
        "watchdog: BUG: soft lockup - CPU#3 stuck for 652s! [kworker/u49:0]",
        "\tASID: 23",
        "",
    ],
)
def test_other_lines_are_no_events(line):
    assert parse_line(line) is None


def test_the_dual_b60_hang_journal():
    found = list(events(_lines("xe-dual-b60-hang.log")))
    assert [(e.kind, e.device) for e in found] == [
        (ENGINE_RESET, "0000:29:00.0"),
        (ENGINE_RESET, "0000:2d:00.0"),
        (TIMEDOUT_JOB, "0000:29:00.0"),
        (TIMEDOUT_JOB, "0000:2d:00.0"),
        (GT_RESET, "0000:2d:00.0"),
    ]
    counted = count(_lines("xe-dual-b60-hang.log"))
    assert counted["total"] == 5
    assert counted["by_kind"] == {
        ENGINE_RESET: 2,
        TIMEDOUT_JOB: 2,
        GT_RESET: 1,
        GT_RESET_FAILED: 0,
        PAGE_FAULT: 0,
    }
    assert counted["by_device"]["0000:29:00.0"][ENGINE_RESET] == 1
    assert counted["by_device"]["0000:2d:00.0"] == {
        **dict.fromkeys(KINDS, 0),
        ENGINE_RESET: 1,
        TIMEDOUT_JOB: 1,
        GT_RESET: 1,
    }


def test_page_faults_count_once_each_not_per_dump_line():
    # journalctl -o cat prints xe's multi-line fault dump as continuation lines without a prefix.
    counted = count(_lines("xe-mainline-pagefaults.cat.log"))
    assert counted["by_device"] == {
        "0000:03:00.0": {ENGINE_RESET: 1, TIMEDOUT_JOB: 1, GT_RESET: 1, GT_RESET_FAILED: 1, PAGE_FAULT: 2}
    }
    faults = [e for e in events(_lines("xe-mainline-pagefaults.cat.log")) if e.kind == PAGE_FAULT]
    assert [f.detail for f in faults] == [{"error": "-EINVAL"}, {"error": "-ENOENT"}]


def test_a_multi_line_message_from_json_output():
    # journalctl -o json keeps the dump in one MESSAGE with embedded newlines.
    message = (
        "xe 0000:03:00.0: [drm] Tile0: GT0: \n\tASID: 23\n\tFaulted Address: 0x00007f1c2a400000\n"
        "\tEngineClass: 3 bcs\n\tEngineInstance: 0"
    )
    assert list(events([message])) == []
    assert [
        e.kind
        for e in events([message, "xe 0000:03:00.0: [drm] Tile0: GT0: Fault response: Unsuccessful -14"])
    ] == [PAGE_FAULT]


def test_events_stream_lazily():
    def endless():
        yield "nothing to see"
        yield RESET
        for i in itertools.count():
            yield f"[UFW BLOCK] ID={i}"

    first = next(events(endless()))
    assert first.kind == ENGINE_RESET
    assert count(itertools.islice(endless(), 1000))["total"] == 1


def test_kernel_lines_with_check_fails_when_the_journal_cannot_be_read(tmp_path, monkeypatch):
    """What the hardware check relies on: no journalctl, or a failing one, is an error, not 0 events."""
    from arcops.box import journal

    monkeypatch.setenv("PATH", str(tmp_path))
    assert list(journal.kernel_lines()) == []  # the lenient reader: nothing
    with pytest.raises(journal.JournalError, match="journalctl not found"):
        list(journal.kernel_lines(check=True))
    failing = tmp_path / "journalctl"
    failing.write_text("#!/bin/sh\necho 'Failed to open journal' >&2\nexit 1\n")
    failing.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    with pytest.raises(journal.JournalError, match="journalctl -k exited 1"):
        list(journal.kernel_lines(check=True))


# A user-space line that only looks like the driver's is no event (issue: only the kernel's count).
GT = "xe 0000:29:00.0: [drm] Tile0: GT0: reset started"


@pytest.mark.parametrize(
    ("lines", "total"),
    [
        # -o short-iso: the identifier before the message says who logged it.
        (["2026-11-30T14:03:12+0000 arc kernel: " + GT], 1),
        (["2026-11-30T14:03:12+0000 arc myapp[4242]: " + GT], 0),
        (["2026-11-30T14:03:12+0000 arc logger: " + GT], 0),
        (["Nov 30 14:03:12 arc python3[77]: " + GT], 0),
        # A process that writes "kernel:" into its own message is still the process.
        (["2026-11-30T14:03:12+0000 arc myapp[4242]: kernel: " + GT], 0),
        # The syslog form with the printk time after "kernel:".
        (["Nov 30 14:03:12 arc kernel: [ 8231.442113] " + GT], 1),
        # A user entry's continuation lines (indented by journalctl) are the user's.
        (["2026-11-30T14:03:12+0000 arc myapp[4242]: look:", "                    " + GT], 0),
        (["2026-11-30T14:03:12+0000 arc kernel: dump:", "                    " + GT], 1),
        # Mixed: only the kernel's.
        (["Nov 30 14:03:12 arc kernel: " + GT, "Nov 30 14:03:13 arc app[1]: " + GT, "[ 1.0] " + GT], 2),
    ],
)
def test_only_the_kernels_own_text_lines_count(lines, total):
    assert count(lines)["total"] == total


def _json(transport, message, **more):
    return json.dumps({"_TRANSPORT": transport, "MESSAGE": message, "SYSLOG_IDENTIFIER": "kernel", **more})


def test_only_the_kernels_own_json_entries_count():
    """journalctl -o json: _TRANSPORT says who logged an entry, whatever its identifier claims."""
    lines = [
        _json("kernel", GT),
        _json("syslog", GT),  # logger -t kernel
        _json("stdout", GT),  # a service's output
        _json("journal", GT),
        json.dumps({"MESSAGE": GT}),  # no transport: not the kernel's
        _json("kernel", list(b"\xff " + GT.encode())),  # not UTF-8: journald gives its bytes
        _json("kernel", 5),
        "[1, 2]",
        "{not json",
        "2026-11-30T14:03:12+0000 arc kernel: " + GT,  # text and JSON mixed in one file
    ]
    assert count(lines)["by_kind"][GT_RESET] == 3


@FUZZ
@given(st.text(), st.sampled_from(["kernel", "syslog", "stdout", None]))
def test_any_json_entry_counts_only_from_the_kernel(message, transport):
    entry = json.dumps({"_TRANSPORT": transport, "MESSAGE": GT + message})
    got = count([entry])["total"]
    assert got == 0 if transport != "kernel" else got <= len((GT + message).splitlines())
