"""Bad input by class: records and reports from an earlier version or cut short. Every reader of
a file arcops wrote earlier (each stage's state.json and published facts, the watchdog's start
report, the health watch's files, a stage's seal, the trial-boot record, debrepack's report) gets
each damaged form: cut in half, empty, a list or a scalar where a mapping belongs, a mapping
without its keys, a later format, nesting past Python's recursion limit, bytes that are not UTF-8.
Each is read as unknown (None, a one-line reason) or refused by its own one-line error, which for
a stage's state says to move the file aside; never a traceback. The tally is docs/testing.md's."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from arcops.common import records
from arcops.common.inputs import InputError
from arcops.common.sysroot import SysRoot
from arcops.kernel import debrepack, trial
from arcops.operate import metrics
from arcops.stages import seal
from arcops.stages.status import START_REPORT
from arcops.vllm.health_watch import LATEST, RESTARTS_FILE

GOOD = json.dumps({"schema": records.SCHEMA, "stage": "vllm_service", "installed": True, "endpoint": {}})
DAMAGED = {
    "cut in half": GOOD[: len(GOOD) // 2],
    "empty": "",
    "a list": "[]",
    "a list of records": f"[{GOOD}]",
    "null": "null",
    "a string": '"state"',
    "a number": "1e999",
    "no keys": "{}",
    "a later format": json.dumps({"schema": records.SCHEMA + 1, "stage": "vllm_service", "format": 99}),
    "keys of the wrong type": json.dumps({"schema": "1", "stage": ["x"], "installed": "yes", "inputs": []}),
    "too deep": "[" * 100_000,
    "not UTF-8": b"\xff\xfe{\x00}",
}
_ONE_LINE = (records.RecordError, trial.TrialError, InputError, ValueError)


def _write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)


def _state(stage):
    def read(d: Path):
        _write(d / records.STATE_FILE, read.text)
        return records.read(stage, str(d))

    return read


def _facts(d: Path):
    for name in records.STAGES.values():
        _write(d / name, _facts.text)
    found = records.read_published(d)
    assert all(v is None or isinstance(v, (dict, str)) for v in found.values()), found
    return found


def _start(d: Path):
    _write(d / "r" / START_REPORT, _start.text)
    return metrics.last_start_report(SysRoot(str(d)), "/r")


def _health(d: Path):
    _write(d / "r" / LATEST, _health.text)
    _write(d / "r" / RESTARTS_FILE, _health.text)
    return metrics.health_files(SysRoot(str(d)), "/r")


def _seal(d: Path):
    _write(seal.path(str(d)), _seal.text)
    return seal.load(str(d))


def _trial(d: Path):
    _write(trial.path(d), _trial.text)
    return trial.read(d)


def _repack(d: Path):
    output = d / "x.deb"
    _write(output, b"!<arch>\n")
    _write(debrepack.report_path(output), _repack.text)
    return debrepack.previous_report(output, "0" * 64)


READERS = {
    **{f"{stage} state.json": _state(stage) for stage in records.STAGES},
    "published facts": _facts,
    "start report": _start,
    "health watch files": _health,
    "seal": _seal,
    "trial record": _trial,
    "debrepack report": _repack,
}


def _one(name: str, form: str, tmp: Path) -> str:
    read = READERS[name]
    read.text = DAMAGED[form]
    try:
        found = read(tmp)
    except _ONE_LINE as e:
        assert str(e) and "\n" not in str(e), str(e)
        if name.endswith("state.json"):
            assert "move it aside" in str(e) or "run the arcops that wrote it" in str(e), str(e)
        return "refused"
    assert found is None or isinstance(found, (dict, list, tuple, str)), found
    return "unknown"


@pytest.mark.parametrize("form", list(DAMAGED))
@pytest.mark.parametrize("name", list(READERS))
def test_a_damaged_file_is_unknown_or_refused_in_one_line(name, form, tmp_path):
    _one(name, form, tmp_path)


def test_docs_state_the_tally(tmp_path):
    ended = Counter()
    for n, name in enumerate(READERS):
        for k, form in enumerate(DAMAGED):
            ended[_one(name, form, tmp_path / f"{n}-{k}")] += 1
    text = (Path(__file__).parents[1] / "docs" / "testing.md").read_text()
    total, unknown, refused = sum(ended.values()), ended["unknown"], ended["refused"]
    stated = f"cut short: {total} cases, {unknown} read as unknown, {refused} refused"
    assert stated in text, f"docs/testing.md should say: {stated}"
