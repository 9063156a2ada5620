"""arcops-alloc-probe and the helper, built with g++ against PyPI's SYCL, on a machine without Arc.

What runs for real here: the probe with no SYCL device at all (exit 3), and on PyPI's OpenCL CPU
device (exit 4), where arcops_ze_malloc_device falls back to sycl::malloc_device and the memory
is used. The Level Zero measurement itself needs an Arc GPU (test_arc_hardware.py).
"""

import json
import subprocess

import pytest
from arcops import cli
from arcops.llama import allocprobe

from .helpers.sycl_sdk import CXX_DIR

GIB = 0.0625  # 64 MiB: quick, and still well above MemAvailable noise on the CPU device


@pytest.fixture(scope="module")
def probe(sycl_sdk, tmp_path_factory):
    out = tmp_path_factory.mktemp("probe") / "arcops-alloc-probe"
    return sycl_sdk.compile([CXX_DIR / "arcops-alloc-probe.cpp"], out, [CXX_DIR])


def run_probe(probe, sycl_sdk, tmp_path, cpu_device, *args):
    env = sycl_sdk.env(tmp_path, cpu_device)
    done = subprocess.run([str(probe), *args], env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def test_no_device_at_all_is_exit_3_and_says_so(probe, sycl_sdk, tmp_path):
    rc, out, _ = run_probe(probe, sycl_sdk, tmp_path, False, "--gib", str(GIB), "--settle-ms", "0")
    report = allocprobe.parse(out)
    assert rc == allocprobe.EXIT_NO_DEVICE == report["exit_code"]
    assert report["outcome"] == "no-sycl-device"
    assert report["devices"] == [] and report["results"] == [] and report["device"] is None
    assert report["level_zero_driver"].startswith("zeInit failed")  # no Level Zero driver here
    v = allocprobe.verdict(report)
    assert not v.ok
    assert "no SYCL device found" in v.problems[0]


def test_cpu_device_helper_falls_back_to_sycl_for_real(probe, sycl_sdk, tmp_path):
    rc, out, _ = run_probe(probe, sycl_sdk, tmp_path, True, "--gib", str(GIB), "--settle-ms", "50")
    report = allocprobe.parse(out)
    assert rc == allocprobe.EXIT_NO_LEVEL_ZERO == report["exit_code"]
    assert report["outcome"] == "no-level-zero-device"
    assert [d["backend"] for d in report["devices"]] == ["opencl"]
    results = {r["method"]: r for r in report["results"]}
    assert list(results) == [allocprobe.SYCL, allocprobe.ZE, allocprobe.HELPER]
    assert results[allocprobe.SYCL]["ok"] and results[allocprobe.SYCL]["path"] == "sycl"
    assert results[allocprobe.ZE] == {
        "method": allocprobe.ZE,
        "ran": False,
        "ok": False,
        "error": "device is not on the Level Zero backend",
    }
    helper = results[allocprobe.HELPER]
    assert helper["ok"] and helper["path"] == "sycl"  # fell back, allocated, zeroed, freed
    assert helper["drm_total_gtt_growth_bytes"] == 0  # no DRM client on the CPU device
    v = allocprobe.verdict(report)
    assert not v.ok
    assert v.problems == [
        "no Level Zero GPU: the probe ran on "
        + report["devices"][0]["name"]
        + f" (opencl); the helper fell back to sycl::malloc_device ({report['level_zero_driver']})"
    ]


def test_level_zero_switched_off_still_allocates(probe, sycl_sdk, tmp_path):
    env = sycl_sdk.env(tmp_path, True) | {"GGML_SYCL_USE_LEVEL_ZERO_API": "0"}
    done = subprocess.run(
        [str(probe), "--gib", str(GIB), "--settle-ms", "0"], env=env, capture_output=True, text=True
    )
    results = {r["method"]: r for r in json.loads(done.stdout)["results"]}
    assert results[allocprobe.HELPER]["path"] == "sycl" and results[allocprobe.HELPER]["ok"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gib", "0"], "--gib needs a positive number"),
        (["--gib"], "missing value for --gib"),
        (["--colour", "red"], "unknown option --colour"),
        (["--device", "7"], "--device index out of range"),
    ],
)
def test_usage_errors_exit_2(probe, sycl_sdk, tmp_path, args, message):
    rc, out, err = run_probe(probe, sycl_sdk, tmp_path, True, *args)
    assert rc == allocprobe.EXIT_USAGE
    assert out == "" and message in err


def arc_report(ze_mib=8, helper_mib=8, helper_path="level_zero", sycl_mib=4112, gtt_mib=0):
    """A probe report in the shape the probe writes on a Level Zero GPU (figures of
    docs/field-knowledge.md)."""

    def result(method, path, mib, gtt=0):
        return {
            "method": method,
            "ran": True,
            "ok": True,
            "path": path,
            "mem_available_drop_bytes": mib * 2**20,
            "drm_total_gtt_growth_bytes": gtt * 2**20,
            "mem_available_drop_after_free_bytes": 0,
        }

    return {
        "probe": "arcops-alloc-probe",
        "format": 1,
        "outcome": "measured",
        "exit_code": 0,
        "bytes": 4 * 2**30,
        "level_zero_driver": "zeInit ok, 1 driver(s)",
        "devices": [
            {"index": 0, "name": "Intel(R) Arc(TM) Pro B60 Graphics", "backend": "level_zero", "gpu": True}
        ],
        "device": 0,
        "results": [
            result(allocprobe.SYCL, "sycl", sycl_mib, 4096),
            result(allocprobe.ZE, "level_zero", ze_mib, gtt_mib),
            result(allocprobe.HELPER, helper_path, helper_mib),
        ],
    }


def test_verdict_passes_the_field_reports_figures():
    v = allocprobe.verdict(arc_report())
    assert v.ok and v.problems == []
    assert round(v.costs[allocprobe.SYCL]["host_ram_mib"]) == 4112
    assert v.costs[allocprobe.SYCL]["host_ram_fraction"] > 1
    assert "sycl_malloc_device (path sycl): host RAM +4112 MiB" in "\n".join(v.summary())


@pytest.mark.parametrize(
    ("report", "problem"),
    [
        (arc_report(ze_mib=60), "ze_mem_alloc_device cost 60 MiB of host RAM, 1.46% of the allocation"),
        (arc_report(gtt_mib=100), "ze_mem_alloc_device cost 100 MiB of host RAM"),  # gtt counts too
        (arc_report(helper_path="sycl", helper_mib=4100), "arcops_ze_malloc_device took the sycl path"),
    ],
)
def test_verdict_fails_when_level_zero_costs_host_ram(report, problem):
    v = allocprobe.verdict(report)
    assert not v.ok
    assert any(p.startswith(problem) for p in v.problems), v.problems


def test_verdict_reports_a_failed_allocation():
    report = arc_report()
    report["exit_code"], report["outcome"] = 1, "failed"
    report["results"][1] = {
        "method": allocprobe.ZE,
        "ran": True,
        "ok": False,
        "error": "allocation returned null",
    }
    v = allocprobe.verdict(report)
    assert not v.ok and v.problems == ["ze_mem_alloc_device failed: allocation returned null"]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("not json", "probe output is not JSON"),
        ('{"probe": "other"}', "not arcops-alloc-probe output"),
        ('{"probe": "arcops-alloc-probe", "format": 2}', "probe output format 2"),
    ],
)
def test_parse_refuses_other_output(text, error):
    with pytest.raises(allocprobe.ProbeError, match=error):
        allocprobe.parse(text)


def test_cli_verdict_exit_codes(tmp_path, capsys):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(arc_report()))
    bad.write_text(json.dumps(arc_report(ze_mib=900)))
    assert cli.main(["llama", "probe-verdict", str(good)]) == 0
    assert "verdict: ok" in capsys.readouterr().out
    assert cli.main(["llama", "probe-verdict", str(bad)]) == 1
    assert "verdict: FAILED" in capsys.readouterr().out
    (tmp_path / "junk.json").write_text("junk")
    assert cli.main(["llama", "probe-verdict", str(tmp_path / "junk.json")]) == 2


def _mutated(**changes):
    report = arc_report()
    for path, value in changes.items():
        target = report
        *parents, last = path.split("__")
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        target[int(last) if isinstance(target, list) else last] = value
    return json.dumps(report, allow_nan=True)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[]", "not arcops-alloc-probe output"),
        ("null", "not arcops-alloc-probe output"),
        ('"arcops-alloc-probe"', "not arcops-alloc-probe output"),
        (_mutated(bytes=0), "bytes is 0, must be at least 1"),
        (_mutated(bytes=-4), "bytes is -4, must be at least 1"),
        (_mutated(bytes=float("nan")), "NaN is not a number JSON allows"),
        (_mutated(bytes="4G"), "bytes is '4G', not a whole number"),
        (_mutated(bytes=True), "bytes is True, not a whole number"),
        (_mutated(results__1__mem_available_drop_bytes=float("nan")), "NaN is not a number"),
        (_mutated(results__1__mem_available_drop_bytes=float("-inf")), "-Infinity is not a number"),
        (
            _mutated(results__1__mem_available_drop_bytes=0.5),
            r"results\[1\]\.mem_available_drop_bytes is 0\.5",
        ),
        (_mutated(results__1__ok="yes"), r"results\[1\]\.ok is 'yes', not true or false"),
        (_mutated(results__1=None), r"results\[1\] is not an object"),
        (_mutated(results={}), "results is not a list"),
        (_mutated(exit_code=None), "exit_code is None, not a whole number"),
        (_mutated(devices__0=[]), r"devices\[0\] lacks a name and backend"),
        (_mutated(results__2__method=allocprobe.ZE), "a method is reported twice"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        (b"\xff\xfe{}", "probe output is not JSON"),
    ],
)
def test_parse_refuses_each_wrong_shape_by_name(text, error):
    with pytest.raises(allocprobe.ProbeError, match=error):
        allocprobe.parse(text)


@pytest.mark.parametrize("limit", [float("nan"), 0.0, -0.5, 1.0, float("inf")])
def test_verdict_refuses_a_limit_it_cannot_judge_by(limit, tmp_path, capsys):
    with pytest.raises(allocprobe.ProbeError, match="must be a fraction between 0 and 1"):
        allocprobe.verdict(arc_report(), limit)
    (tmp_path / "good.json").write_text(json.dumps(arc_report()))
    assert (
        cli.main(
            ["llama", "probe-verdict", str(tmp_path / "good.json"), "--max-host-ram-fraction", str(limit)]
        )
        == 2
    )
    assert "must be a fraction between 0 and 1" in capsys.readouterr().err


def test_zero_byte_probe_never_passes_through_the_cli(tmp_path, capsys):
    """Before: bytes 0 made every fraction 0.0, so a probe that allocated nothing passed."""
    (tmp_path / "zero.json").write_text(_mutated(bytes=0))
    assert cli.main(["llama", "probe-verdict", str(tmp_path / "zero.json")]) == 2
    assert capsys.readouterr().err.strip() == "arcops: probe output: bytes is 0, must be at least 1"


def test_positive_control_the_probe_sees_a_real_host_allocation(probe, sycl_sdk, tmp_path):
    """A probe that always measured 0 would pass every Level Zero check: prove it can see a cost.

    On the CPU device sycl::malloc_device is host memory, so 2 GiB allocated and zeroed there must
    show as a MemAvailable drop through the very code that measures the GPU paths. Other work on
    the machine moves MemAvailable too: within five runs one must see it, ±40%."""
    size = 2 * 2**30
    seen: list[int] = []
    for _ in range(5):
        rc, out, _ = run_probe(probe, sycl_sdk, tmp_path, True, "--gib", "2", "--settle-ms", "200")
        report = allocprobe.parse(out)
        assert rc == allocprobe.EXIT_NO_LEVEL_ZERO and report["bytes"] == size
        results = {r["method"]: r for r in report["results"]}
        assert results[allocprobe.SYCL]["ok"] and results[allocprobe.HELPER]["ok"], results
        # The first path measured starts from a clean heap (later ones may reuse its freed pages).
        seen.append(results[allocprobe.SYCL]["mem_available_drop_bytes"])
        if 0.6 * size <= seen[-1] <= 1.4 * size:
            break
    else:
        pytest.fail(f"the probe never saw the 2 GiB host allocation: MemAvailable drops {seen}")
    # Judged as if it had been a Level Zero path, that cost fails the verdict.
    as_gpu = {**report, "exit_code": allocprobe.EXIT_MEASURED}
    as_gpu["results"] = [
        {
            **r,
            "ok": True,
            "path": "level_zero",
            "mem_available_drop_bytes": report["results"][0]["mem_available_drop_bytes"],
            "drm_total_gtt_growth_bytes": 0,
        }
        if r["method"] in (allocprobe.ZE, allocprobe.HELPER)
        else r
        for r in report["results"]
    ]
    v = allocprobe.verdict(allocprobe.parse(json.dumps(as_gpu)))
    assert not v.ok and any("of host RAM" in p for p in v.problems), v.problems
