#!/usr/bin/python
"""Ansible adapter over arcops.llama.server_settings: the llama-server unit's command line and
endpoint from the role's settings, or every problem with them."""

DOCUMENTATION = r"""
---
module: arcops_llama_server
short_description: Check the llama-server settings and render the unit's command line and endpoint
description:
  - Checks O(settings) against the llama-server settings table (types, ranges, the model's path,
    flags the role sets, secrets in argv, a key off loopback) and fails with every problem, one
    line each, naming the role variable.
  - Returns the unit's command line (the active build's llama-server in the pinned oneAPI
    environment, split by layers over every GPU) and the endpoint the verify stage asks.
  - Never changes the host; supports check mode. The API key never reaches it, only whether one is set.
options:
  settings:
    description: The role's C(llama_cpp_sycl_server_settings) (setting name to value, the key as a boolean).
    type: dict
    required: true
  prefix_root:
    description: Folder of the versioned builds; its C(current) link is the active one.
    type: path
    required: true
  build_id:
    description: The active build's identity, for the endpoint's stack (goldens match on it).
    type: str
    default: ""
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Render the llama-server command line
  arcops.arc.arcops_llama_server:
    settings: "{{ llama_cpp_sycl_server_settings }}"
    prefix_root: /opt/llama.cpp
  register: server
"""

RETURN = r"""
argv: {description: The unit's command line (empty while the server is off)., returned: always, type: list}
exec_start: {description: The command line as the unit's ExecStart (quoted)., returned: always, type: str}
health_exec_start:
  description: >-
    The health watch's command line as its unit's ExecStart (empty while the server or the
    watch is off).
  returned: always
  type: str
endpoint:
  description: url, model, api_key_file and stack the verify stage asks ({} while the server is off).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.llama import server_settings


def main():
    module = AnsibleModule(
        argument_spec={
            "settings": {"type": "dict", "required": True},
            "prefix_root": {"type": "path", "required": True},
            "build_id": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    p = module.params
    s, problems = server_settings.check(p["settings"])
    if problems:
        module.fail_json(msg="; ".join(problems))
    argv = server_settings.command(s, p["prefix_root"]) if s["enabled"] else []
    health = server_settings.health_command(s) if s["enabled"] and s["health_watch"] else []
    module.exit_json(
        changed=False,
        argv=argv,
        exec_start=server_settings.exec_start(argv),
        health_exec_start=server_settings.exec_start(health),
        endpoint=server_settings.endpoint(s, p["build_id"]),
    )


if __name__ == "__main__":
    main()
