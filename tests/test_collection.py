"""The collection arcops.arc (galaxy.yml): what `ansible-galaxy collection build` puts in it, its
version and changelog, and the clone calling its modules and plugins by their full names.
Running site.yml from the installed collection is the rollout scenario's (container tier);
ansible-test sanity is the lint tier's (scripts/collection sanity)."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from pathlib import Path

import arcops
import pytest
import yaml

from .conftest import REPO

GALAXY = yaml.safe_load((REPO / "galaxy.yml").read_text())
MODULES = sorted(p.stem for p in (REPO / "plugins" / "modules").glob("arcops_*.py"))


@pytest.fixture(scope="module")
def members(tmp_path_factory) -> set[str]:
    out = tmp_path_factory.mktemp("collection")
    galaxy = Path(sys.executable).with_name("ansible-galaxy")
    done = subprocess.run(
        [str(galaxy), "collection", "build", "--output-path", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (tarball,) = out.glob("arcops-arc-*.tar.gz")
    with tarfile.open(tarball) as tar:
        return {m.name for m in tar.getmembers() if m.isfile()}


def test_the_collection_carries_the_modules_plugins_roles_and_playbooks(members):
    assert {f"plugins/modules/{m}.py" for m in MODULES} <= members
    for kind in ("action", "lookup", "callback", "strategy", "vars"):
        shipped = {f"plugins/{kind}/{p.name}" for p in (REPO / "plugins" / kind).glob("*.py")}
        assert shipped and shipped <= members, kind
    helpers = {
        str(p.relative_to(REPO))
        for p in (REPO / "plugins" / "module_utils" / "arcops").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and "devtools" not in p.parts
    }
    assert helpers <= members
    roles = {p.name for p in (REPO / "roles").iterdir() if p.is_dir()}
    assert {m.split("/")[1] for m in members if m.startswith("roles/")} == roles
    for playbook in ("site", "rollout", "diag", "status", "fleet_status", "preflight", "verify"):
        assert f"playbooks/{playbook}.yml" in members
    assert {
        "meta/runtime.yml",
        "changelogs/changelog.yaml",
        "README.md",
        "tests/sanity/ignore-2.19.txt",
    } <= members


def test_what_only_the_clone_needs_stays_out(members):
    tops = {m.split("/")[0] for m in members}
    assert not tops & {
        "molecule",
        "scripts",
        "images",
        ".collections",
        ".venv",
        "build",
        "site.yml",
        "ansible.cfg",
    }
    assert not [m for m in members if m.startswith("tests/") and not m.startswith("tests/sanity/ignore-")]
    assert not [m for m in members if "/devtools/" in m or "__pycache__" in m or m.endswith(".pyc")]
    assert not [m for m in members if re.match(r"playbooks/(tasks/)?lab_", m)]
    assert "inventories/example/hosts.yml" in members and not [
        m for m in members if m.startswith("inventories/lab")
    ]


def test_one_version_and_its_changelog_entry():
    pyproject = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)[1]
    assert GALAXY["version"] == pyproject == arcops.__version__
    changelog = yaml.safe_load((REPO / "changelogs" / "changelog.yaml").read_text())
    release = changelog["releases"][GALAXY["version"]]
    assert release["changes"]["release_summary"] and re.fullmatch(r"\d{4}-\d\d-\d\d", release["release_date"])


def test_runtime_states_the_ansible_core_the_project_pins():
    from ansible.release import __version__ as core

    spec = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["requires_ansible"]
    low, high = re.fullmatch(r">=([\d.]+),<([\d.]+)", spec).groups()
    version = tuple(int(x) for x in core.split(".")[:3])
    assert tuple(int(x) for x in low.split(".")) <= version < tuple(int(x) for x in high.split("."))
    assert f"ansible-core=={core}" in (REPO / "requirements.lock").read_text()


def test_the_clone_is_the_collection_through_its_link():
    link = REPO / ".collections" / "ansible_collections" / "arcops" / "arc"
    assert link.is_symlink() and link.resolve() == REPO.resolve()
    assert "collections_path = .collections" in (REPO / "ansible.cfg").read_text()


def test_roles_and_playbooks_call_our_modules_and_plugins_by_their_full_names():
    """A bare name works in the clone only by accident of configuration; from the installed
    collection, a playbook's bare module name is not found."""
    names = "|".join([*MODULES, "arcops_sha256"])
    bare = re.compile(rf"^\s*(?:- )?({names}):|lookup\('({names})'|query\('({names})'", re.M)
    found = []
    for folder in ("roles", "playbooks", "molecule"):
        for path in (REPO / folder).rglob("*.yml"):
            found += [
                f"{path.relative_to(REPO)}: {m.group(0).strip()}" for m in bare.finditer(path.read_text())
            ]
    assert not found, found


def _pins(lock: Path) -> dict[str, str]:
    pins = {}
    for line in lock.read_text().splitlines():
        if m := re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\]+)", line):
            pins[re.sub(r"[-_.]+", "-", m[1]).lower()] = m[2]
    return pins


def test_the_execution_environment_pins_what_the_project_pins():
    """One version of each package: the EE's lock agrees with requirements.lock, every pin has
    hashes, and execution-environment.yml asks for the same ansible-core and ansible-runner."""
    ee, main = _pins(REPO / "requirements-ee.lock"), _pins(REPO / "requirements.lock")
    assert {"ansible", "ansible-core", "ansible-runner", "bindep", "dumb-init"} <= set(ee)
    assert {n: v for n, v in ee.items() if n in main and main[n] != v} == {}
    text = (REPO / "requirements-ee.lock").read_text()
    assert text.count("--hash=sha256:") >= len(ee)
    definition = yaml.safe_load((REPO / "execution-environment.yml").read_text())
    deps = definition["dependencies"]
    assert deps["ansible_core"]["package_pip"] == f"ansible-core=={main['ansible-core']}"
    assert deps["ansible_runner"]["package_pip"] == f"ansible-runner=={main['ansible-runner']}"
    assert definition["options"]["container_init"]["package_pip"] == f"dumb-init=={ee['dumb-init']}"


def test_the_collection_carries_its_system_packages(members):
    assert "bindep.txt" in members and "execution-environment.yml" not in members
