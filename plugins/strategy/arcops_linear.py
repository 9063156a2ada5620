"""The linear strategy, run through Mitogen when it is installed (ansible.cfg's default).

Mitogen keeps one Python interpreter per box for the whole run instead of starting one per
task: a no-op site.yml run and the emulated VM tier spend most of their time in exactly that
start-up. The pinned mitogen comes with the project venv (requirements.lock); an Ansible
without it runs the plain linear strategy, and says so once. ANSIBLE_STRATEGY=linear does the
same on purpose (e.g. to rule Mitogen out when something behaves oddly).
"""

from __future__ import annotations

import re

DOCUMENTATION = r"""
name: arcops_linear
short_description: linear, through Mitogen when it is installed
description:
  - Runs the play like ansible.builtin.linear. With the pinned mitogen package installed (the
    project venv has it), tasks run through Mitogen's persistent interpreters; without it, a
    warning says so and the plain linear strategy runs.
author: arcops
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
    import mitogen.imports
    from ansible_mitogen import module_finder

    _PARTS = re.compile(r"(^|\.)(\w+)")
    _walk_imports = module_finder.walk_imports

    def walk_imports(code, prefix=None):
        """Mitogen's scan of a module's imports, plus its relative ones. The arcops helpers
        import each other relatively (`from . import firmware`: they are both `arcops` and
        `ansible.module_utils.arcops`); mitogen 0.3.54 skips those, and the box then lacks the
        module. The scan compiles each module under its dotted name, so co_filename is it; an
        __init__'s base is the package itself, so both readings are offered (a name that is
        not a module is dropped by the scan)."""
        yield from _walk_imports(code, prefix)
        name, start = code.co_filename, len(prefix or "")
        for level, modname, fromlist in mitogen.imports.codeobj_imports(code):
            if level <= 0:
                continue
            for base in {name.rsplit(".", level)[0], name.rsplit(".", level - 1)[0] if level > 1 else name}:
                target = f"{base}.{modname}" if modname else base
                if not target.startswith(prefix or ""):
                    continue
                for match in _PARTS.finditer(target, start):
                    yield target[: match.end()]
                for leaf in fromlist:
                    yield f"{target}.{leaf}"

    module_finder.walk_imports = walk_imports
    _Base = ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)

    class StrategyModule(ansible_mitogen.strategy.StrategyMixin, _Base):
        pass
