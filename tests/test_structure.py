"""The code stays as docs/architecture.md draws it: layers that import only downwards, no import
cycle, files and classes a reader can hold, tests that share code through tests/helpers only."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

from .conftest import REPO

PACKAGE = REPO / "plugins/module_utils/arcops"
MAX_FILE_LINES = 400
MAX_CLASS_LINES = 200


def layers() -> dict[str, int]:
    """Subpackage -> layer, from the table in docs/architecture.md."""
    text = (REPO / "docs/architecture.md").read_text()
    found = {}
    for number, names in re.findall(r"^layer (\d+)  ([a-z_]+(?: [a-z_]+)*)  ", text, re.M):
        found.update(dict.fromkeys(names.split(), int(number)))
    return found


def python_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True)
    return [REPO / line for line in listed.stdout.split() if (REPO / line).is_file()]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The package's modules PATH imports, as dotted names under arcops ('' is the package)."""
    here = module_name(path).split(".") if module_name(path) else []
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            target = [*base, *(node.module.split(".") if node.module else [])]
            for alias in node.names:
                candidate = [*target, alias.name]
                is_module = (PACKAGE.joinpath(*candidate).with_suffix(".py")).is_file() or (
                    PACKAGE.joinpath(*candidate) / "__init__.py"
                ).is_file()
                found.add(".".join(candidate if is_module else target))
    return found


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports(p) for p in PACKAGE.rglob("*.py") if "egg-info" not in str(p)}


def test_the_layer_table_names_every_subpackage():
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert subpackages == set(layers())


def test_every_import_goes_down_a_layer_or_stays_in_its_subpackage():
    table = layers()
    wrong = []
    for module, targets in graph().items():
        top = module.split(".")[0]
        for target in targets:
            other = target.split(".")[0]
            if not target or other == top or not module:
                continue
            if table.get(other, 0) >= table.get(top, 0):
                wrong.append(f"{module} -> {target} (layer {table.get(top)} -> {table.get(other)})")
    assert wrong == []


def test_no_import_cycle_between_modules():
    edges = graph()
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                cycle.extend([*path[path.index(target) :], target] if target in path else [node, target])
            elif target in edges and not state.get(target):
                visit(target, [*path, target])
        state[node] = 2

    for node in sorted(edges):
        if not state.get(node):
            visit(node, [node])
    assert cycle == []


@pytest.mark.parametrize("path", python_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_files_and_classes_stay_small(path):
    text = path.read_text()
    assert text.count("\n") <= MAX_FILE_LINES, f"{text.count(chr(10))} lines: split it by responsibility"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef):
            size = node.end_lineno - node.lineno + 1
            assert size <= MAX_CLASS_LINES, f"class {node.name}: {size} lines"


def test_tests_share_code_through_helpers_only():
    wrong = []
    for path in sorted((REPO / "tests").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [a.name for a in node.names if not node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            wrong += [f"{path.name}: {n}" for n in names if re.match(r"(tests\.)?test_", n)]
    assert wrong == []
