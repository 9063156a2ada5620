"""Bad input by class, for every command: each value every command takes (options and
positionals, read from the parser itself, so a new command or option is fed too) gets every
class of hostile argument: text (empty, line breaks, escape codes, 70 kB, bytes that are not
UTF-8 as Python hands them over), paths (devices, /proc/self/mem, a FIFO, a folder, files that
are not UTF-8, JSON cut short, of the wrong shape or nested past any limit) and numbers (NaN,
infinities, negatives, past every range, other scripts' digits). The other required values are
plain. Each case ends with exit 0 ("answered") or a non-zero exit and one line on stderr
("refused"); never a traceback, a hang, or a change in the case's folder but the output named.

Each case runs in this process, with its own folder as the working directory and an alarm
against hangs. The tally is
docs/testing.md's."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import traceback
from collections import Counter
from pathlib import Path

from arcops import cli
from arcops.cli import common
from arcops.cli.common import flat
from hypothesis import given
from hypothesis import strategies as st

from .helpers.folder_state import snapshot
from .helpers.fuzz import FUZZ
from .helpers.time_limit import Hang, within

REPO = Path(__file__).resolve().parents[1]

FILES = {
    "bad.bin": b"\xff\xfe\x00garbage",
    "list.json": b"[]",
    "cut.json": b'{"format": 1, "boxes": [{"name": "a", "ok": tr',
    "deep.json": b"[" * 50_000,
    "empty": b"",
}
# "\udcff\udcfe" is how Python hands a program argv bytes that are not UTF-8 (surrogateescape).
CLASSES = {
    "text": ["", "line\nbreak", "\x1b[31m", "x" * 70_000, "\u202etxt", "\udcff\udcfe", "-"],
    "path": [
        "/dev/zero",
        "/proc/self/mem",
        "{tmp}/fifo",
        "{tmp}",
        "/",
        "{tmp}/nowhere/deeper",
        *(f"{{tmp}}/{name}" for name in FILES),
    ],
    "number": ["nan", "-inf", "-1", "0", "1e400", "1" + "0" * 400, "0x10", "\u0661\u0662", "1_0"],
}
# Plain values for what a case does not make hostile: enough for the command to reach the value
# under test, and to end quickly (nothing listens on port 9; /bin/true is no llama.cpp tool).
PLAIN = {
    "url": "http://127.0.0.1:9",
    "model": "m",
    "release": "6.1.0-1-amd64",
    "llama_bench": "/bin/true",
    "llama_server": "/bin/true",
    "output": "{tmp}/out",
    "spec": "{tmp}/spec.json",
}
PLAIN_BY_COMMAND = {("llama bench", "model"): "{tmp}/empty", ("llama same-output", "model"): "{tmp}/empty"}
# Options given to a command that otherwise runs until a signal (a watch), unless under test.
ENDING = {("llama health-watch", "looks"): "1", ("llama health-watch", "interval"): "0.01"}
SECONDS = 20
MAX_PROBLEMS = 10  # lines of a refusal that lists every problem (vllm render, fleet check)


def _values(command: argparse.ArgumentParser) -> list[argparse.Action]:
    """The actions that take a value (not flags, not --help)."""
    return [a for a in command._actions if a.nargs != 0 and not isinstance(a, argparse._HelpAction)]


def _argv(path: str, command: argparse.ArgumentParser, hostile: argparse.Action, value: str) -> list[str]:
    argv = path.split()
    for action in _values(command):
        if action is hostile:
            given = value
        elif action.required or not action.option_strings:
            given = PLAIN_BY_COMMAND.get((path, action.dest), PLAIN.get(action.dest, "{tmp}/plain"))
        elif (path, action.dest) in ENDING:
            given = ENDING[(path, action.dest)]
        else:
            continue
        if not action.option_strings:
            argv.append(given)
        elif action.option_strings[-1].startswith("--"):
            argv.append(f"{action.option_strings[-1]}={given}")
        else:  # a short option alone (-e): its value joined to it
            argv.append(action.option_strings[0] + given)
    return argv


def _cases():
    for path, command in cli.leaves(cli.build_parser()):
        for action in _values(command):
            for kind, values in CLASSES.items():
                for value in values:
                    yield path, command, action, kind, value


def _run(argv: list[str], folder: Path) -> tuple[int, str]:
    """(exit code, stderr) of `arcops ARGV` in this process, cwd FOLDER/cwd (the parser and
    helpers are loaded once: ~2,700 cases in a minute). Exit 98: it did not end within SECONDS;
    99: a traceback escaped (stderr holds it)."""
    err = io.StringIO()
    try:
        with (
            within(SECONDS),
            contextlib.chdir(folder / "cwd"),
            contextlib.redirect_stderr(err),
            contextlib.redirect_stdout(io.StringIO()),
        ):
            try:
                code = cli.main(argv)
            except SystemExit as e:  # argparse's usage errors
                code = e.code if isinstance(e.code, int) else 2
    except Hang:
        code = 98
    except Exception:
        err.write(traceback.format_exc())
        code = 99
    return code, err.getvalue().strip()


def _named(changed: str, argv: list[str], folder: Path, before: dict) -> bool:
    """Whether CHANGED (relative to FOLDER) lies in an output ARGV named (relative names resolve
    in the case's working folder). Naming the case's folder itself allows new entries only."""
    for word in argv[2:]:
        given = Path(word.split("=", 1)[-1] if word.startswith("--") else word)
        named = given if given.is_absolute() else folder / "cwd" / given
        try:
            inside = named.relative_to(folder).as_posix()
        except ValueError:
            continue
        if inside == "." and changed not in before:
            return True
        if changed == inside or changed.startswith(inside + "/") or inside.startswith(changed + "/"):
            return True
    return False


def _one(path, command, action, value: str, folder: Path) -> str:
    for name, data in FILES.items():
        (folder / name).write_bytes(data)
    (folder / "spec.json").write_text("{}")
    (folder / "plain").mkdir()
    (folder / "cwd").mkdir()
    os.mkfifo(folder / "fifo")
    argv = [a.replace("{tmp}", str(folder)) for a in _argv(path, command, action, value)]
    before = snapshot(folder)
    code, err = _run(argv, folder)
    assert code != 98, f"no end within {SECONDS} s"
    assert code != 99 and "Traceback" not in err, err[-2000:]
    after = snapshot(folder)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert all(_named(k, argv, folder, before) for k in changed), f"changed {sorted(changed)}"
    lines = err.splitlines()
    if code == 0 or not lines:  # a result, or a verdict (boot-entry's "not bootable" is exit 1)
        return "answered"
    # The refusal's first line names the command; only the command's own progress ("... ...") may
    # come before it. A command that finds several problems says each on a line of its own.
    said = [line for line in lines if not line.endswith(" ...")]
    assert said and said[0].startswith("arcops") and len(said) <= MAX_PROBLEMS, f"exit {code}: {err[:600]}"
    assert all(line.isprintable() for line in lines), f"exit {code}, control characters: {err[:600]}"
    return "refused"


def test_every_class_of_bad_argument_is_answered_or_refused_and_docs_state_the_tally(tmp_path, monkeypatch):
    """Every case once: those that end otherwise are listed together, then the tally is checked."""
    parser = cli.build_parser()  # built once (10 ms a build): parsing leaves it as it was
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    ended, by_class, broken = Counter(), Counter(), []
    commands = set()
    for k, (path, command, action, kind, value) in enumerate(_cases()):
        folder = tmp_path / str(k)
        folder.mkdir()
        commands.add(path)
        name = action.option_strings[-1] if action.option_strings else action.dest
        try:
            outcome = _one(path, command, action, value, folder)
        except AssertionError as e:
            broken.append(f"arcops {path} {name} {kind} {value[:20]!r}: {str(e)[:400]}")
            continue
        ended[outcome] += 1
        by_class[kind] += 1
    assert not broken, f"{len(broken)} case(s) ended badly:\n" + "\n".join(broken)
    stated = (
        f"commands: {len(commands)} commands, {sum(ended.values())} cases "
        f"({by_class['text']} text, {by_class['path']} paths, {by_class['number']} numbers), "
        f"{ended['refused']} refused, {ended['answered']} answered"
    )
    assert stated in (REPO / "docs" / "testing.md").read_text(), f"docs/testing.md should say: {stated}"


@FUZZ
@given(st.text())
def test_any_text_is_a_whole_number_or_a_number_in_ascii_or_refused(text):
    for parse, kind in ((common.whole, int), (common.number, float)):
        try:
            value = parse(text)
        except argparse.ArgumentTypeError as e:
            assert flat(str(e)) == str(e)  # its message is one line
            continue
        assert isinstance(value, kind) and text.isascii() and "_" not in text and text.strip() == text


@FUZZ
@given(st.text())
def test_any_text_said_as_an_error_is_one_printable_line(text):
    said = flat(f"arcops: {text}")
    assert said.isprintable() and "\n" not in said
