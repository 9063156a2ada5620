"""The Ansible module is a thin adapter: prove Ansible ships the arcops package with it."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from .conftest import REPO
from .helpers.ansible_run import ANSIBLE, needs_ansible, run_module


@needs_ansible
def test_facts_module_runs_through_ansiballz(dual_b60):
    task = run_module("arcops_facts", f"root={dual_b60}")
    assert task["changed"] is False
    facts = task["ansible_facts"]["arcops"]
    assert facts["simulated"] is True
    assert [g["model"] for g in facts["gpus"]] == ["Arc Pro B60", "Arc Pro B60"]
    assert [g["guc_loaded"] for g in facts["gpus"]] == ["70.60.0", "70.60.0"]


@needs_ansible
def test_llama_source_module_changes_once_and_reports_the_path(llama_fixture_repo, tmp_path):
    from arcops.llama.llama_source import HELPER, SYCL_DIR

    from .helpers.llama_fixture import export

    repo, shas = llama_fixture_repo
    root = export(repo, shas["fixture-old"], tmp_path / "src")
    helper = REPO / "plugins/module_utils/arcops/cxx" / HELPER
    args = f"src={root} helper={helper} f16=false"
    check = run_module("arcops_llama_source", args, check=True)
    assert check["changed"] is True and not (root / SYCL_DIR / HELPER).exists()
    first = run_module("arcops_llama_source", args)
    assert (first["changed"], first["path"], len(first["sites"])) == (True, "arcops", 8)
    assert first["cmake_args"] == ["-DGGML_SYCL=ON", "-DGGML_SYCL_F16=OFF"]
    second = run_module("arcops_llama_source", args)
    assert (second["changed"], second["path"]) == (False, "arcops")
    broken = run_module("arcops_llama_source", f"src={tmp_path} helper={helper}")
    assert broken["failed"] is True
    assert broken["msg"].startswith(f"llama.cpp source: {tmp_path} has no {SYCL_DIR}")


@needs_ansible
def test_alloc_probe_module_fails_clearly_without_a_level_zero_gpu(sycl_sdk, tmp_path):
    from .helpers.sycl_sdk import CXX_DIR

    probe = sycl_sdk.compile([CXX_DIR / "arcops-alloc-probe.cpp"], tmp_path / "probe", [CXX_DIR])
    task = run_module(
        "arcops_alloc_probe", f"probe={probe} gib=0.05", env=sycl_sdk.env(tmp_path, cpu_device=True)
    )
    assert task["failed"] is True and task["changed"] is False
    assert task["msg"].startswith("allocation probe: no Level Zero GPU: the probe ran on ")
    assert task["report"]["exit_code"] == 4
    assert task["verdict"]["costs"]["arcops_ze_malloc_device"]["path"] == "sycl"
    none = run_module(
        "arcops_alloc_probe", f"probe={probe} gib=0.05", env=sycl_sdk.env(tmp_path, cpu_device=False)
    )
    assert "no SYCL device found" in none["msg"]


@needs_ansible
@pytest.mark.parametrize(
    ("module", "args", "message"),
    [
        ("arcops_facts", "root=/nonexistent", "root: --root /nonexistent: no such folder"),
        ("arcops_boot_entry", "release=6.1 root=/nonexistent", "no such folder"),
        ("arcops_debrepack", "packages=/etc/hostname dest=/tmp/arcops-never", "not a valid .deb"),
        ("arcops_alloc_probe", "probe=/bin/true gib=nan", "gib: nan is not a size in GiB"),
        (
            "arcops_vllm_spec",
            '{"settings": {"profile": "turbo"}, "host_mem_total_gib": 64}',
            "unknown profile 'turbo'",
        ),
    ],
)
def test_modules_refuse_bad_input_with_fail_json(module, args, message):
    result = run_module(module, args)
    assert result.get("failed") and message in result["msg"], result
    assert "Traceback" not in json.dumps(result) and "MODULE FAILURE" not in json.dumps(result)
    assert not Path("/tmp/arcops-never").exists()


@needs_ansible
def test_ansible_doc_renders_every_module():
    """The DOCUMENTATION of each module parses: ansible-doc is where users read them."""
    modules = sorted(f"arcops.arc.{p.stem}" for p in (REPO / "plugins" / "modules").glob("arcops_*.py"))
    doc = ANSIBLE.replace("bin/ansible", "bin/ansible-doc")
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    done = subprocess.run([doc, "--json", *modules], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0 and "[ERROR]" not in done.stderr, done.stderr
    assert sorted(json.loads(done.stdout)) == modules
