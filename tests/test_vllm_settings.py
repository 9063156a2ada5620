"""The vllm_service settings are declared once (arcops.vllm.settings): the renderer takes its flags,
variables and bounds from the table, and no other Python file restates it (the role's files
written from the table: tests/test_settings_tables.py)."""

from __future__ import annotations

import re

import pytest
import yaml
from arcops.vllm import settings, spec_checks, vllm_spec
from hypothesis import given
from hypothesis import strategies as st

from .conftest import REPO
from .helpers.fuzz import FUZZ
from .helpers.vllm_settings import BASE, NODES, problems

ROLE = REPO / "roles" / "vllm_service"


def test_no_other_python_file_restates_the_table():
    """A second dict of defaults (five or more settings keyed to their default) is a second home."""
    scalars = [s for s in settings.SETTINGS if isinstance(s.default, (str, int, float))]
    home = REPO / "plugins/module_utils/arcops/vllm/settings.py"
    for path in (REPO / "plugins").rglob("*.py"):
        text = path.read_text()
        keyed = [
            s.name
            for s in scalars
            if re.search(rf"""["']{s.name}["']\s*:\s*{re.escape(repr(s.default))}""", text)
        ]
        assert path == home or len(keyed) < 5, (path, keyed)


def test_the_table_defaults_render_and_missing_keys_take_them():
    everything = BASE | {k: v for k, v in settings.DEFAULTS.items() if k not in BASE}
    assert vllm_spec.render(everything, 64, NODES) == vllm_spec.render(BASE, 64, NODES)
    nulls = ["image", "model", "served_model_name", "capture_sizes", "p2p"]
    assert [k for k, v in settings.DEFAULTS.items() if v is None] == nulls


def test_every_flag_and_variable_the_table_names_is_one_the_spec_manages():
    spec = vllm_spec.render(BASE, 64, NODES)
    for s in settings.SETTINGS:
        if s.flag:
            assert spec_checks.MANAGED_FLAGS[s.flag] == s.name
        if s.env:
            assert spec_checks.MANAGED_ENV[s.env] == s.name and s.env in spec["env"]
    flags = [a.split("=")[0] for a in spec["argv"] if a.startswith("-")]
    assert all(f in spec_checks.MANAGED_FLAGS for f in flags)


@pytest.mark.parametrize("s", [s for s in settings.SETTINGS if s.low is not None], ids=lambda s: s.name)
def test_every_bound_is_enforced_at_its_edges(s):
    kind = type(s.default)
    low = kind(s.low - (0.01 if s.kind == "number" else 1))
    assert problems(**{s.name: low})[0].startswith(f"{s.name} {low} must be")
    # The edge itself is fine (no MTP needs a profile without graphs).
    other = {"profile": "compiled"} if s.name == "num_speculative_tokens" else {}
    vllm_spec.render(BASE | other | {s.name: kind(s.low)}, 64, NODES)
    if s.high is not None:
        high = kind(s.high + 1)
        assert problems(**{s.name: high})[0].startswith(f"{s.name} {high} must be")


@pytest.mark.parametrize("name", ["container_name", "model", "served_model_name", "cache_dir"])
@pytest.mark.parametrize("text", ["a\nb", "a\x00b", "a\udcffb", "a\x7fb"])
def test_names_and_paths_hold_one_clean_line(name, text):
    value = ("/srv/" if name == "cache_dir" else "") + text
    found = problems(**{name: value})
    assert any(p.startswith(f"{name} holds a control character") for p in found), found


@FUZZ
@given(
    st.sampled_from([s for s in settings.SETTINGS if s.kind in ("int", "number")]),
    st.integers() | st.floats(),
)
def test_any_number_is_refused_in_one_line_or_rendered(s, value):
    try:
        vllm_spec.render(BASE | {s.name: value}, 64, NODES)
    except vllm_spec.SpecError as e:
        assert all("\n" not in p for p in e.problems)


def test_the_roles_watch_and_bench_defaults_are_the_codes():
    """The watchdog's, the health watch's and the bench's defaults live in the code
    (vllm/watch_options.py, prove/bench.py); the roles state the same values."""
    from arcops.prove import bench
    from arcops.vllm import watch_options

    defaults = yaml.safe_load((ROLE / "defaults/main.yml").read_text())
    dog, health = watch_options.WatchdogOptions(), watch_options.HealthOptions()
    assert defaults["vllm_service_watchdog_attempts"] == dog.attempts
    assert defaults["vllm_service_watchdog_start_timeout"] == dog.start_timeout
    assert defaults["vllm_service_health_interval"] == watch_options.HEALTH_INTERVAL
    assert defaults["vllm_service_health_stall_seconds"] == health.stall_seconds
    assert defaults["vllm_service_health_max_restarts_per_hour"] == health.max_restarts_per_hour
    assert defaults["vllm_service_health_min_interval"] == health.min_interval
    assert defaults["vllm_service_health_reboot_allowed"] == "{{ arcops_allow_reboot | default(false) }}"
    assert defaults["vllm_service_report_dir"] == watch_options.DEFAULT_REPORT_DIR
    verify = yaml.safe_load((REPO / "roles/verify/defaults/main.yml").read_text())
    assert verify["verify_bench_tolerance"] == bench.TOLERANCE
