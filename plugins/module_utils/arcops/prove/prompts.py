"""The gate's prompt set: prompts with machine-checkable answers, and the checks of each answer.

A prompt set is JSON: {"format": 1, "max_tokens": N, "prompts": [PROMPT, ...]}. A PROMPT has an
`id`, either `messages` (OpenAI chat messages) or a `needle` (a long context the set builds near
the served maximum length: {"fraction", "secret"}), optional `tools` (OpenAI tool definitions),
and `expect`, exactly one of:
  {"number": N}           the last number in the answer is N (thousands separators allowed)
  {"regex": "..."}        the answer matches (Python re, case-insensitive)
  {"contains": "..."}     the answer contains the text (case-insensitive)
  {"tool_call": {"name": F, "arguments": {...}}}  the first tool call is F with these arguments
The default set (DEFAULT) is what `arcops prove gate` uses without --prompts.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

EXPECT_KINDS = ("number", "regex", "contains", "tool_call")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


class PromptSetError(ValueError):
    """A prompt set that cannot be used; the message names the prompt and the field."""


def _user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city name"}},
            "required": ["city"],
        },
    },
}

ONLY_NUMBER = " Answer with the number only."
DEFAULT: dict = {
    "format": 1,
    "max_tokens": 48,
    "prompts": [
        {
            "id": "crates",
            "messages": _user(
                "A crate holds 12 bottles. A shop receives 7 crates and sells 23 bottles. "
                "How many bottles are left?" + ONLY_NUMBER
            ),
            "expect": {"number": 61},
        },
        {
            "id": "ages",
            "messages": _user("Tom is 3 times as old as Ann. Ann is 14. How old is Tom?" + ONLY_NUMBER),
            "expect": {"number": 42},
        },
        {"id": "product", "messages": _user("What is 17 times 23?" + ONLY_NUMBER), "expect": {"number": 391}},
        {
            "id": "journey",
            "messages": _user(
                "A train leaves at 09:40 and arrives at 13:15 the same day. "
                "How many minutes does the journey take?" + ONLY_NUMBER
            ),
            "expect": {"number": 215},
        },
        {
            "id": "sequence",
            "messages": _user("What comes next: 2, 6, 18, 54, ...?" + ONLY_NUMBER),
            "expect": {"number": 162},
        },
        {
            "id": "words-to-number",
            "messages": _user("Write 'three hundred and twelve' in digits." + ONLY_NUMBER),
            "expect": {"number": 312},
        },
        {
            "id": "number-to-words",
            "messages": _user("Write the number 47 in English words, in lowercase, and nothing else."),
            "expect": {"regex": r"^\W*forty[- ]seven\W*$"},
        },
        {
            "id": "letters",
            "messages": _user("How many letters are in the word 'inference'?" + ONLY_NUMBER),
            "expect": {"number": 9},
        },
        {
            "id": "tool-call",
            "messages": _user("What is the weather in Oslo right now? Use the tool."),
            "tools": [WEATHER_TOOL],
            "expect": {"tool_call": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
        },
        {"id": "needle", "needle": {"fraction": 0.8, "secret": "7319"}, "expect": {"contains": "7319"}},
    ],
}


def load(text: str, where: str = "prompts") -> dict:
    """A prompt set from JSON text, checked: every problem names the prompt and the field."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise PromptSetError(f"{where}: not JSON ({e})") from None
    return check(data, where)


def check(data: Any, where: str = "prompts") -> dict:
    if not isinstance(data, dict) or data.get("format") != 1:
        raise PromptSetError(f'{where}: must be an object with "format": 1')
    max_tokens = data.get("max_tokens", 48)
    if not (isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and 1 <= max_tokens <= 4096):
        raise PromptSetError(f"{where}: max_tokens must be an integer from 1 to 4096")
    prompts = data.get("prompts")
    if not isinstance(prompts, list) or not prompts:
        raise PromptSetError(f"{where}: prompts must be a non-empty list")
    seen = set()
    for n, p in enumerate(prompts):
        name = p.get("id") if isinstance(p, dict) else None
        at = f"{where}: prompt {n + 1}" + (f" ({name})" if isinstance(name, str) and name else "")
        if not isinstance(p, dict) or not isinstance(name, str) or not name:
            raise PromptSetError(f"{at}: needs an id (text)")
        if name in seen:
            raise PromptSetError(f"{at}: the id is used twice")
        seen.add(name)
        if ("messages" in p) == ("needle" in p):
            raise PromptSetError(f"{at}: give exactly one of messages, needle")
        if "messages" in p and not _messages_ok(p["messages"]):
            raise PromptSetError(f"{at}: messages must be a list of {{role, content}} with text content")
        if "needle" in p:
            needle = p["needle"]
            ok = isinstance(needle, dict) and isinstance(needle.get("secret"), str) and needle["secret"]
            fraction = needle.get("fraction", 0.8) if isinstance(needle, dict) else None
            if not ok or not (isinstance(fraction, int | float) and 0 < fraction < 1):
                raise PromptSetError(f"{at}: needle must be {{secret (text), fraction (0-1)}}")
        if "tools" in p and not (
            isinstance(p["tools"], list) and all(isinstance(t, dict) for t in p["tools"])
        ):
            raise PromptSetError(f"{at}: tools must be a list of tool definitions")
        _check_expect(p.get("expect"), at, "tools" in p)
    return {**data, "max_tokens": max_tokens}


def _messages_ok(messages: Any) -> bool:
    return (
        isinstance(messages, list)
        and bool(messages)
        and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in messages
        )
    )


def _check_expect(expect: Any, at: str, has_tools: bool) -> None:
    if not isinstance(expect, dict) or len(expect) != 1 or next(iter(expect)) not in EXPECT_KINDS:
        raise PromptSetError(f"{at}: expect must be exactly one of {', '.join(EXPECT_KINDS)}")
    kind, value = next(iter(expect.items()))
    if kind == "number" and not (isinstance(value, int | float) and not isinstance(value, bool)):
        raise PromptSetError(f"{at}: expect.number must be a number")
    if kind in ("contains", "regex") and not (isinstance(value, str) and value):
        raise PromptSetError(f"{at}: expect.{kind} must be non-empty text")
    if kind == "regex":
        try:
            re.compile(value)
        except re.error as e:
            raise PromptSetError(f"{at}: expect.regex does not compile ({e})") from None
    if kind == "tool_call":
        if not (
            isinstance(value, dict)
            and isinstance(value.get("name"), str)
            and isinstance(value.get("arguments", {}), dict)
        ):
            raise PromptSetError(f"{at}: expect.tool_call must be {{name, arguments}}")
        if not has_tools:
            raise PromptSetError(f"{at}: expect.tool_call needs tools")


def expected_text(expect: dict) -> str:
    kind, value = next(iter(expect.items()))
    if kind == "tool_call":
        return f"{value['name']}({json.dumps(value.get('arguments', {}), sort_keys=True)})"
    return f"{kind} {value}"


def judge(expect: dict, text: str, tool_calls: list[dict]) -> bool:
    """Whether an answer (its text and tool calls, as the server returned them) meets EXPECT."""
    kind, value = next(iter(expect.items()))
    if kind == "number":
        found = _NUMBER.findall(text or "")
        if not found:
            return False
        try:
            return float(found[-1].replace(",", "")) == float(value)
        except ValueError:
            return False
    if kind == "contains":
        return value.lower() in (text or "").lower()
    if kind == "regex":
        return re.search(value, text or "", re.IGNORECASE) is not None
    call = tool_calls[0].get("function", {}) if tool_calls else {}
    if call.get("name") != value["name"]:
        return False
    try:
        args = json.loads(call.get("arguments") or "{}")
    except ValueError:
        return False
    want = value.get("arguments", {})
    return isinstance(args, dict) and all(args.get(k) == v for k, v in want.items())


FILLER = (
    "The archive keeps weather notes from many towns. ",
    "Each note lists the wind, the rain and the temperature at noon. ",
    "Clerks copy the notes into ledgers every evening. ",
    "Some ledgers are bound in blue cloth, others in brown leather. ",
)


def needle_messages(secret: str, target_chars: int, lead: str = "") -> list[dict]:
    """A long context of filler with the secret halfway, and the question after it. LEAD, when
    given, opens the context: prompts with leads of their own share no prefix a server could
    have cached (the filler is the same text every time)."""
    half = max(target_chars // 2, 0)
    before = _filler(half)
    after = _filler(half)
    context = f"{lead}{before}Remember this: the access code is {secret}. {after}"
    question = "What is the access code mentioned in the text above? Answer with the code only."
    return _user(f"{context}\n\n{question}")


def lead(index: int, run: str = "000000") -> str:
    """Request INDEX's own first words in RUN (a run's random tag). A server that caches prompt
    prefixes (vLLM by default) answers a prompt it has seen from its cache: one decode prompt
    sent again and again had the real vLLM CPU server's time to first token at 6-7 ms against
    12-26 ms for `vllm bench serve`'s random prompts, and each prefill prompt began with the last
    one's filler. Every prompt of every run opens with its own lead, as random prompts differ."""
    return f"Request {run}-{index % 10_000:04d}. "


def run_tag() -> str:
    """A run's random tag for its leads: no two runs send the same prompt."""
    return os.urandom(3).hex()


def leading(messages: list[dict], index: int, run: str) -> list[dict]:
    """MESSAGES, sized with lead(0), opening with lead(INDEX, RUN) instead (as many characters)."""
    first, *rest = messages
    return [{**first, "content": lead(index, run) + first["content"][len(lead(0)) :]}, *rest]


def _filler(chars: int) -> str:
    out, n, i = [], 0, 0
    while n < chars:
        s = FILLER[i % len(FILLER)]
        out.append(s)
        n += len(s)
        i += 1
    return "".join(out)[:chars]  # to the character: a needle can be sized to a few tokens
