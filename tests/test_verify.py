"""The verify stage: its logic (arcops.prove.verify) and the role through a real ansible-playbook,
both against the real vLLM (CPU build) the gate tests start (one server for all of them).

The tiny model answers nonsense: the shipped set fails, as it must, and a set made of the
model's own answers (tests/helpers/prompt_sets.py) passes. That proves the stage's mechanics
(targets from the records, the verdict, the record, the play failing); what only an Arc box can
prove is in docs/hardware-check.md.
"""

import json

import pytest
from arcops.prove import gate, verify
from arcops.stages import role_inputs, status
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .helpers.verify_play import target
from .helpers.vllm_cpu import API_KEY, MODEL_NAME

# ------------------------------------------------------------------ targets, without a server


def test_targets_come_from_the_serving_stages_records():
    records = {
        "preflight": {"passed": True},
        "vllm_service": {
            "endpoint": {
                "url": "http://0.0.0.0:8000/v1",
                "model": "qwen",
                "api_key_file": "/etc/arcops/vllm/api-key.env",
                "stack": "intel/llm-scaler-vllm:0.26.0-b2 sha256:3f2a tp2",
            }
        },
        "llama_cpp_sycl": {"endpoint": {}},  # the server is off: nothing to ask
    }
    (t,) = verify.targets_from_records(records)
    # A wildcard listen address is asked on loopback; /v1 is the client's to add.
    assert t == {
        "name": "vllm_service",
        "kind": "vllm",
        "url": "http://127.0.0.1:8000",
        "model": "qwen",
        "api_key_file": "/etc/arcops/vllm/api-key.env",
        "stack": "intel/llm-scaler-vllm:0.26.0-b2 sha256:3f2a tp2",
    }
    assert verify.targets_from_records({"vllm_service": None, "llama_cpp_sycl": None}) == []
    with pytest.raises(verify.VerifyError, match="not JSON"):
        verify.targets_from_records({"vllm_service": "record /etc/x.fact: not JSON (...)"})


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        ("x", "verify_targets: must be a list of targets, got str"),
        ([{"url": "http://h:1"}], "verify_targets[0].name: '' must be"),
        ([{"name": "a b", "url": "http://h:1"}], "verify_targets[0].name: 'a b'"),
        ([{"name": "a", "url": "ftp://h"}], "verify_targets[0].url: 'ftp://h' is not an http(s) URL"),
        ([{"name": "a", "url": "http://h:port"}], "verify_targets[0].url"),
        ([{"name": "a", "url": "http://h:1", "port": 1}], "verify_targets[0]: 'port' is not a target field"),
        ([{"name": "a", "url": "http://h:1", "model": 3}], "verify_targets[0].model: must be text, got int"),
        ([{"name": "a", "url": "http://h:1", "api_key_file": "key"}], "must be an absolute path"),
        ([{"name": "a", "url": "http://h:1"}, {"name": "a", "url": "http://h:2"}], "'a' is given twice"),
        ([None], "verify_targets[0]: must be a mapping"),
    ],
)
def test_bad_targets_are_refused_by_name(targets, message):
    with pytest.raises(verify.VerifyError) as e:
        verify.check_targets(targets)
    assert message in str(e.value) and "\n" not in str(e.value)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_TARGET = st.fixed_dictionaries(
    {
        "name": st.text(max_size=8),
        "url": st.sampled_from(["http://h:1", "https://[::]:9/v1", "h", ""]) | st.text(),
    },
    optional={"model": _JSON, "stack": st.text(max_size=8), "api_key_file": st.text(max_size=8), "x": _JSON},
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TARGET | _JSON, max_size=3) | _JSON)
@example([{"name": "a", "url": "http://h:1", "\n": 1}])
def test_any_targets_are_checked_or_refused_in_one_line(targets):
    try:
        out = verify.check_targets(targets)
    except verify.VerifyError as e:
        assert str(e) and "\n" not in str(e)
    else:
        assert all(t["url"].startswith(("http://", "https://")) for t in out)


@settings(max_examples=200, deadline=None)
@given(_JSON)
@example({"\n": None})  # a key with a newline was once printed as it is
def test_any_bench_options_are_checked_or_refused(value):
    try:
        verify.bench_options(value)
    except verify.VerifyError as e:
        assert str(e) and "\n" not in str(e)


def test_bench_options_and_baselines():
    assert verify.bench_options(None) is None
    options = verify.bench_options({"baseline": "b60x2-graph_mtp", "concurrency": [1, 2]})
    assert options["baseline"][0] == "profile b60x2-graph_mtp" and options["concurrency"] == [1, 2]
    for value, message in [
        ({"baseline": "b70"}, "neither a profile"),
        ({"baseline": '{"format": 2}'}, "not a bench result"),
        ({"tolerance": 1.5}, "bench.tolerance"),
        ({"concurrency": [0]}, "bench.concurrency"),
        ({"output_tokens": True}, "bench.output_tokens"),
        ({"streams": 4}, "bench: 'streams' is not a bench option"),
    ]:
        with pytest.raises(verify.VerifyError, match=message):
            verify.bench_options(value)


def test_the_role_inputs_are_checked_on_the_control_node(tmp_path):
    good = {"verify_timeout": 300, "verify_targets": [], "verify_bench": False}
    assert role_inputs.problems("verify", good) == []
    bad_prompts = tmp_path / "prompts.json"
    bad_prompts.write_text('{"format": 1, "prompts": []}')
    goldens = tmp_path / "goldens"
    goldens.mkdir()
    (goldens / "old.json").write_text("[1]")
    (tmp_path / "fifo").mkdir()
    found = role_inputs.problems(
        "verify",
        {
            **good,
            "verify_targets": [{"name": "x"}],
            "verify_prompts": str(bad_prompts),
            "verify_golden_dir": str(goldens),
            "verify_bench": True,
            "verify_bench_concurrency": [1, -4],
            "verify_bench_baseline": str(tmp_path / "fifo"),
            "verify_bench_tolerance": 0.1,
            "verify_timeout": 0,
            "verify_idle_window": 601,
        },
    )
    assert [f.split(":")[0] for f in found] == [
        "verify_targets[0].url",
        "verify_prompts",
        "verify_golden_dir",
        "verify_bench_baseline",
        "verify_bench_concurrency",
        "verify_timeout must be a number of seconds above 0",
        "verify_idle_window must be seconds from 0 (off) to 600",
    ], found
    assert str(goldens / "old.json") in found[2]


def test_the_status_row_says_what_was_verified():
    record = {
        "passed": False,
        "targets": {
            "vllm_service": {"passed": True, "right": 10, "prompts": 10},
            "llama_cpp_sycl": {"passed": False, "error": "cannot reach the server"},
        },
    }
    (row,) = [r for r in status.summarize({"verify": record}) if r["stage"] == "verify"]
    assert row == {
        "stage": "verify",
        "state": "failed",
        "detail": "llama_cpp_sycl cannot reach the server (FAIL); vllm_service 10 of 10 right",
    }
    (off,) = [
        r for r in status.summarize({"verify": {"gate": False, "passed": None}}) if r["stage"] == "verify"
    ]
    assert off["state"] == "not gated"


# ------------------------------------------------------------------ against the real vLLM


def test_a_box_whose_answers_are_right_passes_and_its_record_holds_still(vllm_server, key_file, passing_set):
    targets = verify.check_targets(
        [target(vllm_server, key_file), target(vllm_server, key_file, name="no-model", model="")]
    )
    first = verify.run(targets, passing_set, [], watch=None)
    assert first["passed"] is True and first["reasons"] == []
    s = first["record"]["targets"]["vllm_service"]
    assert (s["right"], s["prompts"], s["wrong"], s["drift"]) == (
        len(passing_set["prompts"]),
        len(passing_set["prompts"]),
        [],
        None,
    )
    # No model named: the one the server serves.
    assert first["record"]["targets"]["no-model"]["model"] == MODEL_NAME
    # Nothing volatile in the record: the same answers again leave it as it was (changed=0).
    assert verify.run(targets, passing_set, [])["record"] == first["record"]
    # The full report is there for the play: latencies and both runs' answers.
    assert first["results"][0]["gate"]["prompts"][0]["sequential"]["latency_s"] > 0


def test_wrong_answers_drift_and_a_dead_service_fail_the_box(
    vllm_server, key_file, default_report, passing_set
):
    golden = gate.golden_from({**default_report, "stack": "cpu tiny"})
    golden["outputs"]["crates"] = "something else"
    targets = verify.check_targets(
        [target(vllm_server, key_file), target(vllm_server, key_file, name="dead", url="http://127.0.0.1:9")]
    )
    out = verify.run(targets, passing_set, [golden], fail_on_drift=True)
    assert out["passed"] is False
    assert out["reasons"][0] == "vllm_service: drift from the golden (crates)"
    assert out["reasons"][1].startswith(
        "dead (http://127.0.0.1:9): http://127.0.0.1:9: cannot reach the server"
    )
    # The shipped set: every answer of the random model is wrong, and the verdict says which.
    shipped = verify.run(targets[:1], gate.prompt_set.DEFAULT, [])
    assert shipped["reasons"] == [
        "vllm_service: 0 of 10 right in both runs (wrong: "
        + ", ".join(p["id"] for p in gate.prompt_set.DEFAULT["prompts"])
        + ")"
    ]
    # No key: the server says 401, and the key never shows.
    no_key = verify.run(
        verify.check_targets([target(vllm_server, key_file, api_key_file="")]), passing_set, []
    )
    assert "401" in no_key["reasons"][0] and API_KEY not in json.dumps(no_key)
    assert verify.run([], passing_set, [])["reasons"] == [
        "no service to verify: no serving stage recorded an endpoint and verify_targets is empty"
    ]


def previous_result(decode_1: float) -> str:
    """A previous bench result's JSON text, as verify_bench_baseline takes it."""
    return json.dumps({"format": 1, "decode": [{"max_concurrency": 1, "output_throughput": decode_1}]})


# The baselines sit far from any machine's speed (a floor every server beats, a ceiling none
# reaches), so the verdict does not depend on how busy the machine is; a field profile's figures
# would (the tiny CPU model near 74 tok/s on a loaded CI machine).
@pytest.mark.parametrize(("floor", "passed"), [(0.01, True), (1e8, False)])
def test_the_bench_runs_after_a_passing_gate_and_its_verdict_is_recorded(
    vllm_server, key_file, passing_set, floor, passed
):
    options = verify.bench_options(
        {"concurrency": [1], "output_tokens": 8, "requests": 2, "baseline": previous_result(floor)}
    )
    out = verify.run(
        verify.check_targets([target(vllm_server, key_file)]), passing_set, [], bench_options=options
    )
    assert out["passed"] is passed, out["reasons"]
    assert out["reasons"] == ([] if passed else ["vllm_service: bench: decode 1 worse than the baseline"])
    (level,) = out["results"][0]["bench"]["decode"]
    assert level["completed"] == 2 and level["total_output_tokens"] == 16
    assert out["record"]["targets"]["vllm_service"]["bench"] == {
        "baseline": "a previous result",
        "worse": [] if passed else ["decode 1 worse than the baseline"],
        "decode": {"1": round(level["output_throughput"], 1)},  # what the fleet's status shows
    }
