#!/usr/bin/python
"""Ansible adapter over arcops.llama.llama_source: Level Zero device allocations in a llama.cpp source."""

DOCUMENTATION = r"""
---
module: arcops_llama_source
short_description: Level Zero device allocations in a llama.cpp source (detect, or apply arcops' change)
description:
  - Reads the SYCL backend of the llama.cpp source in O(src). When it already allocates device
    memory with zeMemAllocDevice (upstream's path, C(path=upstream)), upstream's allocator is
    kept; the device allocations it leaves on sycl::malloc_device are routed through O(helper),
    with the sycl::free calls outside upstream's allocator, unless O(leftovers=false).
  - Otherwise adds O(helper) as ggml/src/ggml-sycl/arcops-ze-alloc.hpp, routes every
    sycl::malloc_device, sycl::malloc(..., device) and sycl::free call of the backend through it
    and links ggml-sycl against ze_loader (C(path=arcops)). A source already changed reports
    changed=false.
  - Fails, writing nothing, when the source is not one the change fits.
  - Supports check mode.
options:
  src:
    description: The llama.cpp source tree on the host.
    type: path
    required: true
  helper:
    description: arcops-ze-alloc.hpp on the host.
    type: path
    required: true
  f16:
    description: Build with GGML_SYCL_F16 where the source has it (for C(cmake_args)).
    type: bool
    default: true
  leftovers:
    description:
      - On an upstream-path source, route the device allocations upstream left on
        sycl::malloc_device. false leaves the source as upstream ships it (they are listed in
        C(unrouted)).
    type: bool
    default: true
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Level Zero device allocations in the llama.cpp source
  arcops_llama_source:
    src: /var/cache/arcops/llama.cpp/src/69c28f1547c169902f62ca48bee75fb876c4d8e6
    helper: /var/cache/arcops/llama.cpp/share/arcops-ze-alloc.hpp
  register: llama_source
"""

RETURN = r"""
path:
  description: upstream or arcops.
  returned: always
  type: str
options:
  description: GGML_SYCL* CMake options the source declares.
  returned: always
  type: list
  elements: str
cmake_args:
  description: -D flags for the SYCL build of this source.
  returned: always
  type: list
  elements: str
sites:
  description: Calls rewritten (file, line, kind, before, after).
  returned: always
  type: list
  elements: dict
files:
  description: Files written (or that would be in check mode).
  returned: always
  type: list
  elements: str
evidence:
  description: Where the upstream source calls zeMemAllocDevice.
  returned: always
  type: list
  elements: str
counts:
  description: Sites by kind (alloc, free, free_host, free_shared, free_unknown); frees by what they release.
  returned: always
  type: dict
unrouted:
  description: Upstream path only, sycl::malloc_device calls left after this run.
  returned: always
  type: list
  elements: str
"""


from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.inputs import InputError, read_text
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.llama.llama_source import (
    SourceMismatch,
    apply,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "src": {"type": "path", "required": True},
            "helper": {"type": "path", "required": True},
            "f16": {"type": "bool", "default": True},
            "leftovers": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    try:
        helper = read_text(module.params["helper"], "helper", limit=2**20)
        p = module.params
        result = apply(p["src"], helper, check=module.check_mode, leftovers=p["leftovers"])
    except (SourceMismatch, OSError, InputError) as e:
        module.fail_json(msg=f"llama.cpp source: {e}")
    module.exit_json(**result.as_dict(module.params["f16"]))


if __name__ == "__main__":
    main()
