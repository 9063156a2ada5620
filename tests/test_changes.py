"""A run's changed tasks, sorted into what a plan shows (packages, firmware, image, spec, ...)."""

from __future__ import annotations

import pytest
from arcops.fleet import changes


@pytest.mark.parametrize(
    "role, task, kind",
    [
        ("intel_stack", "Install the pinned packages: runtime", "packages"),
        ("intel_stack", "Install the pinned packages: kernel", "kernel"),
        ("intel_stack", "Hold the pinned packages: runtime", "packages"),
        ("intel_stack", "Install the pinned firmware blobs", "firmware"),
        ("vllm_service", "Load the image archive", "image"),
        ("vllm_service", "Create the container from the spec", "spec"),
        ("safe_reboot", "Reboot the box", "reboot"),
        ("mainline_kernel", "Install the repacked packages", "kernel"),
        ("arcops_helpers", "Unpack the helpers", "arcops helpers"),
        ("arcops_helpers", "Install the metrics units", "metrics"),
        ("vllm_service", "Restart vLLM for new helpers", "arcops helpers"),
        ("vllm_service", "Restart the health watch for its new unit, spec or code", "spec"),
        ("vllm_service", "Record the deployment (state.json and ansible_local.arcops_vllm_service)", None),
        ("intel_stack", "Seal the stage", None),
        ("verify", "Record the verdict", None),
        (None, "Stop the inference units", None),
        ("preflight", "Record a passing box", None),
    ],
)
def test_tasks_are_sorted_by_what_they_change(role, task, kind):
    assert changes.kind(role, task) == kind


def test_changes_per_box_leave_bookkeeping_out():
    found = changes.by_box(
        [
            {"host": "a", "role": "intel_stack", "task": "Install the pinned packages: runtime"},
            {"host": "a", "role": "vllm_service", "task": "Create the container from the spec"},
            {"host": "a", "role": "intel_stack", "task": "Install the pinned packages: runtime"},
            {"host": "b", "role": "verify", "task": "Record the verdict"},
        ]
    )
    assert found == {
        "a": {
            "kinds": ["packages", "spec"],
            "tasks": [
                "intel_stack: Install the pinned packages: runtime",
                "vllm_service: Create the container from the spec",
            ],
        }
    }
