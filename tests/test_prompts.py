"""The gate's prompt set: the shipped set is valid, every answer check judges as written, and any
prompt file is a set or one clear error naming the prompt and field."""

import json

import pytest
from arcops.prove import prompts
from arcops.prove.prompts import PromptSetError
from hypothesis import given
from hypothesis import strategies as st


def test_the_shipped_set_has_ten_prompts_of_every_kind():
    data = prompts.check(prompts.DEFAULT)
    kinds = [next(iter(p["expect"])) for p in data["prompts"]]
    assert len(kinds) == 10 and set(kinds) == {"number", "regex", "contains", "tool_call"}
    assert sum("needle" in p for p in data["prompts"]) == 1


@pytest.mark.parametrize(
    ("expect", "text", "calls", "right"),
    [
        ({"number": 61}, "61", [], True),
        ({"number": 61}, "There are 61 bottles left.", [], True),
        ({"number": 1200}, "1,200", [], True),
        ({"number": 61}, "61? No: 62", [], False),  # the last number counts
        ({"number": 61}, "sixty-one", [], False),
        ({"number": 0.5}, "0.5", [], True),
        ({"regex": r"^\W*forty[- ]seven\W*$"}, "Forty-seven.", [], True),
        ({"regex": r"^\W*forty[- ]seven\W*$"}, "forty-seven and more", [], False),
        ({"contains": "7319"}, "The code is 7319.", [], True),
        ({"contains": "7319"}, "", [], False),
        (
            {"tool_call": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
            "",
            [{"function": {"name": "get_weather", "arguments": '{"city": "Oslo", "unit": "c"}'}}],
            True,
        ),
        (
            {"tool_call": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
            "",
            [{"function": {"name": "get_weather", "arguments": '{"city": "Bergen"}'}}],
            False,
        ),
        (
            {"tool_call": {"name": "get_weather", "arguments": {}}},
            "",
            [{"function": {"name": "get_weather", "arguments": "not json"}}],
            False,
        ),
        ({"tool_call": {"name": "get_weather", "arguments": {}}}, "get_weather(Oslo)", [], False),
    ],
)
def test_answers_are_judged_as_written(expect, text, calls, right):
    assert prompts.judge(expect, text, calls) is right


def _set(**prompt):
    return json.dumps(
        {
            "format": 1,
            "prompts": [
                {"id": "p", "messages": [{"role": "user", "content": "q"}], "expect": {"number": 1}, **prompt}
            ],
        }
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{", "prompts: not JSON"),
        ('{"prompts": []}', 'prompts: must be an object with "format": 1'),
        ('{"format": 1, "prompts": []}', "prompts: prompts must be a non-empty list"),
        (
            '{"format": 1, "max_tokens": 0, "prompts": [1]}',
            "prompts: max_tokens must be an integer from 1 to 4096",
        ),
        (_set(expect={"number": "61"}), "prompts: prompt 1 (p): expect.number must be a number"),
        (_set(expect={"regex": "("}), "prompts: prompt 1 (p): expect.regex does not compile"),
        (_set(expect={"number": 1, "contains": "x"}), "prompts: prompt 1 (p): expect must be exactly one of"),
        (_set(expect={"tool_call": {"name": "f"}}), "prompts: prompt 1 (p): expect.tool_call needs tools"),
        (_set(needle={"secret": "1"}), "prompts: prompt 1 (p): give exactly one of messages, needle"),
        (
            _set(messages=[{"role": "user"}]),
            "prompts: prompt 1 (p): messages must be a list of {role, content}",
        ),
        (_set(id=""), "prompts: prompt 1: needs an id"),
    ],
)
def test_a_bad_prompt_set_is_refused_by_prompt_and_field(text, error):
    with pytest.raises(PromptSetError) as e:
        prompts.load(text)
    assert str(e.value).startswith(error)


def test_a_needle_holds_its_secret_in_a_context_of_the_asked_size():
    messages = prompts.needle_messages("7319", 30_000)
    text = messages[0]["content"]
    assert "the access code is 7319." in text and 30_000 <= len(text) <= 31_000
    assert text.index("7319") > len(text) // 3


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "format",
                    "prompts",
                    "id",
                    "messages",
                    "needle",
                    "expect",
                    "tools",
                    "number",
                    "regex",
                    "role",
                    "content",
                    "max_tokens",
                    "secret",
                    "fraction",
                    "tool_call",
                    "name",
                    "arguments",
                    "contains",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=25,
)


@given(_JSON)
def test_any_prompt_file_is_a_set_or_one_clear_error(data):
    try:
        prompts.load(json.dumps(data))
    except PromptSetError as e:
        assert str(e).startswith("prompts: ") and "\n" not in str(e)


@given(st.text(max_size=200))
def test_any_golden_file_is_one_or_one_clear_error(text):
    from arcops.prove.gate import GateError, load_golden

    try:
        golden = load_golden(text, "g.json")
    except GateError as e:
        assert str(e).startswith("g.json: ") and "\n" not in str(e)
    else:
        assert isinstance(golden["outputs"], dict)


@given(st.text(max_size=80))
def test_any_url_is_a_base_or_one_clear_error(text):
    from arcops.prove.openai_api import ApiError, base_url

    try:
        base = base_url(text)
    except ApiError as e:
        assert str(e).startswith("--url ") and "\n" not in str(e)
    else:
        assert base.startswith(("http://", "https://")) and not base.endswith(("/", "/v1"))


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000"),
        ("https://box.example/llm/v1/", "https://box.example/llm"),
    ],
)
def test_urls_with_or_without_v1_are_the_same_server(url, base):
    from arcops.prove.openai_api import base_url

    assert base_url(url) == base
