"""site.yml's plays: one per stage, in order, each tagged with its stage's name (docs/stages.md)."""

import re
import subprocess

from .conftest import REPO
from .test_ansible_module import ANSIBLE, needs_ansible

STAGES = ["preflight", "intel_stack", "mainline_kernel", "llama_cpp_sycl", "vllm_service"]


@needs_ansible
def test_every_stage_is_a_play_tagged_with_its_name():
    playbook = ANSIBLE.replace("bin/ansible", "bin/ansible-playbook")
    done = subprocess.run(
        [playbook, "-i", "inventories/lab", "site.yml", "--list-tags"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    plays = re.findall(
        r"play #\d+ \(arc_servers\): .*\tTAGS: \[([^\]]*)\]\n\s+TASK TAGS: \[([^\]]*)\]", done.stdout
    )
    assert [p[0] for p in plays] == STAGES, done.stdout
    # Run alone (--tags STAGE), a stage still checks the box first: its preflight guard has both tags.
    for stage, task_tags in plays[1:]:
        assert set(task_tags.split(", ")) == {stage, "preflight"}, (stage, task_tags)
