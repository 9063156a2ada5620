"""The linear strategy, run through Mitogen when it is installed (ansible.cfg's default).

Mitogen keeps one Python interpreter per box for the whole run instead of starting one per
task: a no-op site.yml run and the emulated VM tier spend most of their time in exactly that
start-up. The pinned mitogen comes with the project venv (requirements.lock); an Ansible
without it runs the plain linear strategy, and says so once. ANSIBLE_STRATEGY=linear does the
same on purpose (e.g. to rule Mitogen out when something behaves oddly). The modules import the
helpers through the collection (ansible_collections.arcops.arc.plugins.module_utils), which
Mitogen serves to the box by full name as they are imported, relative imports included.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: arcops_linear
short_description: linear, through Mitogen when it is installed
description:
  - Runs the play like ansible.builtin.linear. With the pinned mitogen package installed (the
    project venv has it), tasks run through Mitogen's persistent interpreters; without it, a
    warning says so and the plain linear strategy runs.
author: arcops maintainers (@arcops)
"""

try:
    import ansible_mitogen.loaders
    import ansible_mitogen.strategy
except ImportError:
    from ansible.plugins.strategy.linear import StrategyModule as _Linear
    from ansible.utils.display import Display

    class StrategyModule(_Linear):
        def __init__(self, tqm):
            super().__init__(tqm)
            Display().warning(
                "arcops_linear: mitogen is not installed in this Ansible's Python; running the plain"
                " linear strategy (slower). The project venv has it: .venv/bin/ansible-playbook."
            )

else:
    _Base = ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)

    class StrategyModule(ansible_mitogen.strategy.StrategyMixin, _Base):
        pass
