"""The stand-in's API server: vLLM's routes, answered by a real engine behind it when one is named
(ARCOPS_STANDIN_ENGINE), its metrics, and the wrong and stall plans."""

import contextlib
import hashlib
import hmac
import http.client
import json
import os
import threading
import time
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standin_plan import MAX_MODEL_LEN, VLLM_VERSION

# ---------------------------------------------------------------- the engine behind the API

ENGINE_ENV = "ARCOPS_STANDIN_ENGINE"
ENGINE_ROUTES = ("/v1/chat/completions", "/v1/completions", "/tokenize")
STALL_ROUTES = ("/v1/chat/completions", "/v1/completions")  # the ones that generate


def _reverse_texts(answer: object) -> None:
    """Each choice's text reversed in place (message, delta or completion text)."""
    for choice in (answer.get("choices") or []) if isinstance(answer, dict) else []:
        for part in (choice.get("message"), choice.get("delta"), choice):
            if isinstance(part, dict):
                for key in ("content", "text"):
                    if isinstance(part.get(key), str):
                        part[key] = part[key][::-1]


def _mangled(data: bytes) -> bytes:
    try:
        answer = json.loads(data)
    except ValueError:
        return data
    _reverse_texts(answer)
    return json.dumps(answer).encode()


def _mangled_event(line: bytes) -> bytes:
    if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
        return line
    return b"data: " + _mangled(line[6:].strip()) + b"\n"


def _metrics(state: dict) -> str:
    """vLLM's request gauges and generation token counter in its Prometheus text (one engine, the
    served model's name; prometheus_client names a counter's sample <family>_total)."""
    name = state["models"][0]["id"] if state["models"] else ""
    labels = f'engine="0",model_name="{name}"'
    out = []
    for family, kind, value, what in (
        (
            "vllm:num_requests_running",
            "gauge",
            state["running"],
            "Number of requests in model execution batches.",
        ),
        ("vllm:num_requests_waiting", "gauge", 0, "Number of requests waiting to be processed."),
        ("vllm:generation_tokens", "counter", state["generated"], "Number of generation tokens processed."),
    ):
        sample = f"{family}_total" if kind == "counter" else family
        out += [f"# HELP {family} {what}", f"# TYPE {family} {kind}", f"{sample}{{{labels}}} {float(value)}"]
    return "\n".join(out) + "\n"


def _generated(data: bytes, event: bool = False) -> int:
    """Tokens an engine's answer says it generated (usage's completion_tokens), or for one EVENT
    of a stream, one per choice with text (a stream's usage event repeats what was counted)."""
    try:
        answer = json.loads(data)
    except ValueError:
        return 0
    if not isinstance(answer, dict):
        return 0
    usage = answer.get("usage")
    if not event and isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        return usage["completion_tokens"]
    count = 0
    for choice in answer.get("choices") or []:
        part = (choice.get("delta") or choice) if isinstance(choice, dict) else {}
        count += bool(isinstance(part, dict) and (part.get("content") or part.get("text")))
    return count


def _post(engine: dict, path: str, body: dict) -> dict | None:
    conn = http.client.HTTPConnection(engine["host"], engine["port"], timeout=60)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        answer = conn.getresponse()
        data = answer.read()
        return json.loads(data) if answer.status == 200 else None
    except (OSError, ValueError):
        return None
    finally:
        conn.close()


def _count_chat(engine: dict, request: dict) -> dict | None:
    """Chat messages tokenized as vLLM does (through the chat template), by an engine that has
    llama-server's /apply-template; None when it has not (vLLM answers /tokenize itself)."""
    templated = _post(engine, "/apply-template", {"messages": request["messages"]})
    if not isinstance(templated, dict) or not isinstance(templated.get("prompt"), str):
        return None
    tokens = (_post(engine, "/tokenize", {"content": templated["prompt"], "add_special": True}) or {}).get(
        "tokens"
    )
    return {"count": len(tokens), "tokens": tokens} if isinstance(tokens, list) else None


def engine_info(url: str) -> dict:
    """The engine's address, model and context length; OSError or ValueError when it cannot say."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"{ENGINE_ENV} must be http://HOST:PORT, not {url!r}")
    host, port = parts.hostname, parts.port or 80

    def get(path: str) -> dict:
        conn = http.client.HTTPConnection(host, port, timeout=10)
        try:
            conn.request("GET", path)
            answer = conn.getresponse()
            data = answer.read()
            if answer.status != 200:
                raise ValueError(f"GET {path}: HTTP {answer.status}")
            return json.loads(data)
        finally:
            conn.close()

    (model,) = get("/v1/models")["data"][:1]
    length = model.get("max_model_len")
    if not isinstance(length, int):  # llama-server says its context in /props
        props = get("/props")
        length = (props.get("default_generation_settings") or {}).get("n_ctx") or props.get("n_ctx")
    return {"host": host, "port": port, "model": model["id"], "max_model_len": int(length)}


# ---------------------------------------------------------------- the API server process


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def version_string(self) -> str:
        return "uvicorn"

    def do_GET(self):
        state = self.server.state
        path = self.path.split("?", 1)[0]
        if path.startswith("/v1/") and state["api_key"] and not self._authorized(state["api_key"]):
            return self._json(HTTPStatus.UNAUTHORIZED, {"error": "Unauthorized"})
        if path == "/health":
            return self._send(HTTPStatus.OK, b"", None)
        if path == "/version":
            return self._json(HTTPStatus.OK, {"version": VLLM_VERSION})
        if path == "/v1/models":
            return self._json(HTTPStatus.OK, {"object": "list", "data": state["models"]})
        if path == "/arcops-standin/argv":
            return self._json(HTTPStatus.OK, state["info"])
        if path == "/metrics":  # open without the key, as vLLM's; the gauges a drain waits on
            return self._send(HTTPStatus.OK, _metrics(state).encode(), "text/plain; version=0.0.4")
        return self._json(HTTPStatus.NOT_FOUND, {"detail": "Not Found"})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        state = self.server.state
        path = self.path.split("?", 1)[0]
        if path.startswith("/v1/") and state["api_key"] and not self._authorized(state["api_key"]):
            return self._json(HTTPStatus.UNAUTHORIZED, {"error": "Unauthorized"})
        if state["stall"] and path in STALL_ROUTES:
            with state["lock"]:
                state["running"] += 1
            try:  # running, and never a token: until the server stops (a daemon thread ends with it)
                state["stop"].wait(3600)
                return self._json(HTTPStatus.GATEWAY_TIMEOUT, {"detail": "stalled"})
            finally:
                with state["lock"]:
                    state["running"] -= 1
        engine = state.get("engine")
        if engine is None or path not in ENGINE_ROUTES:
            return self._json(HTTPStatus.NOT_FOUND, {"detail": "Not Found"})
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return self._json(HTTPStatus.BAD_REQUEST, {"detail": "body is not JSON"})
        if isinstance(request, dict) and "model" in request:
            request["model"] = engine["model"]
        if path == "/tokenize" and isinstance(request, dict) and "messages" in request:
            counted = _count_chat(engine, request)
            if counted is not None:  # vLLM's /tokenize templates chat messages; llama-server's takes text
                return self._json(HTTPStatus.OK, {**counted, "max_model_len": engine["max_model_len"]})
        with state["lock"]:
            state["running"] += 1
        try:
            self._forward(engine, path, json.dumps(request).encode(), state)
        finally:
            with state["lock"]:
                state["running"] -= 1

    def _forward(self, engine: dict, path: str, body: bytes, state: dict) -> None:
        """The engine's answer, streamed through as it comes (text reversed when wrong), its
        tokens counted as they pass."""
        wrong = state["wrong"]

        def count(data: bytes, event: bool = False) -> None:
            n = _generated(data, event)
            if n:
                with state["lock"]:
                    state["generated"] += n

        conn = http.client.HTTPConnection(engine["host"], engine["port"], timeout=600)
        try:
            conn.request("POST", path, body, {"Content-Type": "application/json"})
            answer = conn.getresponse()
            kind = answer.getheader("Content-Type", "application/json")
            if not kind.startswith("text/event-stream"):
                data = answer.read()
                if answer.status == 200 and path != "/tokenize":
                    count(data)
                return self._send(HTTPStatus(answer.status), _mangled(data) if wrong else data, kind)
            self.send_response(answer.status)
            self.send_header("Content-Type", kind)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for line in answer:
                if line.startswith(b"data: ") and line.strip() != b"data: [DONE]":
                    count(line[6:].strip(), event=True)
                line = _mangled_event(line) if wrong else line
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError as e:
            with contextlib.suppress(OSError):
                self._json(HTTPStatus.BAD_GATEWAY, {"detail": f"engine: {e}"})
        finally:
            conn.close()

    def _authorized(self, key: str) -> bool:
        given = self.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {key}".encode())

    def _json(self, status: HTTPStatus, body: object) -> None:
        self._send(status, json.dumps(body).encode(), "application/json")

    def _send(self, status: HTTPStatus, body: bytes, content_type: str | None) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_request(self, code="-", size="-"):
        """uvicorn's access log line, on stdout."""
        host, port = self.client_address[:2]
        phrase = HTTPStatus(int(code)).phrase if str(code).isdigit() else ""
        self.server.log.uvicorn(f'{host}:{port} - "{self.requestline}" {code} {phrase}'.rstrip(), fd=1)

    def log_message(self, format, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


def server_state(args, procs: list, mode: str, kv: int, cold: bool, engine: dict | None) -> dict:
    """What the API server answers from: models, the info route, the mode, the request counters."""
    created = int(time.time())
    models = [
        {
            "id": name,
            "object": "model",
            "created": created,
            "owned_by": "vllm",
            "root": args.model,
            "parent": None,
            "max_model_len": MAX_MODEL_LEN,
            "permission": [
                {
                    "id": f"modelperm-{hashlib.sha256(name.encode()).hexdigest()[:32]}",
                    "object": "model_permission",
                    "created": created,
                    "allow_create_engine": False,
                    "allow_sampling": True,
                    "allow_logprobs": True,
                    "allow_search_indices": False,
                    "allow_view": True,
                    "allow_fine_tuning": False,
                    "organization": "*",
                    "group": None,
                    "is_blocking": False,
                }
            ],
        }
        for name in args.served
    ]
    info = {
        "argv": args.redacted_argv(),
        "env": sorted(os.environ),
        "mode": mode,
        "model": args.model,
        "served_model_names": args.served,
        "tensor_parallel_size": args.tp,
        "pid": os.getpid(),
        "workers": [p.pid for p in procs],
        "kv_cache_tokens": kv,
        "cold_start": cold,
    }
    if engine is not None:
        for m in models:
            m["max_model_len"] = engine["max_model_len"]
        info["engine"] = {k: engine[k] for k in ("model", "max_model_len")}
    return {
        "api_key": os.environ.get("VLLM_API_KEY", ""),
        "models": models,
        "info": info,
        "engine": engine,
        "wrong": mode == "wrong",
        "stall": mode == "stall",
        "stop": threading.Event(),  # set at shutdown: a stalled request ends with the server
        "running": 0,  # requests being answered now (vllm:num_requests_running)
        "generated": 0,  # tokens the engine answered (vllm:generation_tokens_total)
        "lock": threading.Lock(),
    }
