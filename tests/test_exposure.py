"""What a vLLM API key does not guard, asked of a real vLLM (PyPI's CPU build, with a key), and
the spec's refusal that rests on it: off loopback, only an operator's allow_open_routes lets it
through. The render nodes and secret flags are tested in test_vllm_spec.py."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from arcops.vllm import exposure, vllm_spec

from .helpers.vllm_cpu import MODEL_NAME

BASE = {"image": "intel/llm-scaler-vllm:0.26.0-b2", "model_dir": "/srv/models", "model": "m"}
NODES = ["/dev/dri/renderD128", "/dev/dri/renderD129"]


def ask(url: str, method: str = "GET", body: dict | None = None) -> tuple[int, bytes]:
    """Without any key: the status and body."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_vllm_checks_its_key_on_v1_only(vllm_server):
    """Every route of the real server's OpenAPI document, asked without the key: /v1/* answers
    401, and the routes exposure.OPEN_ROUTES names answer (a 400 for an empty body is an
    answer: the key was not asked for)."""
    status, raw = ask(vllm_server.url + "/openapi.json")
    assert status == 200
    answers = {}
    for path, operations in json.loads(raw)["paths"].items():
        if "{" in path:
            continue  # a path with a parameter adds no new check
        for method in operations:
            body = None if method == "get" else {}
            answers[(method.upper(), path)] = ask(vllm_server.url + path, method.upper(), body)[0]
    guarded = {k: v for k, v in answers.items() if k[1].startswith(exposure.GUARDED_PREFIX)}
    assert guarded and all(code == 401 for code in guarded.values()), guarded
    open_paths = {path for (_, path), code in answers.items() if code != 401}
    assert set(exposure.OPEN_ROUTES) <= open_paths, answers
    assert all(not p.startswith(exposure.GUARDED_PREFIX) for p in open_paths)


def test_invocations_generates_without_the_key(vllm_server):
    """The open route that matters most: a completion for anybody who reaches the port."""
    body = {"model": MODEL_NAME, "prompt": "Hello", "max_tokens": 4, "temperature": 0}
    assert ask(vllm_server.url + "/v1/completions", "POST", body)[0] == 401
    status, raw = ask(vllm_server.url + "/invocations", "POST", body)
    assert status == 200, raw[:300]
    answer = json.loads(raw)
    assert answer["usage"]["completion_tokens"] >= 1 and answer["choices"][0]["text"] is not None


@pytest.mark.parametrize("address", ["0.0.0.0", "192.0.2.10", "::"])
def test_off_loopback_a_key_is_not_enough(address):
    settings = BASE | {"listen_address": address, "api_key": True}
    with pytest.raises(vllm_spec.SpecError) as e:
        vllm_spec.render(settings, 64, NODES)
    [problem] = e.value.problems
    assert problem.startswith(f"listen_address {address} is not loopback: vLLM checks api_key on /v1/* only")
    assert "/invocations" in problem and "allow_open_routes: true" in problem
    spec = vllm_spec.render(settings | {"allow_open_routes": True}, 64, NODES)
    assert spec["ports"][0]["host_ip"] == address
    # On loopback there is nobody else to ask: no opt-in needed, key or not.
    assert vllm_spec.render(BASE | {"api_key": True}, 64, NODES)["env_file_keys"] == ["VLLM_API_KEY"]
