"""site.yml's plays: one per stage, in order, each tagged with its stage's name, and every stage
role's tasks tagged with the same phases (docs/stages.md)."""

import re
import subprocess

import pytest

from .conftest import REPO
from .helpers.ansible_run import ANSIBLE, needs_ansible

STAGES = ["preflight", "intel_stack", "mainline_kernel", "llama_cpp_sycl", "vllm_service"]
PHASES = {"validate", "state", "install", "verify", "record"}
# Each phase tag runs these phase files' tasks (besides the checks of the box): validate only
# checks, verify checks and reads what runs, install is the full path.
RUNS = {
    "validate": {"validate"},
    "verify": {"validate", "verify"},
    "install": {"validate", "state", "install", "verify", "record"},
}


def _playbook(*args: str) -> str:
    playbook = ANSIBLE.replace("bin/ansible", "bin/ansible-playbook")
    done = subprocess.run(
        [playbook, "-i", "inventories/lab", "site.yml", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@needs_ansible
def test_every_stage_is_a_play_tagged_with_its_name():
    out = _playbook("--list-tags")
    plays = re.findall(r"play #\d+ \(arc_servers\): .*\tTAGS: \[([^\]]*)\]\n\s+TASK TAGS: \[([^\]]*)\]", out)
    assert [sorted(p[0].split(",")) for p in plays] == [
        ["install", "preflight", "validate", "verify"],
        *[[stage] for stage in STAGES[1:]],
        ["verify_stage"],  # last; `verify` is the phase tag
    ], out
    # Run alone (--tags STAGE or a phase), a stage still checks the box first, and its role's
    # tasks carry every phase tag (the verify stage has no state phase: its module itself judges
    # whether the last verdict still holds).
    for stage, task_tags in plays[1:-1]:
        assert set(task_tags.split(", ")) == {stage, "preflight", "always"} | PHASES, (stage, task_tags)
    assert set(plays[-1][1].split(", ")) == {"verify_stage", "preflight", "always"} | PHASES - {"state"}


def _phase_files(stage: str, tag: str | None) -> set[str]:
    """The role's main.yml imports whose tags select them under TAG (None: every import)."""
    import yaml

    tasks = yaml.safe_load((REPO / "roles" / stage / "tasks" / "main.yml").read_text())
    out = set()
    for task in tasks:
        for t in task.get("block", [task]):
            tags = set(t.get("tags", []))
            if "ansible.builtin.import_tasks" in t and (tag is None or tag in tags):
                out.add(t["ansible.builtin.import_tasks"].removesuffix(".yml"))
    return out


@pytest.mark.parametrize("stage", STAGES[1:])
def test_every_stage_role_has_the_phases_and_every_import_is_tagged(stage):
    tasks = (REPO / "roles" / stage / "tasks" / "main.yml").read_text()
    assert "include_tasks" not in tasks, "static imports keep the tags"
    # An imported role after end_role would end its skip early: roles are included, tags applied.
    after = tasks.split("ansible.builtin.meta: end_role", 1)[1]
    assert "import_role" not in after
    assert after.count("include_role:") == after.count("apply: {tags: ["), stage
    names = _phase_files(stage, None)
    assert {"validate", "state", "verify", "record"} <= names, names
    for tag, phases in RUNS.items():
        selected = _phase_files(stage, tag)
        assert {p for p in phases if p in names} <= selected, (tag, selected)
        assert tag != "verify" or selected == {"validate", "verify"}, selected


def test_the_verify_stage_records_only_in_a_full_run():
    """Under --tags verify it checks, asks and judges; the record is written by a full run only,
    before the judgement fails a box."""
    assert _phase_files("verify", None) == {"validate", "gate", "record", "judge"}
    assert _phase_files("verify", "verify") == {"validate", "gate", "judge"}
    assert _phase_files("verify", "install") == {"validate", "gate", "record", "judge"}
    imports = [
        t["ansible.builtin.import_tasks"]
        for t in __import__("yaml").safe_load((REPO / "roles" / "verify" / "tasks" / "main.yml").read_text())
    ]
    assert imports.index("record.yml") < imports.index("judge.yml")


def _task_names(stage: str, phase: str) -> set[str]:
    """The names of a phase file's own tasks (blocks opened), as --list-tasks prints them."""
    import yaml

    out = set()
    todo = list(yaml.safe_load((REPO / "roles" / stage / "tasks" / f"{phase}.yml").read_text()) or [])
    while todo:
        task = todo.pop()
        todo += task.get("block", []) + task.get("rescue", []) + task.get("always", [])
        if "name" in task and "{{" not in task["name"] and "block" not in task:  # a block is no task
            out.add(task["name"])
    return out


@needs_ansible
def test_verify_lists_only_checks():
    """--tags verify changes nothing: no task of a stage's state, install or record files is
    listed, and every task of its verify files is."""
    lines = _playbook("--list-tasks", "--tags", "verify").splitlines()
    # "role : name" for a role's own task, the bare name for a role include.
    listed = {line.strip().split("\tTAGS: [")[0].split(" : ", 1)[-1] for line in lines}
    for stage in STAGES[1:]:
        checked = _phase_files(stage, "verify")
        for phase in _phase_files(stage, None) - checked:
            assert not _task_names(stage, phase) & listed, (stage, phase, _task_names(stage, phase) & listed)
        for phase in checked:
            assert _task_names(stage, phase) <= listed, (stage, phase, _task_names(stage, phase) - listed)


def test_the_vllm_container_is_created_from_the_checked_image_id():
    """The tag is checked (digest or archive) and then could move before the create: the
    container is made from the ID read in that check, which no retag can change."""
    import yaml

    tasks = yaml.safe_load((REPO / "roles/vllm_service/tasks/deploy.yml").read_text())
    create = next(t for t in tasks if "community.docker.docker_container" in t)
    image = create["community.docker.docker_container"]["image"]
    assert image.startswith("{{ vllm_service_image_id if vllm_service_image_id | length > 0"), image


@pytest.mark.parametrize("stage", [*STAGES[1:], "verify"])
def test_every_stage_play_starts_with_the_one_guard(stage):
    """The check of the box and the end for boxes a stage is not for are written once
    (playbooks/tasks/stage_guard.yml); a stage play only says whether it wants the box."""
    import yaml

    (play,) = yaml.safe_load((REPO / "playbooks" / f"{stage}.yml").read_text())
    assert [t.get("ansible.builtin.import_tasks") for t in play["pre_tasks"]] == ["tasks/stage_guard.yml"]
    assert "include_role" not in (REPO / "playbooks" / f"{stage}.yml").read_text()


def _tasks(path):
    import yaml

    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("stage", STAGES[1:])
def test_every_stage_role_seals_the_one_way(stage):
    """The seal step is the stage_seal role's (docs/seal.md): each stage role checks it first, ends
    on a converged box, writes it last, and its rollback removes it; nothing else."""
    tasks = _tasks(REPO / "roles" / stage / "tasks" / "main.yml")
    check, end, write = tasks[0], tasks[1], tasks[-1].get("block", tasks[-1:])[-1]
    assert check["ansible.builtin.import_role"] == {
        "name": "stage_seal",
        "tasks_from": "check",
        "rolespec_validate": False,
    }
    assert check["vars"]["stage_seal_role"] == stage
    assert end == {
        "name": end["name"],
        "ansible.builtin.meta": "end_role",
        "when": "stage_seal_check.converged | default(false)",
    }
    assert write["ansible.builtin.include_role"]["tasks_from"] == "write"
    assert write["vars"]["stage_seal_role"] == stage  # the same anchor as the check's
    middle = (REPO / "roles" / stage / "tasks" / "main.yml").read_text().split("end_role", 1)[1]
    assert middle.count("name: stage_seal") == 1
    rollback = REPO / "roles" / stage / "tasks" / "rollback.yml"
    if rollback.exists():
        removes = [
            t
            for t in _tasks(rollback)
            if t.get("ansible.builtin.include_role", {}).get("name") == "stage_seal"
        ]
        assert [t["ansible.builtin.include_role"]["tasks_from"] for t in removes] == ["absent"]


@pytest.mark.parametrize("stage", ["intel_stack", "mainline_kernel"])
def test_a_kernel_rollback_boots_through_the_one_rollback_boot(stage):
    """Going back to the kernel a stage recorded is kernel_boot's back (default, reboot, verify):
    a stage's rollback neither reboots nor sets GRUB's default nor verifies the kernel itself."""
    text = (REPO / "roles" / stage / "tasks" / "rollback.yml").read_text()
    boots = [
        t["ansible.builtin.include_role"]
        for t in _tasks(REPO / "roles" / stage / "tasks" / "rollback.yml")
        if t.get("ansible.builtin.include_role", {}).get("tasks_from") == "back"
    ]
    assert boots == [{"name": "kernel_boot", "tasks_from": "back"}]
    for own in (
        "safe_reboot",
        "grub-set-default",
        "tasks_from: verify",
        "ansible.builtin.setup",
        "builtin.reboot",
    ):
        assert own not in text, own


def test_no_role_parses_what_a_box_said_in_jinja():
    """Parsing a tool's output or a file (regex_findall, regex_search, from_yaml of stdout) is the
    package's, under pytest, through a module: templates and tasks only render and wire."""
    for path in sorted((REPO / "roles").rglob("*")):
        if path.suffix in (".yml", ".j2") and "meta" not in path.parts:
            text = path.read_text()
            for parse in ("regex_findall", "regex_search", "stdout | from_yaml", "stdout | from_json"):
                assert parse not in text, (path.relative_to(REPO), parse)
