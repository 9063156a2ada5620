#!/usr/bin/python
"""Ansible adapter over arcops.fleet.drain: wait until the box's vLLM runs no request."""

DOCUMENTATION = r"""
---
module: arcops_drain
short_description: Wait until the box's vLLM runs and queues no request, and name the units to stop
description:
  - Reads the serving stages' records in O(fact_dir). When vLLM recorded an endpoint, it polls its
    C(/metrics) until C(vllm:num_requests_running) and C(vllm:num_requests_waiting) are 0, or
    O(timeout) seconds pass (arcops.fleet.drain). A server that does not answer serves nobody, so
    the box counts as drained.
  - Returns the inference units to stop (vLLM's recorded unit, llama-server's when it serves) for
    the caller's systemd tasks. It never changes the box; in check mode it does not wait.
options:
  fact_dir:
    description: Where the stages' records are published.
    type: path
    default: /etc/ansible/facts.d
  timeout:
    description: Seconds to wait for running requests to end.
    type: int
    default: 300
  poll:
    description: Seconds between two reads of the metrics.
    type: float
    default: 1.0
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Wait for vLLM's requests to end
  arcops_drain:
    timeout: 300
  register: drained
"""

RETURN = r"""
drained:
  description: Whether nothing ran or waited when it returned.
  returned: always
  type: bool
running:
  description: Requests still running (when the time ran out).
  returned: always
  type: int
waiting:
  description: Requests still queued.
  returned: always
  type: int
seconds:
  description: How long it waited.
  returned: always
  type: float
error:
  description: Why the metrics could not be read (the server did not answer), or null.
  returned: always
  type: str
units:
  description: The inference units to stop.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.records import FACT_DIR, read_published
from ansible_collections.arcops.arc.plugins.module_utils.arcops.fleet import drain


def main():
    module = AnsibleModule(
        argument_spec={
            "fact_dir": {"type": "path", "default": FACT_DIR},
            "timeout": {"type": "int", "default": 300},
            "poll": {"type": "float", "default": 1.0},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    p = module.params
    if p["timeout"] < 0 or p["poll"] <= 0:
        module.fail_json(msg="timeout: 0 or more seconds; poll: more than 0 seconds")
    records = {k: v for k, v in read_published(p["fact_dir"]).items() if isinstance(v, dict)}
    vllm = records.get("vllm_service") or {}
    endpoint = vllm.get("endpoint") or {}
    units = drain.units(records)
    out = {"drained": True, "running": 0, "waiting": 0, "seconds": 0.0, "error": None}
    if endpoint.get("url") and not module.check_mode:
        try:
            out = drain.wait(endpoint["url"], p["timeout"], p["poll"])
        except drain.DrainError as e:
            module.fail_json(msg=f"{endpoint['url']}: {e}", units=units)
    module.exit_json(changed=False, units=units, **out)


if __name__ == "__main__":
    main()
