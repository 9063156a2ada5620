#!/usr/bin/python
"""Ansible adapter over arcops.llama.allocprobe: run arcops-alloc-probe and judge its report."""

DOCUMENTATION = r"""
---
module: arcops_alloc_probe
short_description: Prove device allocations through Level Zero cost (almost) no host RAM
description:
  - Runs the arcops-alloc-probe binary, which allocates O(gib) GiB on one GPU with
    sycl::malloc_device, zeMemAllocDevice and the arcops helper llama.cpp uses, and reports the
    drop in MemAvailable and growth of drm-total-gtt for each.
  - Fails unless both Level Zero paths cost less than O(max_host_ram_fraction) of the allocation.
    The report (with the sycl::malloc_device cost) is returned either way.
  - Changes nothing (every allocation is freed); runs in check mode too.
options:
  probe:
    description: Path of the probe binary on the host.
    type: path
    required: true
  gib:
    description: GiB per allocation.
    type: float
    default: 4
  device:
    description: SYCL device index; default the first Level Zero GPU.
    type: int
  max_host_ram_fraction:
    description: Host RAM a Level Zero allocation may cost, as a fraction.
    type: float
    default: 0.01
  env_wrapper:
    description: Command that sets up the oneAPI runtime and runs its arguments.
    type: path
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Allocation probe
  arcops_alloc_probe:
    probe: /opt/arcops/llama.cpp/current/bin/arcops-alloc-probe
    env_wrapper: /usr/local/libexec/arcops/oneapi-env
"""

RETURN = r"""
report:
  description: The probe's JSON.
  returned: when the probe ran
  type: dict
verdict:
  description: ok, outcome, bytes, problems, costs per method.
  returned: when the probe ran
  type: dict
summary:
  description: Readable lines of the verdict.
  returned: when the probe ran
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import (
    executable_problem,
    refuse_bad_paths,
)
from ansible_collections.arcops.arc.plugins.module_utils.arcops.llama.allocprobe import (
    ProbeError,
    parse,
    verdict,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "probe": {"type": "path", "required": True},
            "gib": {"type": "float", "default": 4},
            "device": {"type": "int"},
            "max_host_ram_fraction": {"type": "float", "default": 0.01},
            "env_wrapper": {"type": "path"},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    p = module.params
    if not 0 < p["gib"] < 1024:  # NaN fails too
        module.fail_json(msg=f"gib: {p['gib']} is not a size in GiB between 0 and 1024")
    if not 0 <= p["max_host_ram_fraction"] <= 1:  # NaN fails too
        module.fail_json(
            msg=f"max_host_ram_fraction: {p['max_host_ram_fraction']} is not a fraction from 0 to 1"
        )
    if p["device"] is not None and not 0 <= p["device"] < 1024:
        module.fail_json(msg=f"device: {p['device']} is not a device index from 0 to 1023")
    for name in ("probe", "env_wrapper"):
        problem = p[name] is not None and executable_problem(name, p[name])
        if problem:
            module.fail_json(msg=problem)
    argv = ([p["env_wrapper"]] if p["env_wrapper"] else []) + [p["probe"], "--gib", str(p["gib"])]
    if p["device"] is not None:
        argv += ["--device", str(p["device"])]
    rc, out, err = module.run_command(argv)
    try:
        report = parse(out)
        found = verdict(report, p["max_host_ram_fraction"])
    except ProbeError as e:
        module.fail_json(msg=f"allocation probe (exit {rc}): {e}; stderr: {err.strip()[-500:]}")
    result = {"changed": False, "report": report, "verdict": found.as_dict(), "summary": found.summary()}
    if not found.ok:
        module.fail_json(msg="allocation probe: " + "; ".join(found.problems), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
