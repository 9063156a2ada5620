"""The lab's model server: llama.cpp's CPU llama-server (llama_cpu.py's build) on the tiny GGUF,
which answers for the lab's vLLM stand-ins (ARCOPS_STANDIN_ENGINE) and, as their llama-server,
in the boxes. Its random weights answer nonsense; the lab's prompt set expects the nonsense it
gives (prompt_sets.self_answering_set), so the verify stage's gate has answers to judge: the same
in one-at-a-time and all-at-once runs, through every path the lab serves them.

    python -m tests.helpers.lab_model prompts URL OUT.json   (made from the server at URL)
"""

from __future__ import annotations

import json
import sys

from arcops.common.outputs import write_atomic
from arcops.prove import gate
from arcops.prove.openai_api import Endpoint

from .prompt_sets import self_answering_set


def prompts(url: str, out: str) -> None:
    endpoint = Endpoint(url)
    report = gate.run(endpoint, gate.only_model(endpoint), gate.prompt_set.DEFAULT)
    data = self_answering_set(report)
    gate.prompt_set.check(data, out)  # the set the verify stage will load
    write_atomic(out, json.dumps(data, indent=2) + "\n")
    print(f"{out}: {len(data['prompts'])} prompts from {report['model']}")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "prompts":
        sys.exit("usage: python -m tests.helpers.lab_model prompts URL OUT.json")
    prompts(sys.argv[2], sys.argv[3])
