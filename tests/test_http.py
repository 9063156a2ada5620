"""A credential never follows a redirect to another server (real HTTP servers on loopback)."""

from __future__ import annotations

import http.server
import threading
import urllib.error
import urllib.request

import pytest
from arcops.common import http as arcops_http
from arcops.prove.openai_api import Endpoint


class Servers:
    """Two servers on 127.0.0.1 (two origins): each records what it was sent, and /go/<url>
    redirects there."""

    def __init__(self):
        self.seen: list[tuple[int, str, str | None]] = []
        seen = self.seen

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                seen.append((self.server.server_port, self.path, self.headers.get("Authorization")))
                if self.path.startswith("/go/"):
                    self.send_response(302)
                    self.send_header("Location", self.path[len("/go/") :])
                    self.end_headers()
                    return
                body = b'{"object": "list", "data": [{"id": "m"}]}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler) for _ in range(2)]
        for server in self.servers:
            threading.Thread(target=server.serve_forever, daemon=True).start()
        self.a, self.b = (f"http://127.0.0.1:{s.server_port}" for s in self.servers)

    def close(self):
        for server in self.servers:
            server.shutdown()
            server.server_close()


@pytest.fixture
def servers():
    s = Servers()
    yield s
    s.close()


def test_authorization_stays_with_its_origin(servers):
    """Same origin: the key goes along. Another origin (another port): it is dropped."""
    headers = {"Authorization": "Bearer sk-test-1"}
    with arcops_http.open_request(
        urllib.request.Request(f"{servers.a}/go/{servers.a}/here", headers=headers), 5
    ):
        pass
    with arcops_http.open_request(
        urllib.request.Request(f"{servers.a}/go/{servers.b}/there", headers=headers), 5
    ):
        pass
    port_a, port_b = (s.server_port for s in servers.servers)
    assert servers.seen == [
        (port_a, f"/go/{servers.a}/here", "Bearer sk-test-1"),
        (port_a, "/here", "Bearer sk-test-1"),
        (port_a, f"/go/{servers.b}/there", "Bearer sk-test-1"),
        (port_b, "/there", None),
    ]


def test_plain_urllib_would_have_sent_it(servers):
    """Why arcops has its own opener: the standard one forwards the key to the other server."""
    request = urllib.request.Request(f"{servers.a}/go/{servers.b}/x", headers={"Authorization": "Bearer k"})
    with urllib.request.urlopen(request, timeout=5):
        pass
    assert servers.seen[-1][2] == "Bearer k"


def test_the_api_client_keeps_its_key_home(servers):
    endpoint = Endpoint(f"{servers.a}/go/{servers.b}", api_key="sk-test-2")
    assert [m["id"] for m in endpoint.models()] == ["m"]
    assert [auth for _, _, auth in servers.seen] == ["Bearer sk-test-2", None]


def test_a_redirect_from_https_to_http_is_refused():
    handler = arcops_http._SameOriginCredentials()
    request = urllib.request.Request("https://example.invalid/a", headers={"Authorization": "Bearer k"})
    with pytest.raises(urllib.error.HTTPError, match="redirect from https to http refused"):
        handler.redirect_request(request, None, 302, "Found", {}, "http://example.invalid/b")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("sk-alone\n", "sk-alone"),
        ("VLLM_API_KEY=sk-env\n", "sk-env"),
        # vllm_service's env file: the key among extra_env's variables, in any order.
        ("HF_TOKEN=hf_x\nVLLM_API_KEY=sk-env\nZE_AFFINITY_MASK=0,1\n", "sk-env"),
    ],
)
def test_the_key_is_read_from_a_key_file_or_an_env_file(tmp_path, text, key):
    from arcops.prove.openai_api import read_key_file

    (tmp_path / "k").write_text(text)
    assert read_key_file(str(tmp_path / "k")) == key


@pytest.mark.parametrize("text", ["", "two\nlines\n", "VLLM_API_KEY=a\nVLLM_API_KEY=b\n", "VLLM_API_KEY=\n"])
def test_a_key_file_without_one_key_is_refused(tmp_path, text):
    from arcops.prove.openai_api import read_key_file

    (tmp_path / "k").write_text(text)
    with pytest.raises(ValueError, match="must hold one key on one line"):
        read_key_file(str(tmp_path / "k"))
