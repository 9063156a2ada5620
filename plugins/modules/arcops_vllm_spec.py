#!/usr/bin/python
"""Ansible adapter over arcops.vllm.vllm_spec: typed settings -> the vLLM container spec, or every problem."""

DOCUMENTATION = r"""
---
module: arcops_vllm_spec
short_description: Render the vLLM container spec the vllm_service role deploys
description:
  - Turns the vllm_service settings (role variables without the C(vllm_service_) prefix) into the
    container spec (image, devices, mounts, ports, environment, vLLM argv, caches, spec_hash), and
    refuses settings that hung, stalled or soft-locked dual Arc Pro B60 hosts (for example graphs
    without MTP, C(CCL_ALLREDUCE=ring), graph_mtp below 64 GB of RAM, a non-loopback listen address
    without an API key).
  - Fails listing every problem, one per line, each saying what to do.
  - Changes nothing; runs in check mode too.
  - "Pass C(api_key) in O(settings) as a boolean (whether a key is set, e.g.
    C(vllm_service_api_key | length > 0)), never the key: the role writes the key to
    C(api_key_env_file) and vLLM reads it from there as VLLM_API_KEY. A string C(api_key) is refused
    (and masked in the result)."
options:
  settings:
    description: The settings; missing ones take arcops.vllm.vllm_spec.DEFAULTS, unknown ones fail.
    type: dict
    required: true
  host_mem_total_gib:
    description: MemTotal in GiB for the RAM check; omitted, this host's /proc/meminfo is read.
    type: float
  render_nodes:
    description:
      - The render nodes of the box's Arc GPUs, which empty C(devices) in O(settings) stand for
        (the first C(tensor_parallel_size) of them). Omitted, this host's Arc GPUs on xe are read
        (in PCI address order).
    type: list
    elements: str
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Container spec
  arcops_vllm_spec:
    settings:
      image: intel/llm-scaler-vllm:0.26.0-b2
      model_dir: /srv/models
      model: qwen38-fp8
      api_key: "{{ vllm_service_api_key | length > 0 }}"
  register: vllm_service_spec
"""

RETURN = r"""
spec:
  description: >-
    name, image, profile, privileged, ipc, shm_size, devices, mounts (source, target, read_only),
    ports (host_ip, host_port, container_port), env, env_file, env_file_keys (the names the
    root-only env file holds, never their values), argv, caches, residency_filter
    (dir, library; null when off), spec_hash.
  returned: success
  type: dict
docker:
  description: The spec's mounts and ports as docker_container takes them (binds, published_ports).
  returned: success
  type: dict
endpoint:
  description: >-
    Where the box reaches the API (url), the served model name (model), the key's env file
    (api_key_file).
  returned: success
  type: dict
residency_probe:
  description: >-
    A process to start in the running container (argv, env) and what its stderr must hold
    (expect) to prove the residency filter loads there; null when the filter is off.
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.box.host import mem_total_gib
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.sysroot import SysRoot
from ansible_collections.arcops.arc.plugins.module_utils.arcops.vllm.peer_access import this_box
from ansible_collections.arcops.arc.plugins.module_utils.arcops.vllm.vllm_spec import (
    SpecError,
    docker_container_args,
    endpoint,
    render,
    residency_probe,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "settings": {"type": "dict", "required": True},
            "host_mem_total_gib": {"type": "float"},
            "render_nodes": {"type": "list", "elements": "str"},
        },
        supports_check_mode=True,
    )
    settings = module.params["settings"]
    key = settings.get("api_key")
    if isinstance(key, str) and key:
        module.no_log_values.add(key)  # masked wherever it would show, the invocation included
        module.fail_json(
            msg="settings.api_key must be a boolean (whether a key is set), not the key: "
            "the role writes the key to api_key_env_file"
        )
    mem = module.params["host_mem_total_gib"]
    if mem is None:  # the box this runs on: no fact gathering needed
        mem = mem_total_gib(SysRoot("/"))
    nodes, pairs, arc_gpus = module.params["render_nodes"], None, None
    if nodes is None:  # the box this runs on: its GPUs, and what Linux allows between them
        nodes, pairs, arc_gpus = this_box(bool(settings.get("devices")))
    try:
        spec = render(settings, mem, nodes, pairs, arc_gpus)
    except SpecError as e:
        module.fail_json(msg=str(e), problems=e.problems)
    if spec["p2p"]["warning"]:
        module.warn(spec["p2p"]["warning"])
    module.exit_json(
        changed=False,
        spec=spec,
        docker=docker_container_args(spec),
        endpoint=endpoint(spec),
        residency_probe=residency_probe(spec),
    )


if __name__ == "__main__":
    main()
