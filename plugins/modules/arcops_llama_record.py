#!/usr/bin/python
"""Ansible adapter over arcops.llama.build_record and arcops.common.records: compose the
llama_cpp_sycl record and write it (state.json and the local fact)."""

DOCUMENTATION = r"""
---
module: arcops_llama_record
short_description: Compose the llama.cpp stage's record and write it where the records live
description:
  - The earlier record with this run's news over it (arcops.llama.build_record) a new build's
    fields, the prefix active before it, the probe's verdict, the server's endpoint; written as
    C(arcops.arc.arcops_record) writes (state.json, its history and the local fact, 0600).
  - Supports check mode (reports what would be written).
options:
  earlier:
    description: The record read before this run (empty on a new box).
    type: dict
    default: {}
  build:
    description:
      - A new build's request_id, build_id, prefix, source, build (its stamp) and oneapi_version.
      - Omitted when this run built nothing.
    type: dict
  was_active:
    description: Where the current link pointed before this run (empty for nowhere).
    type: str
    default: ""
  probe:
    description: The probe's verdict this run (build_id, ok, summary); omitted when it did not run.
    type: dict
  probe_enabled:
    description: Whether the probe is on (a new build with it off is recorded as not probed).
    type: bool
    default: true
  endpoint:
    description: What the verify stage asks (empty while the server is off).
    type: dict
    default: {}
  state_dir: {description: The stage's state folder., type: path, required: true}
  fact_dir: {description: Where the local fact is published., type: path, default: /etc/ansible/facts.d}
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Record the build
  arcops.arc.arcops_llama_record:
    earlier: "{{ llama_cpp_sycl_state }}"
    endpoint: "{{ llama_cpp_sycl_server_unit.endpoint }}"
    state_dir: /var/lib/arcops/llama_cpp_sycl
"""

RETURN = r"""
record: {description: The record as written (with its schema and stage)., returned: success, type: dict}
written:
  description: Files written (in check mode, to be written).
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common import records
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.llama.build_record import (
    BuildRecordError,
    compose,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "earlier": {"type": "dict", "default": {}},
            "build": {"type": "dict"},
            "was_active": {"type": "str", "default": ""},
            "probe": {"type": "dict"},
            "probe_enabled": {"type": "bool", "default": True},
            "endpoint": {"type": "dict", "default": {}},
            "state_dir": {"type": "path", "required": True},
            "fact_dir": {"type": "path", "default": records.FACT_DIR},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    p = module.params
    try:
        record = compose(
            p["earlier"],
            build=p["build"],
            was_active=p["was_active"],
            probe=p["probe"],
            probe_enabled=p["probe_enabled"],
            endpoint=p["endpoint"],
        )
        stale = records.store(
            "llama_cpp_sycl", record, p["state_dir"], p["fact_dir"], dry_run=module.check_mode
        )
    except (BuildRecordError, records.RecordError, OSError) as e:
        module.fail_json(msg=str(e))
    module.exit_json(
        changed=bool(stale), record=records.stamped("llama_cpp_sycl", record), written=[str(s) for s in stale]
    )


if __name__ == "__main__":
    main()
