"""runparts_split finds a multi-directory run-parts call however a script starts it: behind prefix
commands (rewritten, then run under dash with Debian's one-directory run-parts), as shell text
(refused, naming the line and the way it is run), or not at all (left alone). The forms come
from shell_commands.RUNNERS, so a runner added there without a case here fails a test."""

from __future__ import annotations

import shutil

import pytest
from arcops.kernel.runparts_split import rewrite
from arcops.kernel.shell_commands import RUNNERS, SHELLS, resolve
from arcops.kernel.shellscan import ShellSyntaxError

from .helpers.maintscripts import hook, run_dash

# Prefixes a loop can keep on each call: each is run for real below.
REWRITTEN = [
    "command",
    "command -p",
    "env FOO=1",
    "env -u HOME FOO=1",
    "/usr/bin/env -i PATH=/usr/bin:/bin",
    "nice -n 5",
    "nice -5",
    "nice --adjustment=5",
    "nohup",
    "timeout 30",
    "timeout -s KILL -k 5 30",
    "timeout --preserve-status --signal=TERM 30s",
    "ionice -c 3",
    "ionice -c2 -n7",
    "setsid",
    "setsid -w",
    "stdbuf -oL",
    "stdbuf -o L -e 0",
    "flock LOCK",
    "flock -w 5 LOCK",
    "flock --timeout=5 LOCK",
    "busybox",
    "nice -n 5 timeout 30 env FOO=1",
    "time",
    "runuser -u root --",
    "taskset 1",
    "taskset -c 0",
    "chrt -o 0",
]
# The same, for runners this machine does not have (the rewrite's text only: nothing runs them).
REWRITTEN_NOT_RUN = ["sudo -u root", "sudo -E VAR=1", "doas -u root", "fakeroot", "fakeroot -l /x.so"]
# Spellings of run-parts itself.
NAMES = ["run-parts", "'run-parts'", '"run-parts"', "r\\un-parts", "/usr/bin/run-parts", "/bin/run-parts"]


@pytest.fixture
def hooks(tmp_path):
    log = tmp_path / "hooks.log"
    hook(tmp_path / "etc" / "postinst.d", "first", log)
    hook(tmp_path / "share" / "postinst.d", "second", log)
    return tmp_path / "etc" / "postinst.d", tmp_path / "share" / "postinst.d", log


@pytest.mark.parametrize("prefix", REWRITTEN)
def test_a_call_behind_a_prefix_is_rewritten_and_runs_both_directories(prefix, hooks, tmp_path):
    first = prefix.split()[0]
    if first not in ("command", "time") and not shutil.which(first):
        pytest.fail(f"{first} is missing: scripts/bootstrap installs it")
    etc, share, log = hooks
    prefix = prefix.replace("LOCK", str(tmp_path / "lock"))
    text = f"#!/bin/sh\nset -e\n{prefix} run-parts --arg=x {etc} {share}\necho after\n"
    new, changes = rewrite(text)
    assert [c.line for c in changes] == [3]
    assert f'{prefix} run-parts --arg=x -- "$arcops_dir"' in new
    proc = run_dash(new, tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "after\n"), proc.stderr
    assert log.read_text().splitlines() == ["etc/first x", "share/second x"]


@pytest.mark.parametrize("prefix", REWRITTEN_NOT_RUN)
def test_a_call_behind_a_runner_absent_here_keeps_the_runner_on_each_call(prefix):
    new, changes = rewrite(f"#!/bin/sh\n{prefix} run-parts /a /b\n")
    assert len(changes) == 1
    assert (
        f'for arcops_dir in /a /b; do if [ -d "$arcops_dir" ]; then {prefix} run-parts -- "$arcops_dir"'
        in new
    )


@pytest.mark.parametrize("name", NAMES)
def test_every_spelling_of_run_parts_is_found(name, hooks, tmp_path):
    etc, share, log = hooks
    new, changes = rewrite(f"#!/bin/sh\n{name} {etc} {share}\n")
    assert len(changes) == 1
    assert run_dash(new, tmp_path).returncode == 0
    assert log.read_text().splitlines() == ["etc/first", "share/second"]


def test_exec_becomes_the_loop_then_exit_with_its_status(hooks, tmp_path):
    etc, share, log = hooks
    hook(etc, "fails", log, status=4)
    new, _ = rewrite(f"#!/bin/sh\nexec run-parts {etc} {share}\necho never\n")
    proc = run_dash(new, tmp_path)
    assert proc.returncode != 0 and "never" not in proc.stdout
    assert log.read_text().splitlines() == ["etc/fails", "etc/first", "share/second"]


def test_a_call_inside_a_command_substitution_is_rewritten_in_place(hooks, tmp_path):
    etc, share, _ = hooks
    text = f'#!/bin/sh\nset -e\nx="$(echo "$(run-parts --list {etc} {share})")"\necho "$x"\n'
    new, changes = rewrite(text)
    assert len(changes) == 1
    proc = run_dash(new, tmp_path)
    assert proc.stdout.splitlines() == [f"{etc}/first", f"{share}/second"]


def test_a_call_after_a_nested_substitution_is_rewritten_not_taken_for_a_string(hooks, tmp_path):
    etc, share, _ = hooks
    text = f'#!/bin/sh\nx="$(echo $(true); run-parts --list {etc} {share})"\necho "$x"\n'
    new, changes = rewrite(text)
    assert len(changes) == 1
    assert run_dash(new, tmp_path).stdout.split() == [f"{etc}/first", f"{share}/second"]


def test_a_case_pattern_inside_a_substitution_does_not_end_it(hooks, tmp_path):
    etc, share, log = hooks
    text = f'#!/bin/sh\nx=$(case "$1" in configure) run-parts {etc} {share} ;; esac)\n'
    new, changes = rewrite(text)
    assert len(changes) == 1
    assert run_dash(new, tmp_path, "configure").returncode == 0
    assert log.read_text().splitlines() == ["etc/first", "share/second"]


def test_quoted_positional_parameters_are_many_directories(hooks, tmp_path):
    etc, share, log = hooks
    new, changes = rewrite('#!/bin/sh\nrun-parts "$@"\n')
    assert len(changes) == 1
    assert run_dash(new, tmp_path, str(etc), str(share)).returncode == 0
    assert log.read_text().splitlines() == ["etc/first", "share/second"]


REFUSED = [
    # shell text: eval, shells by any path and option cluster, su/runuser/flock -c, env -S
    ("eval 'run-parts /a /b'", "inside eval"),
    ("eval run-parts /a /b", "inside eval"),
    ("command eval 'run-parts /a /b'", "inside eval"),
    ('builtin eval "run-parts /a /b"', "inside eval"),
    ("sh -c 'run-parts /a /b'", "inside sh"),
    ("/usr/local/bin/bash -ec 'run-parts /a /b'", "inside /usr/local/bin/bash"),
    ("dash -e -u -c 'run-parts /a /b' name", "inside dash"),
    ("bash -o pipefail -c 'run-parts /a /b'", "inside bash"),
    ("bash --norc -xc 'run-parts /a /b'", "inside bash"),
    ("busybox sh -c 'run-parts /a /b'", "inside sh"),
    ("env sh -c 'run-parts /a /b'", "inside sh"),
    ("nice -n 5 timeout 10 sh -c 'run-parts /a /b'", "inside sh"),
    ("su -c 'run-parts /a /b' root", "inside su"),
    ("su root -c 'run-parts /a /b'", "inside su"),
    ("su - root --command='run-parts /a /b'", "inside su"),
    ("runuser -l nobody -c 'run-parts /a /b'", "inside runuser"),
    ("flock /run/lock -c 'run-parts /a /b'", "inside flock"),
    ("flock -w 5 -c 'run-parts /a /b' /run/lock", "inside flock"),
    ("env -S 'run-parts /a /b'", "inside env"),
    ("watch -n 5 run-parts /a /b", "inside watch"),
    ("xargs sh -c 'run-parts \"$@\"' x", "inside sh"),
    # a loop cannot stand in: the reason is named
    ("exec -a hooks run-parts /a /b", "exec with options"),
    ("chroot /target run-parts /a /b", "looked up inside the new root"),
    ("xargs run-parts", "operands read from its input"),
    ("xargs -n 1 run-parts /a", "operands read from its input"),
    ("sudo -s run-parts /a /b", "sudo -s runs it through a shell"),
    # run-parts in text that may run later, or an argument of a command not in the table
    ("x='run-parts /a /b'", "inside a quoted string"),
    ('hooks="run-parts /a /b"; $hooks', "inside a quoted string"),
    ("x=`run-parts /a /b`", "inside `...`"),
    ("find /etc/kernel -name '*.d' -exec run-parts {} +", "argument of find"),
    ("strace -f run-parts /a /b", "argument of strace"),
    ("echo 'run-parts /a /b' | sh", "a shell reads its commands from its input"),
    ("printf '%s\\n' run-parts | sh", "a shell reads its commands from its input"),
    ('alias hooks="run-parts /a /b"', "inside a quoted string"),
    ("run-parts /a $(run-parts --list /b /c)", "inside the arguments of another run-parts call"),
]


@pytest.mark.parametrize(("line", "reason"), REFUSED)
def test_a_call_that_cannot_take_the_loop_form_is_refused_with_line_and_reason(line, reason):
    with pytest.raises(ShellSyntaxError, match=r"^line 3: ") as caught:
        rewrite(f"#!/bin/sh\nset -e\n{line}\n")
    assert reason in str(caught.value) and "\n" not in str(caught.value)


LEFT_ALONE = [
    "command -v run-parts >/dev/null",
    "command -V run-parts",
    "echo run-parts /a /b",
    "echo 'run-parts /a /b'",
    "ionice -p 1",
    "chrt -p 1",
    "sudo -l",
    "nice -n 5 run-parts /a",
    "timeout 30 run-parts --arg=x /etc/kernel/postinst.d",
    "sh -c 'run-parts /a'",
    "eval 'echo run-parts'",
    "sh /usr/share/x/hook.sh /a /b",
    "x=/etc/run-parts.d",
]


@pytest.mark.parametrize("line", LEFT_ALONE)
def test_nothing_to_split_is_left_alone(line):
    text = f"#!/bin/sh\n{line}\n"
    assert rewrite(text) == (text, [])


def test_every_runner_and_shell_has_a_case():
    """Each command the table knows appears in a case above, so a new one comes with its test."""
    cases = " ".join(REWRITTEN + REWRITTEN_NOT_RUN + [line for line, _unused in REFUSED] + LEFT_ALONE)
    words = {w.rsplit("/", 1)[-1] for w in cases.replace("'", " ").split()}
    missing = sorted((set(RUNNERS) | {"sh", "bash", "dash"}) - words)
    assert not missing, f"no case for {missing}"
    assert {"sh", "bash", "dash"} <= SHELLS


@pytest.mark.parametrize(
    ("words", "at", "script"),
    [
        (["timeout", "-k", "5", "10", "run-parts"], 4, []),
        (["env", "-i", "A=1", "B=2", "run-parts"], 4, []),
        (["sh", "-e", "-c", "text", "name"], None, [3]),
        (["su", "-", "root", "-c", "text"], None, [4]),
        (["flock", "/l", "-c", "text"], None, [3]),
        (["command", "-v", "run-parts"], None, []),
    ],
)
def test_resolve_follows_options_operands_and_shell_text(words, at, script):
    found = resolve(words)
    assert (found.at, found.script) == (at, script)
