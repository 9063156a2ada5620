"""box/job_timeout_setting.py on copies of the fixture trees (xe's engines folders with the
driver's defaults: 5 s, range 1 ms to the build's 10 s cap): the variable's shape, the cap's
refusal, the writes and their order, the udev rule, and the check after a boot."""

from __future__ import annotations

import shutil

import pytest
from arcops.box import job_timeout_setting as jt
from arcops.common.sysroot import SysRoot
from hypothesis import given

from .helpers.fuzz import FUZZ, json_values
from .helpers.gpu_load import HOSTS

CARDS = ("0000:29:00.0", "0000:2d:00.0")


def engine(address: str, cls: str = "ccs", gt: str = "tile0/gt0") -> str:
    return f"/sys/bus/pci/devices/{address}/{gt}/engines/{cls}"


@pytest.fixture
def box(tmp_path):
    """A writable copy of the dual-B60 tree."""
    shutil.copytree(HOSTS / "dual-b60", tmp_path / "box", symlinks=True)
    return SysRoot(tmp_path / "box")


def value(root: SysRoot, path: str) -> str | None:
    return root.read(path)


def test_the_variable_takes_engine_classes_and_whole_milliseconds():
    assert jt.parse_wanted(None) == jt.parse_wanted({}) == {}
    assert jt.parse_wanted({"vcs": 7000, "ccs": "10000"}) == {"ccs": 10000, "vcs": 7000}


@pytest.mark.parametrize(
    ("given_value", "said"),
    [
        ([10000], "must be a mapping"),
        ({"gpu": 10000}, "'gpu' is not an engine class"),
        ({"ccs": 0}, "arcops_xe_job_timeout_ms.ccs: must be whole milliseconds"),
        ({"ccs": -5}, "from 1 to"),
        ({"ccs": True}, "got True"),
        ({"ccs": 1.5}, "got 1.5"),
        ({"ccs": "10 s"}, "got '10 s'"),
        ({"ccs": "9" * 400}, "must be whole milliseconds"),
        ({"ccs": 10**30}, "must be whole milliseconds"),
    ],
)
def test_a_bad_value_is_refused_naming_the_variable(given_value, said):
    with pytest.raises(jt.SettingError, match="arcops_xe_job_timeout_ms") as e:
        jt.parse_wanted(given_value)
    assert said in str(e.value)
    assert len(str(e.value)) < 200  # one line, whatever was given


@FUZZ
@given(json_values)
def test_anything_is_taken_or_refused_with_the_variable_s_name(given_value):
    try:
        wanted = jt.parse_wanted(given_value)
    except jt.SettingError as e:
        assert str(e).startswith("arcops_xe_job_timeout_ms")
    else:
        assert all(c in jt.engine_timeouts.CLASSES and 1 <= v <= jt.MOST_MS for c, v in wanted.items())


def test_above_the_kernel_s_cap_is_refused_with_what_to_do_before_anything_is_written(box):
    with pytest.raises(jt.SettingError) as e:
        jt.converge(box, {"ccs": 20000}, "present", check_mode=False)
    said = str(e.value)
    assert "20000 ms is above the kernel's cap of 10000 ms on 0000:29:00.0" in said
    assert "CONFIG_DRM_XE_JOB_TIMEOUT_MAX" in said and "vllm_service_max_num_batched_tokens" in said
    assert value(box, f"{engine(CARDS[0])}/job_timeout_ms") == "5000"


def test_a_class_the_card_lacks_is_refused(box):
    shutil.rmtree(box.path(engine(CARDS[1], "vecs", "tile0/gt1")))
    with pytest.raises(jt.SettingError, match=r"0000:2d:00\.0 has no vecs engine"):
        jt.converge(box, {"vecs": 6000}, "checked", check_mode=False)


def test_set_now_once_and_the_rule_writes_it_at_every_bind(box):
    first = jt.converge(box, {"ccs": 10000}, "present", check_mode=False)
    assert first["changed"] and first["writes"] == [f"{engine(a)}/job_timeout_ms" for a in CARDS]
    assert all(value(box, f"{engine(a)}/job_timeout_ms") == "10000" for a in CARDS)
    assert value(box, f"{engine(CARDS[0], 'rcs')}/job_timeout_ms") == "5000"  # only what was asked
    assert jt.converge(box, {"ccs": 10000}, "present", check_mode=False)["changed"] is False
    rule_lines = [line for line in first["rule"].splitlines() if not line.startswith("#")]
    assert rule_lines == [
        'ACTION=="add|bind", SUBSYSTEM=="pci", DRIVER=="xe", '
        'ATTR{tile0/gt0/engines/ccs/job_timeout_ms}="10000"'
    ]


def test_check_mode_and_checked_write_nothing(box):
    dry = jt.converge(box, {"ccs": 8000}, "present", check_mode=True)
    assert dry["changed"] and len(dry["writes"]) == 2
    assert jt.converge(box, {"ccs": 8000}, "checked", check_mode=False)["writes"] == []
    assert all(value(box, f"{engine(a)}/job_timeout_ms") == "5000" for a in CARDS)


def test_a_lowered_maximum_is_raised_first(box):
    (box.path(f"{engine(CARDS[0])}/job_timeout_max")).write_text("3000\n")
    planned = jt.converge(box, {"ccs": 8000}, "present", check_mode=False)["writes"]
    assert planned[:2] == [f"{engine(CARDS[0])}/job_timeout_max", f"{engine(CARDS[0])}/job_timeout_ms"]
    assert value(box, f"{engine(CARDS[0])}/job_timeout_max") == "8000"


def test_after_a_boot_a_value_the_rule_did_not_set_fails_the_check(box):
    jt.converge(box, {"ccs": 10000, "bcs": 7000}, "present", check_mode=False)
    assert jt.converge(box, {"ccs": 10000, "bcs": 7000}, "verified", check_mode=False)["changed"] is False
    box.path(f"{engine(CARDS[1])}/job_timeout_ms").write_text("5000\n")  # the driver's default back
    with pytest.raises(jt.SettingError) as e:
        jt.converge(box, {"ccs": 10000, "bcs": 7000}, "verified", check_mode=False)
    said = str(e.value)
    assert said.startswith("0000:2d:00.0 ccs: job_timeout_ms is 5000, arcops_xe_job_timeout_ms wants 10000")
    assert jt.RULE_PATH in said


def test_the_check_names_the_cap_when_the_kernel_could_not_take_the_value(box):
    gpus = [
        {
            "model": "B60",
            "driver": "xe",
            "address": CARDS[0],
            "job_timeouts": {
                "ccs": {"job_timeout_ms": 5000, "job_timeout_max": 10000, "default_job_timeout_max": 10000}
            },
        }
    ]
    assert jt.mismatches(gpus, {"ccs": 15000}) == [
        f"{CARDS[0]} ccs: job_timeout_ms is 5000, arcops_xe_job_timeout_ms wants 15000 "
        "(above the kernel's cap of 10000 ms)"
    ]


def test_the_driver_s_refusal_names_the_file(box):
    path = box.path(f"{engine(CARDS[0])}/job_timeout_ms")
    path.unlink()
    path.mkdir()  # not writable as a file: stands for the kernel's EINVAL
    with pytest.raises(jt.SettingError, match=r"job_timeout_ms: 9000 was not taken \("):
        jt.apply(box, [(f"{engine(CARDS[0])}/job_timeout_ms", 9000)])


def test_a_box_without_xe_yet_gets_the_rule_and_no_writes(tmp_path):
    shutil.copytree(HOSTS / "no-intel-gpu", tmp_path / "box", symlinks=True)
    done = jt.converge(SysRoot(tmp_path / "box"), {"vcs": 6000}, "present", check_mode=False)
    assert done["writes"] == [] and 'ATTR{tile0/gt1/engines/vcs/job_timeout_ms}="6000"' in done["rule"]


def test_only_the_cards_on_xe_are_written(tmp_path):
    shutil.copytree(HOSTS / "one-gpu-unbound", tmp_path / "box", symlinks=True)
    done = jt.converge(SysRoot(tmp_path / "box"), {"vcs": 6000}, "present", check_mode=False)
    assert done["writes"] == [f"{engine(CARDS[0], 'vcs', 'tile0/gt1')}/job_timeout_ms"]


def test_nothing_wanted_is_no_rule(box):
    assert jt.converge(box, {}, "present", check_mode=False) == {"changed": False, "writes": [], "rule": ""}


def test_the_role_installs_the_rule_where_the_check_names_it():
    import yaml

    from .helpers.gpu_load import HOSTS as hosts

    role_vars = yaml.safe_load((hosts.parents[2] / "roles/intel_stack/vars/main.yml").read_text())
    assert role_vars["intel_stack_job_timeout_rule"] == jt.RULE_PATH
