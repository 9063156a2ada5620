"""The per-stage summary the lab ends with (and a fleet status will read): records as the roles
write them (tests/fixtures/records, copied from a converged lab box), missing, and broken."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from arcops.common.records import read_published
from arcops.stages.status import STAGES, lines, summarize
from hypothesis import given
from hypothesis import strategies as st

from .helpers.fuzz import FUZZ

RECORDS = Path(__file__).parent / "fixtures" / "records"


def _by_stage(rows):
    return {r["stage"]: r for r in rows}


def test_a_converged_lab_box_reads_as_each_stage_did(tmp_path):
    rows = _by_stage(summarize(read_published(RECORDS / "lab-box")))
    assert list(rows) == list(STAGES)
    assert rows["preflight"]["state"] == "passed"
    assert "2 GPU(s) Arc Pro B60, GuC 70.60.0" in rows["preflight"]["detail"]
    assert rows["preflight"]["detail"].endswith("(SIMULATED hardware)")
    assert rows["intel_stack"]["state"] == "installed"
    assert (
        "bundle 26.18.8.2" in rows["intel_stack"]["detail"] and "GuC 70.60.0" in rows["intel_stack"]["detail"]
    )
    assert rows["mainline_kernel"]["state"] == "installed"
    assert "-cloud-amd64" in rows["mainline_kernel"]["detail"]
    assert rows["llama_cpp_sycl"]["state"] == rows["vllm_service"]["state"] == "not run"


def test_broken_records_are_named_not_fatal(tmp_path):
    shutil.copytree(RECORDS / "lab-box", tmp_path, dirs_exist_ok=True)
    (tmp_path / "arcops_intel_stack.fact").write_text("{ not json")
    (tmp_path / "arcops_mainline_kernel.fact").write_text("[1, 2]")
    (tmp_path / "arcops_vllm_service.fact").write_bytes(b"\xff\xfe")
    os.mkfifo(tmp_path / "arcops_llama_cpp_sycl.fact")  # must not hang
    rows = _by_stage(summarize(read_published(tmp_path)))
    assert rows["preflight"]["state"] == "passed"
    for stage in ("intel_stack", "mainline_kernel", "vllm_service", "llama_cpp_sycl"):
        assert rows[stage]["state"] == "unreadable", rows[stage]
        assert "\n" not in rows[stage]["detail"]
    assert "not JSON" in rows["intel_stack"]["detail"]
    assert "not a JSON object" in rows["mainline_kernel"]["detail"]


def test_lines_align_the_columns():
    out = lines(summarize({}))
    assert len(out) == len(STAGES) and all("not run" in line for line in out)
    assert len({line.index("not run") for line in out}) == 1


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8))
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_RECORD = st.one_of(
    st.none(),
    st.text(max_size=20),  # what read_records gives for an unreadable file
    st.dictionaries(st.sampled_from(["target", "preflight", "gpus", "source", "probe", "installed"]), _JSON),
)


@FUZZ
@given(st.dictionaries(st.sampled_from(list(STAGES)), _RECORD))
def test_any_record_shape_gives_one_row_per_stage(records):
    rows = summarize(json.loads(json.dumps(records)))
    assert [r["stage"] for r in rows] == list(STAGES)
    assert all(isinstance(r["detail"], str) for r in rows)
