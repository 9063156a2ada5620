"""arcops prove gate against a real vLLM (the CPU build) serving a tiny random model: the model answers
nonsense, deterministically, so these tests judge the gate (both runs, goldens, drift, a server
made wrong on purpose, every bad input), never the model. One server start for all of them."""

import http.server
import json
import threading
import urllib.request

import pytest
from arcops import cli

from .helpers.prompt_sets import self_answering_set
from .helpers.vllm_cpu import API_KEY, MODEL_NAME


@pytest.fixture(scope="module")
def key_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("key") / "api-key.env"
    path.write_text(f"VLLM_API_KEY={API_KEY}\n")  # as the vllm_service role writes it
    return path


def run_gate(capsys, *argv):
    code = cli.main(["prove", "gate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_shipped_set_runs_one_at_a_time_and_all_at_once(default_report):
    r = default_report
    assert r["max_model_len"] == 2048 and len(r["prompts"]) == 10
    assert r["passed"] is False  # a random model: every answer wrong, and the gate says so
    for p in r["prompts"]:
        for run in ("sequential", "concurrent"):
            answer = p[run]
            assert answer.get("error") is None, (p["id"], answer)
            assert answer["completion_tokens"] and answer["latency_s"] > 0
    needle = next(p for p in r["prompts"] if p["id"] == "needle")
    # Sized to 0.8 of the served 2048 tokens (from the server's own count, usage.prompt_tokens).
    assert 1000 <= needle["sequential"]["prompt_tokens"] <= 0.8 * 2048


def test_a_passing_set_passes_and_a_golden_holds(vllm_server, key_file, default_report, tmp_path, capsys):
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps(self_answering_set(default_report)))
    golden = tmp_path / "golden.json"
    base = [
        "--url",
        vllm_server.url,
        "--model",
        MODEL_NAME,
        "--api-key-file",
        str(key_file),
        "--prompts",
        str(prompts),
    ]
    code, out, _ = run_gate(capsys, *base, "--write-golden", str(golden), "--stack", "cpu-tiny")
    assert code == 0, out
    assert out.rstrip().endswith("right in both runs; PASS")
    recorded = json.loads(golden.read_text())
    assert (recorded["model"], recorded["stack"]) == (MODEL_NAME, "cpu-tiny") and len(
        recorded["outputs"]
    ) >= 5
    code, out, _ = run_gate(
        capsys, *base, "--golden", str(golden), "--stack", "cpu-tiny", "--fail-on-drift", "--json"
    )
    report = json.loads(out)
    assert (code, report["passed"], report["drift"]) == (0, True, [])
    # Another stack's golden is not compared: bad input, exit 2.
    code, _, err = run_gate(capsys, *base, "--golden", str(golden), "--stack", "xpu-2")
    assert code == 2 and "recorded for model 'tiny' on stack 'cpu-tiny'" in err


class TruncatingProxy(http.server.ThreadingHTTPServer):
    """Forwards to the real server and cuts every answer's text in half: a server that looks
    healthy and answers wrong, the failure the gate exists for."""

    def __init__(self, upstream):
        self.upstream = upstream

        class Handler(http.server.BaseHTTPRequestHandler):
            def _forward(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                request = urllib.request.Request(
                    upstream + self.path, data=body, method=method, headers=dict(self.headers)
                )
                try:
                    with urllib.request.urlopen(request, timeout=120) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                if self.path.endswith("/chat/completions") and status == 200:
                    answer = json.loads(data)
                    for choice in answer.get("choices", []):
                        text = choice["message"].get("content") or ""
                        choice["message"]["content"] = text[: len(text) // 2]
                    data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._forward("GET")

            def do_POST(self):
                self._forward("POST")

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


def test_a_truncating_server_fails_the_gate_and_drifts(
    vllm_server, key_file, default_report, tmp_path, capsys
):
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps(self_answering_set(default_report)))
    golden = tmp_path / "golden.json"
    args = ["--model", MODEL_NAME, "--api-key-file", str(key_file), "--prompts", str(prompts)]
    assert run_gate(capsys, "--url", vllm_server.url, *args, "--write-golden", str(golden))[0] == 0
    proxy = TruncatingProxy(vllm_server.url)
    try:
        code, out, _ = run_gate(capsys, "--url", proxy.url, *args, "--golden", str(golden), "--json")
    finally:
        proxy.shutdown()
    report = json.loads(out)
    assert code == 1 and report["passed"] is False
    assert sorted(report["drift"]) == sorted(p["id"] for p in report["prompts"])
    assert any(not p["pass"] for p in report["prompts"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--url", "http://127.0.0.1:9"], "cannot reach the server"),
        (["--url", "ftp://127.0.0.1"], "not an http(s) URL"),
        (["--model", "other"], "--model 'other': the server does not serve it (it serves: tiny)"),
        (["--no-key"], "GET /v1/models: 401"),
        (["--prompts", "{"], "bad.json: not JSON"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(vllm_server, key_file, tmp_path, capsys, argv, message):
    args = {"--url": vllm_server.url, "--model": MODEL_NAME, "--api-key-file": str(key_file)}
    if argv == ["--no-key"]:
        del args["--api-key-file"]
        argv = []
    elif argv[0] == "--prompts":
        bad = tmp_path / "bad.json"
        bad.write_text(argv[1])
        argv = ["--prompts", str(bad)]
    for flag, value in zip(argv[::2], argv[1::2], strict=True):
        args[flag] = value
    code, out, err = run_gate(capsys, *[x for kv in args.items() for x in kv])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert message in err
    assert API_KEY not in err


def test_the_key_is_never_in_the_report(vllm_server, key_file, capsys):
    code, out, err = run_gate(
        capsys, "--url", vllm_server.url, "--model", MODEL_NAME, "--api-key-file", str(key_file), "--json"
    )
    assert code == 1 and API_KEY not in out + err


def test_watch_host_reads_this_machines_ram_and_kernel_journal(vllm_server, key_file, capsys):
    base = ["--url", vllm_server.url, "--model", MODEL_NAME, "--api-key-file", str(key_file)]
    code, out, _ = run_gate(capsys, *base, "--watch-host", "--json")
    host = json.loads(out)["host"]
    assert code == 1 and host["mem_available_min_gib"] > 0 and host["samples"] >= 2
    assert host["xe_events"] == []  # no Arc GPU here: nothing for xe to reset
    code, out, _ = run_gate(capsys, *base, "--watch-host")
    assert "host: MemAvailable min " in out and "0 xe event(s) during the run" in out
