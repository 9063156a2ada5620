"""Callback: every changed task (box, role, name) and every reboot a dry run would make, as JSON.

Active only when ARCOPS_CHANGES_FILE names a file (arcops fleet plan and the rollout tests set
it). The file is written again (whole, by a rename) as each task starts, when the one before
changed something, and when the run ends: a run cut off half-way still says what its finished
tasks changed, and a task's results for a thousand boxes cost one write, not a thousand.
"complete" is true only in the last write.
arcops.fleet.changes reads it in the plan's terms.
"""

from __future__ import annotations

DOCUMENTATION = """
    name: arcops_changes
    type: aggregate
    short_description: Write every changed task and each reboot a dry run would make to a JSON file
    description:
        - When the environment variable ARCOPS_CHANGES_FILE is set, records each task result
          that reported changed (host, role, task name) and the message of each task named
          "Say what a reboot would be for", and writes them to that file, whole and by a
          rename, as the next task starts, so a run cut off half-way leaves what its finished
          tasks changed; when the run ends it writes them once more with C(complete) true.
        - The clone's ansible.cfg loads it from callback_plugins, without listing it in
          callbacks_enabled (a user's ANSIBLE_CALLBACKS_ENABLED cannot switch it off); from the
          installed collection, list it as arcops.arc.arcops_changes in callbacks_enabled. It does
          nothing without the variable.
    requirements:
        - ARCOPS_CHANGES_FILE in the environment
"""

import json
import os

from ansible.plugins.callback import CallbackBase

REBOOT_NOTE = "Say what a reboot would be for"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "arcops_changes"
    CALLBACK_NEEDS_ENABLED = False  # the variable switches it on, not the callback list

    def __init__(self):
        super().__init__()
        self._file = os.environ.get("ARCOPS_CHANGES_FILE") or ""
        self._changed = []
        self._reboots = {}
        self._unwritten = False  # a change or reboot note since the last write

    def _note(self, result):
        if not self._file:
            return
        task = result._task
        host = result._host.get_name()
        role = task._role.get_name(include_role_fqcn=False) if task._role else None
        name = task.get_name() if hasattr(task, "get_name") else task.name
        if role and name.startswith(f"{role} : "):
            name = name[len(role) + 3 :]
        if name.startswith(REBOOT_NOTE) and result._result.get("msg"):
            self._reboots.setdefault(host, []).append(str(result._result["msg"]))
            self._unwritten = True
        if result._result.get("changed"):
            self._changed.append({"host": host, "role": role, "task": name})
            self._unwritten = True

    def v2_runner_on_ok(self, result):
        self._note(result)

    def v2_runner_item_on_ok(self, result):
        pass  # the loop's task result (on_ok) says changed for all its items

    def v2_playbook_on_task_start(self, task, is_conditional):
        if self._unwritten:
            self._write(complete=False)

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def v2_playbook_on_stats(self, stats):
        if self._file:
            self._write(complete=True)

    def _write(self, complete):
        self._unwritten = False
        tmp = f"{self._file}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"changed": self._changed, "reboots": self._reboots, "complete": complete}, f, indent=2)
        os.replace(tmp, self._file)
