#!/usr/bin/python
"""Ansible adapter over arcops.prove.verify: gate (and bench) the services the box serves."""

DOCUMENTATION = r"""
---
module: arcops_verify
short_description: Gate (and bench) every service the box serves, as arcops prove gate does
description:
  - Asks each target the prompt set one at a time and all at once (greedy, seed 0, thinking off)
    and judges the answers (arcops.prove.gate); compares them with the golden recorded for the
    target's model and stack when one is given; with O(watch_host), samples MemAvailable and swap
    and follows the kernel journal during the runs (an xe event fails the target).
  - Without O(targets), the targets are the endpoints the serving stages recorded
    (C(vllm_service), C(llama_cpp_sycl) in O(fact_dir)); no target at all is a failure.
  - A target that cannot be asked (not running, wrong key, model not served) fails; it is not a
    bad input. Bad inputs (a target, the prompt set, a golden, the bench options) fail the task.
  - With O(reask_after) above 0, a verdict that passed is kept without asking while nothing it
    rests on has changed (every other stage's record, this module's options, the boot) and the
    last ask is younger than O(reask_after) seconds (arcops.prove.verify_fresh); C(asked) says
    which. The record the role keeps holds the digest of that basis.
  - Changes nothing the box serves (the role records the result); after asking, it keeps the time
    and basis of the ask in O(state_dir)/asked.json (bookkeeping, not a change). The task fails
    only on bad input, the verdict is C(passed). Runs in check mode too (it only asks, keeps
    nothing).
options:
  targets:
    description:
      - Services to verify, each C(name), C(url) and optional C(kind), C(model) (empty - the one the
        server serves), C(api_key_file) (on the box; the key alone or an env file's C(VLLM_API_KEY=)
        line) and C(stack) (goldens match on it). Omitted, the serving stages' records give them.
    type: list
    elements: dict
  fact_dir:
    description: Where the stages' records are published (read when O(targets) is omitted).
    type: path
    default: /etc/ansible/facts.d
  prompts: {description: "A prompt set (docs/prove.md); omitted, the shipped set.", type: dict}
  goldens:
    description: Golden files' contents; the one recorded for a target's model and stack is compared.
    type: list
    elements: dict
    default: []
  fail_on_drift: {description: A difference from the golden fails the target., type: bool, default: false}
  watch_host:
    description: Watch RAM, swap and the kernel journal's xe events during the runs.
    type: bool
    default: true
  timeout: {description: Seconds per request., type: float, default: 300}
  idle_window:
    description:
      - After the load, wait up to this many seconds for every xe card's power (its hwmon energy
        counter) to fall to near idle, a quarter of its sustained limit (power1_max); record the
        figures, and fail the box for a card that stays above. C(0) skips it. A box without the
        driver's power sensors is recorded as not measured and not failed.
    type: float
    default: 60
  sysroot:
    description:
      - Where the idle check reads the GPUs' sysfs (a simulated tree in the lab; C(/) on a box).
    type: path
    default: /
  reask_after:
    description:
      - Seconds a passed verdict holds on the same basis before the services are asked again;
        C(0) asks every time.
    type: float
    default: 0
  state_dir:
    description: The stage's state folder (the ask's stamp is kept there).
    type: path
    default: /var/lib/arcops/verify
  rests_on:
    description: Anything else the verdict rests on (the role gives the release and its variables).
    type: dict
    default: {}
  bench:
    description:
      - Also bench each target whose gate passed, with C(concurrency), C(prompt_lengths),
        C(output_tokens), C(requests), C(baseline) (a profile name or a bench result's JSON text)
        and C(tolerance); a figure worse than the baseline fails the target. Omitted, no bench.
    type: dict
  soak:
    description:
      - After a target's gate passed, serve a mixed load for a set time (C(seconds); 0 or omitted,
        no soak) with C(concurrency) streams (4) while the host watch runs; any xe event, a
        request unanswered within C(stall_seconds) (300), a failed request, or host RAM available
        below C(ram_floor_gib) (1) fails the target. The rollout soaks its canary.
    type: dict
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Gate what the box serves
  arcops_verify:
  register: verify_result
"""

RETURN = r"""
passed: {description: Every target passed., returned: always, type: bool}
asked: {description: "The services were asked (false: the last verdict holds).", returned: always, type: bool}
record: {description: The verdict as the stage records it (nothing volatile)., returned: always, type: dict}
reasons: {description: "Why it failed, one line each.", returned: always, type: list, elements: str}
lines:
  description: One line per target, and one for the idle check, for display.
  returned: always
  type: list
  elements: str
idle_power:
  description:
    - The idle check's figures (O(idle_window) above 0 and a target asked) - C(measured), C(idle),
      C(seconds) and per card C(watts), C(idle_below_w), C(idle). The record keeps the verdicts.
  returned: when the idle check ran
  type: dict
results:
  description: Each target's full gate report and bench result (or its error).
  returned: always
  type: list
  elements: dict
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.box import gpu_power, host
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.records import (
    FACT_DIR,
    STATE_ROOT,
    read_published,
)
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.sysroot import SysRoot
from ansible_collections.arcops.arc.plugins.module_utils.arcops.prove import soak, verify, verify_fresh
from ansible_collections.arcops.arc.plugins.module_utils.arcops.prove.host_watch import HostWatch
from ansible_collections.arcops.arc.plugins.module_utils.arcops.prove.prompts import PromptSetError


def _idle(window: float, sysroot: str):
    """The check after the load: every xe card back to near idle within WINDOW seconds."""
    if not window:
        return None
    interval = min(5.0, window / 4)  # at least four looks in the window
    return lambda: gpu_power.settle(SysRoot(sysroot), window=window, interval=interval)


def main():
    module = AnsibleModule(
        argument_spec={
            "targets": {"type": "list", "elements": "dict"},
            "fact_dir": {"type": "path", "default": FACT_DIR},
            "prompts": {"type": "dict"},
            "goldens": {"type": "list", "elements": "dict", "default": []},
            "fail_on_drift": {"type": "bool", "default": False},
            "watch_host": {"type": "bool", "default": True},
            "timeout": {"type": "float", "default": 300.0},
            "bench": {"type": "dict"},
            "idle_window": {"type": "float", "default": 60.0},
            "sysroot": {"type": "path", "default": "/"},
            "reask_after": {"type": "float", "default": 0.0},
            "state_dir": {"type": "path", "default": f"{STATE_ROOT}/verify"},
            "rests_on": {"type": "dict", "default": {}},
            "soak": {"type": "dict"},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    p = module.params
    records = read_published(p["fact_dir"])
    try:
        if p["targets"] is None:
            targets = verify.targets_from_records(records)
        else:
            targets = verify.check_targets(p["targets"])
        data = verify.prompt_data(p["prompts"])
        goldens = verify.check_goldens(p["goldens"])
        options = verify.bench_options(p["bench"])
        soaking = soak.options(p["soak"])
        if not p["timeout"] > 0:
            raise verify.VerifyError(f"timeout: {p['timeout']} seconds: must be above 0")
        if not 0 <= p["idle_window"] <= 600:
            raise verify.VerifyError(f"idle_window: {p['idle_window']} seconds: must be 0 to 600")
        if not 0 <= p["reask_after"] <= verify_fresh.REASK_MAX:
            most = verify_fresh.REASK_MAX
            raise verify.VerifyError(f"reask_after: {p['reask_after']} seconds: must be 0 to {most}")
    except (verify.VerifyError, soak.SoakError, PromptSetError, ValueError) as e:
        module.fail_json(msg=str(e))
    inputs = {k: v for k, v in p.items() if k != "reask_after"}
    digest = verify_fresh.basis(records, inputs, host.boot_id())
    now = time.time()
    last = records.get("verify")
    stamp = verify_fresh.read_stamp(p["state_dir"])
    why = verify_fresh.still_holds(last, stamp, digest, now, p["reask_after"])
    if why:  # the record as it is (the role rewrites nothing), with the line that says why
        kept = {k: v for k, v in last.items() if k not in ("schema", "stage")}
        shown = [*verify.lines(kept), why]
        module.exit_json(
            changed=False, asked=False, passed=True, record=kept, reasons=[], results=[], lines=shown
        )
    out = verify.run(
        targets,
        data,
        goldens,
        p["fail_on_drift"],
        p["timeout"],
        options,
        HostWatch if p["watch_host"] else None,
        _idle(p["idle_window"], p["sysroot"]),
        soaking,
    )
    out["record"]["basis"] = digest
    if not module.check_mode:
        try:
            verify_fresh.write_stamp(p["state_dir"], digest, out["passed"], now)
        except OSError as e:
            why = e.strerror or e
            module.fail_json(msg=f"state_dir: {p['state_dir']}: cannot keep the time of the ask: {why}")
    shown = verify.lines(out["record"]) + verify.idle_lines(out.get("idle_power"))
    module.exit_json(changed=False, asked=True, lines=shown, **out)


if __name__ == "__main__":
    main()
