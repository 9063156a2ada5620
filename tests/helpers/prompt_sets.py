"""Prompt sets the tests make from a real server's answers."""

from __future__ import annotations

from arcops.prove import gate


def self_answering_set(report: dict) -> dict:
    """Prompts whose expectation is the end of the tiny model's own greedy answer (from a gate
    REPORT of the shipped set): a set it passes, and that a server cutting answers short fails."""
    prompts = []
    for p in gate.prompt_set.DEFAULT["prompts"]:
        text = next(r for r in report["prompts"] if r["id"] == p["id"])["sequential"]["text"]
        if "messages" in p and "tools" not in p and text.strip():
            prompts.append(
                {"id": p["id"], "messages": p["messages"], "expect": {"contains": text.strip()[-12:]}}
            )
    return {"format": 1, "max_tokens": 48, "prompts": prompts}
