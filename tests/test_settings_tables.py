"""Every settings table (arcops.devtools.settings_blocks.TABLES: vLLM's container, llama-server's
unit) is its role's one declaration: the role's defaults, argument specs and settings mapping are
written from it, and no second copy of a setting appears in those files."""

from __future__ import annotations

import re

import pytest
import yaml
from arcops.common.settings_table import role_default
from arcops.devtools import settings_blocks

from .conftest import REPO

TABLES = settings_blocks.TABLES
FILES = ["defaults/main.yml", "meta/argument_specs.yml", "vars/main.yml"]


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.role)
def test_the_role_files_are_written_from_the_table(table):
    for path, text in settings_blocks.files(REPO / "roles", table).items():
        assert path.read_text() == text, f"{path}: run scripts/role-docs"


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.role)
def test_no_setting_is_declared_outside_its_block(table, name):
    path = REPO / "roles" / table.role / name
    outside = settings_blocks.outside_block(path.read_text(), table.source)
    if name == "meta/argument_specs.yml":
        # Another entry point may name a setting it reads, as main declares it.
        specs = yaml.safe_load(path.read_text())["argument_specs"]
        main = specs["main"]["options"]
        for entry, spec in specs.items():
            for option, declared in (spec.get("options") or {}).items() if entry != "main" else ():
                bare = option.removeprefix(table.prefix)
                if option.startswith(table.prefix) and bare in table.table.by_name:
                    assert (declared["type"], declared.get("default")) == (
                        main[option]["type"],
                        main[option].get("default"),
                    ), (entry, option)
                    outside = outside.replace(f"      {option}:\n", "", 1)
    for s in table.settings:
        assert not re.search(rf"^\s*({table.prefix})?{s.name}:", outside, re.M), (path, s.name)


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.role)
def test_the_role_defaults_are_the_table_defaults(table):
    defaults = yaml.safe_load((REPO / "roles" / table.role / "defaults/main.yml").read_text())
    mapped = yaml.safe_load((REPO / "roles" / table.role / "vars/main.yml").read_text())[table.mapping]
    assert list(mapped) == list(table.table.defaults)
    for s in table.settings:
        assert defaults[table.prefix + s.name] == role_default(s), s.name
        if s.kind == "secret":
            assert mapped[s.name].endswith("| length > 0 }}"), s.name  # whether one is set, never it
