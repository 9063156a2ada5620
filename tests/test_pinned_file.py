"""One pinned-file path: a control-node copy or a download lands only with its sha256, and once there
is never copied, downloaded or hashed again."""

import base64
import hashlib
import http.server
import json
import os
import stat
import threading

import pytest
from arcops.stages import pinned_file
from arcops.stages.pinned_file import PinnedFileError, ensure
from hypothesis import given, settings
from hypothesis import strategies as st

from .helpers.ansible_run import needs_ansible, run_module

BODY = b"pinned bytes\n" * 1000
SHA = hashlib.sha256(BODY).hexdigest()


AUTHORIZATIONS: list[str | None] = []


@pytest.fixture(scope="module")
def server():
    """A real HTTP server on loopback: /file serves BODY, anything else is a 404."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            AUTHORIZATIONS.append(self.headers.get("Authorization"))
            if self.path != "/file":
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "control" / "bundle.tar"
    path.parent.mkdir()
    path.write_bytes(BODY)
    return path


def test_a_copy_lands_once_with_its_mode_and_folders(source, tmp_path):
    dest = tmp_path / "box" / "cache" / "bundle.tar"
    file = {"path": str(source), "sha256": SHA}
    assert ensure(file, str(dest))["needs_copy"] is True and not dest.exists()
    done = ensure(file, str(dest), "0700", "0750", src=str(source))
    assert done["changed"] and dest.read_bytes() == BODY
    assert stat.S_IMODE(dest.stat().st_mode) == 0o700
    assert stat.S_IMODE(dest.parent.stat().st_mode) == 0o750
    assert ensure(file, str(dest), "0700")["changed"] is False
    # A mode that drifted is put back without a copy.
    os.chmod(dest, 0o666)
    assert ensure(file, str(dest), "0700")["fixed"] == "mode" and stat.S_IMODE(dest.stat().st_mode) == 0o700


def test_a_wrong_copy_never_stands_at_dest(source, tmp_path):
    dest = tmp_path / "bundle.tar"
    dest.write_bytes(b"the old one")
    with pytest.raises(PinnedFileError, match=f"sha256 {SHA} did not match the pinned 0{{63}}"):
        ensure({"path": str(source), "sha256": "0" * 64}, str(dest), src=str(source))
    assert dest.read_bytes() == b"the old one"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_sha256_is_remembered_and_a_changed_file_is_hashed_again(source, tmp_path, monkeypatch):
    dest = tmp_path / "bundle.tar"
    ensure({"path": str(source), "sha256": SHA}, str(dest), src=str(source))
    try:
        os.getxattr(dest, pinned_file.XATTR)
    except OSError:
        pytest.skip("this file system keeps no user xattrs: every check hashes (still correct)")
    calls = []
    real = pinned_file._hash
    monkeypatch.setattr(pinned_file, "_hash", lambda *a: calls.append(1) or real(*a))
    assert pinned_file.holds(dest, SHA) and calls == []
    # Same size, other bytes, new mtime: the stamp no longer matches, so it is read again.
    dest.write_bytes(BODY.replace(b"pinned", b"PINNED"))
    assert not pinned_file.holds(dest, SHA) and calls == [1]


def test_check_mode_writes_nothing(source, tmp_path, server):
    dest = tmp_path / "new" / "bundle.tar"
    for file in ({"path": str(source), "sha256": SHA}, {"url": f"{server}/file", "sha256": SHA}):
        assert ensure(file, str(dest), check_mode=True)["changed"] is True
    assert not dest.parent.exists()


def test_a_download_lands_checked(server, tmp_path):
    dest = tmp_path / "dl" / "file"
    assert ensure({"url": f"{server}/file", "sha256": SHA}, str(dest))["changed"]
    assert dest.read_bytes() == BODY
    assert ensure({"url": f"{server}/file", "sha256": SHA}, str(dest))["changed"] is False


@pytest.mark.parametrize(
    ("path", "sha", "error"),
    [
        ("/file", "1" * 64, r"/file: sha256 [0-9a-f]{64} did not match the pinned 1{64}; .* was not changed"),
        ("/missing", SHA, r"/missing: the server answered 404 .*; .* was not changed"),
    ],
)
def test_a_bad_download_is_refused_by_url(server, tmp_path, path, sha, error):
    dest = tmp_path / "file"
    with pytest.raises(PinnedFileError, match=error):
        ensure({"url": f"{server}{path}", "sha256": sha}, str(dest))
    assert list(tmp_path.iterdir()) == []


def test_credentials_in_the_url_go_as_a_header_and_never_into_a_message(server, tmp_path):
    """A private mirror's token in the URL: sent as Basic auth, shown as *** in every error,
    masked by the module wherever Ansible prints its result."""
    token_url = server.replace("http://", "http://mirror:s3cret-t0ken@")
    dest = tmp_path / "dl" / "file"
    assert ensure({"url": f"{token_url}/file", "sha256": SHA}, str(dest))["changed"]
    assert AUTHORIZATIONS[-1] == "Basic " + base64.b64encode(b"mirror:s3cret-t0ken").decode()
    with pytest.raises(PinnedFileError) as e:
        ensure({"url": f"{token_url}/missing", "sha256": SHA}, str(tmp_path / "x"))
    assert "s3cret-t0ken" not in str(e.value) and str(e.value).startswith("http://***@127.0.0.1:")
    task = run_module(
        "arcops_pinned_file",
        json.dumps({"file": {"url": f"{token_url}/missing", "sha256": SHA}, "dest": str(tmp_path / "y")}),
    )
    assert task["failed"] and "s3cret-t0ken" not in json.dumps(task)


def test_an_unreachable_server_is_a_clear_error(tmp_path):
    with pytest.raises(PinnedFileError, match=r"^http://127.0.0.1:9/x: download failed \("):
        ensure({"url": "http://127.0.0.1:9/x", "sha256": SHA}, str(tmp_path / "x"), timeout=5)


@pytest.mark.parametrize(
    ("file", "dest", "mode", "error"),
    [
        ({"sha256": SHA}, "/x", "0644", "file: give {path, sha256} or {url, sha256}"),
        ({"path": "a", "url": "http://x", "sha256": SHA}, "/x", "0644", "file: give {path"),
        ({"path": "a", "sha256": "ABC"}, "/x", "0644", "file: sha256 must be 64 lowercase hex digits"),
        ({"url": "ftp://x/y", "sha256": SHA}, "/x", "0644", "file: 'ftp://x/y' is not an http"),
        ({"path": "a", "sha256": SHA}, "rel/x", "0644", "dest: 'rel/x' is not an absolute file path"),
        ({"path": "a", "sha256": SHA}, "/x/", "0644", "dest: '/x/' is not an absolute file path"),
        ({"path": "a", "sha256": SHA}, "/x", "rw", "mode: 'rw' is not an octal file mode"),
    ],
)
def test_bad_arguments_are_named(file, dest, mode, error):
    with pytest.raises(PinnedFileError, match="^" + error.replace("{", r"\{").replace("}", r"\}")):
        ensure(file, dest, mode)


def test_a_folder_at_dest_is_refused(source, tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(PinnedFileError, match="is a folder"):
        ensure({"path": str(source), "sha256": SHA}, str(tmp_path / "d"), src=str(source))


@settings(max_examples=200, deadline=None)
@given(
    file=st.one_of(
        st.none(), st.text(), st.dictionaries(st.sampled_from(["path", "url", "sha256", "x"]), st.text())
    ),
    dest=st.one_of(st.none(), st.integers(), st.text()),
    mode=st.one_of(st.integers(), st.text()),
)
def test_any_arguments_are_checked_or_refused_by_name(file, dest, mode):
    try:
        pinned_file.check_args(file, dest, mode)
    except PinnedFileError as e:
        assert str(e).split(":")[0] in {"file", "dest", "mode"}


@needs_ansible
def test_the_action_plugin_copies_only_when_the_box_lacks_the_file(source, tmp_path):
    dest = tmp_path / "box" / "bundle.tar"
    args = json.dumps({"file": {"path": str(source), "sha256": SHA}, "dest": str(dest), "mode": "0600"})
    dry = run_module("arcops_pinned_file", args, check=True)
    assert dry["changed"] is True and not dest.parent.exists()
    first = run_module("arcops_pinned_file", args)
    assert first["changed"] is True and dest.read_bytes() == BODY
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    again = run_module("arcops_pinned_file", args)
    assert again["changed"] is False and "needs_copy" not in again
    wrong = run_module("arcops_pinned_file", args.replace(SHA, "2" * 64))
    assert wrong["failed"] and wrong["msg"].endswith(
        f"did not match the pinned {'2' * 64}; {dest} was not changed"
    )
    gone = run_module("arcops_pinned_file", args.replace(str(source), str(tmp_path / "nope")))
    assert gone["failed"] and gone["msg"] == f"{tmp_path / 'nope'}: no such file on the control node"
    extra = run_module("arcops_pinned_file", json.dumps({**json.loads(args), "src": "/etc/passwd"}))
    assert extra["failed"] and extra["msg"] == "src: not an option of arcops_pinned_file"
