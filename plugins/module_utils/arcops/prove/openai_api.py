"""A small client for OpenAI-compatible servers (vLLM, llama-server): models and chat completions.

Stdlib only (the gate also runs on the box). The API key is sent as a bearer token and never
appears in an error, a report or a log line.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator

from ..common import http
from ..common.inputs import read_text

# An env file as the roles write it (VLLM_API_KEY=...) holds a key too.
KEY_FILE_PREFIXES = ("VLLM_API_KEY=", "LLAMA_API_KEY=")


class ApiError(Exception):
    """The server could not be reached, refused the request or answered something unreadable.
    `status` is the HTTP status (None when nothing answered)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def read_key_file(path: str) -> str:
    """The API key in PATH: the key alone on one line, or an env file's VLLM_API_KEY=... line
    (the file may hold other variables too: vllm_service's extra_env)."""
    text = read_text(path, "API key file", limit=65536).strip()
    lines = [line.strip() for line in text.splitlines()]
    keyed = [line.split("=", 1)[1].strip() for line in lines if line.startswith(KEY_FILE_PREFIXES)]
    key = (keyed[0] if len(keyed) == 1 else "") if keyed else text
    if not key or "\n" in key:
        raise ValueError(f"API key file {path}: must hold one key on one line (or one VLLM_API_KEY= line)")
    return key


def base_url(url: str) -> str:
    """http(s)://host:port[/prefix] without a trailing /v1: the one form every call extends."""
    try:
        parsed = urllib.parse.urlsplit(url)
        parsed.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ApiError(f"--url {url!r}: not an http(s) URL such as http://127.0.0.1:8000")
    path = parsed.path.rstrip("/")
    path = path[: -len("/v1")] if path.endswith("/v1") else path
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, path, "", ""))


class Endpoint:
    def __init__(self, url: str, api_key: str | None = None, timeout: float = 300.0):
        self.base = base_url(url)
        self._key = api_key or None
        self.timeout = timeout

    def _request(self, method: str, path: str, body: dict | None = None, stream: bool = False):
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        try:
            return http.open_request(request, timeout=self.timeout)  # the key never follows a redirect away
        except urllib.error.HTTPError as e:
            raise ApiError(f"{method} {path}: {e.code} {_server_message(e)}", e.code) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
            reason = getattr(e, "reason", None) or e
            raise ApiError(f"{self.base}: cannot reach the server ({reason})") from None

    def request_json(self, method: str, path: str, body: dict | None = None) -> dict:
        """One JSON request and its JSON object answer (any endpoint: /props, /tokenize, ...)."""
        with self._request(method, path, body) as response:
            raw = response.read()
        try:
            out = json.loads(raw)
        except ValueError:
            raise ApiError(f"{method} {path}: the answer is not JSON: {raw[:120]!r}") from None
        if not isinstance(out, dict):
            raise ApiError(f"{method} {path}: the answer is not a JSON object")
        return out

    def text(self, path: str, limit: int = 4 * 2**20) -> str:
        """A GET's text answer, at most LIMIT bytes (/metrics)."""
        with self._request("GET", path) as response:
            return response.read(limit).decode("utf-8", "replace")

    def models(self) -> list[dict]:
        """The served models: each {id, ...} as the server lists them (vLLM adds max_model_len)."""
        data = self.request_json("GET", "/v1/models").get("data")
        if not isinstance(data, list):
            raise ApiError("GET /v1/models: no model list in the answer")
        return [m for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]

    def chat(self, body: dict) -> dict:
        return self.request_json("POST", "/v1/chat/completions", {**body, "stream": False})

    def stream_chat(self, body: dict) -> Iterator[dict]:
        """Server-sent chunks of a streamed chat completion, usage included at the end."""
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        with self._request("POST", "/v1/chat/completions", body) as response:
            for raw in response:
                line = raw.decode("utf-8", errors="replace").strip()
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    return
                try:
                    yield json.loads(payload)
                except ValueError:
                    raise ApiError(f"stream: a chunk is not JSON: {payload[:120]!r}") from None


def _server_message(e: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(e.read() or b"{}")
    except (ValueError, OSError):
        return e.reason or ""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else (error or body.get("message"))
    return str(message or e.reason or "")[:300]
