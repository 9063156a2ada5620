"""runparts_split: the rewritten scripts run under dash with Debian 12's real run-parts (one directory
only, like noble's), so every test proves behaviour, not text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from arcops.kernel.runparts_split import rewrite
from arcops.kernel.shellscan import ShellSyntaxError

from .helpers.maintscripts import hook as _hook
from .helpers.maintscripts import run_dash as _run

SCRIPTS = Path(__file__).parent / "fixtures" / "maintscripts"


@pytest.fixture
def roots(tmp_path):
    """Two hook roots standing in for /etc/kernel and /usr/share/kernel, and a log of hook runs."""
    etc, share, log = tmp_path / "etc", tmp_path / "share", tmp_path / "hooks.log"
    return etc, share, log


def _relocate(text: str, etc: Path, share: Path, tmp_path: Path) -> str:
    return (
        text.replace("/etc/kernel", str(etc))
        .replace("/usr/share/kernel", str(share))
        .replace("/usr/lib/linux/triggers", str(tmp_path / "triggers"))
    )


def _stub_path(tmp_path: Path) -> dict:
    """depmod and dpkg-trigger stubs (the scripts call them; they are not under test)."""
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    for tool in ("depmod", "dpkg-trigger", "linux-update-symlinks"):
        (stubs / tool).write_text("#!/bin/sh\nexit 0\n")
        (stubs / tool).chmod(0o755)
    return {"PATH": f"{stubs}:{os.environ['PATH']}"}


# Written by the kernel's own `make bindeb-pkg` (linux-source-7.2, tests/helpers/kernel_debs.py).
BINDEB = (SCRIPTS / "bindeb-pkg-7.2.postinst").read_text()


def test_unchanged_script_fails_with_noble_run_parts(roots, tmp_path):
    etc, share, log = roots
    _hook(etc / "postinst.d", "a", log)
    _hook(share / "postinst.d", "b", log)
    proc = _run(_relocate(BINDEB, etc, share, tmp_path), tmp_path, "configure")
    assert proc.returncode != 0
    assert "run-parts: missing operand" in proc.stderr


def test_bindeb_loop_form_runs_hooks_from_both_directories_in_order(roots, tmp_path):
    etc, share, log = roots
    _hook(etc / "postinst.d", "zz-first", log)
    _hook(share / "postinst.d", "aa-second", log)
    new, changes = rewrite(_relocate(BINDEB, etc, share, tmp_path))
    assert len(changes) == 1 and changes[0].line == 19 and not changes[0].in_heredoc
    proc = _run(new, tmp_path, "configure")
    assert proc.returncode == 0, proc.stderr
    release, image = "7.2.12-arcops-tiny", "/boot/vmlinuz-7.2.12-arcops-tiny"
    assert log.read_text().splitlines() == [
        f"etc/zz-first {release} {image}",
        f"share/aa-second {release} {image}",
    ]


def test_missing_directory_is_skipped_and_none_is_fine(roots, tmp_path):
    etc, share, log = roots
    text = "#!/bin/sh\nset -e\nrun-parts --arg=x /etc/kernel/postinst.d /usr/share/kernel/postinst.d\n"
    text += "echo after\n"
    new, _ = rewrite(_relocate(text, etc, share, tmp_path))
    proc = _run(new, tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "after\n")
    _hook(share / "postinst.d", "only", log)
    proc = _run(new, tmp_path)
    assert proc.returncode == 0 and log.read_text() == "share/only x\n"


def test_failing_hook_still_stops_the_script_under_set_e(roots, tmp_path):
    etc, share, log = roots
    _hook(etc / "postinst.d", "fails", log, status=3)
    _hook(share / "postinst.d", "runs", log)
    text = "#!/bin/sh\nset -e\nrun-parts /etc/kernel/postinst.d /usr/share/kernel/postinst.d\necho reached\n"
    new, _ = rewrite(_relocate(text, etc, share, tmp_path))
    proc = _run(new, tmp_path)
    assert proc.returncode != 0 and "reached" not in proc.stdout
    # Without --exit-on-error run-parts goes on, so the other directory's hooks still ran.
    assert log.read_text().splitlines() == ["etc/fails", "share/runs"]


def test_exit_on_error_stops_before_the_next_directory(roots, tmp_path):
    etc, share, log = roots
    _hook(etc / "postinst.d", "fails", log, status=3)
    _hook(share / "postinst.d", "never", log)
    text = (
        "#!/bin/sh\nset -e\nrun-parts --exit-on-error /etc/kernel/postinst.d /usr/share/kernel/postinst.d\n"
    )
    new, _ = rewrite(_relocate(text, etc, share, tmp_path))
    proc = _run(new, tmp_path)
    assert proc.returncode != 0
    assert log.read_text().splitlines() == ["etc/fails"]


def test_failure_in_a_condition_does_not_exit(roots, tmp_path):
    etc, share, log = roots
    _hook(etc / "postinst.d", "fails", log, status=1)
    text = (
        "#!/bin/sh\nset -e\nif run-parts /etc/kernel/postinst.d /usr/share/kernel/postinst.d; then echo ok;"
        " else echo failed; fi\n"
        "run-parts /etc/kernel/postinst.d /usr/share/kernel/postinst.d || echo tolerated\n"
    )
    new, changes = rewrite(_relocate(text, etc, share, tmp_path))
    assert len(changes) == 2
    proc = _run(new, tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "failed\ntolerated\n")


def test_ubuntu_if_form_keeps_environment_prefix_and_args(roots, tmp_path):
    etc, share, log = roots
    (share / "postrm.d").mkdir(parents=True)
    hook = share / "postrm.d" / "env"
    hook.write_text(f'#!/bin/sh\necho "$DEB_MAINT_PARAMS|$1|$2" >> {log}\n')
    hook.chmod(0o755)
    text = (SCRIPTS / "ubuntu-mainline.postrm").read_text()
    new, changes = rewrite(_relocate(text, etc, share, tmp_path))
    assert [c.line for c in changes] == [10]
    proc = _run(new, tmp_path, "remove", env=_stub_path(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert log.read_text() == "remove|7.2.0-070200-generic|/boot/vmlinuz-7.2.0-070200-generic\n"


def test_trigger_file_form_writes_a_working_trigger(roots, tmp_path):
    etc, share, log = roots
    _hook(etc / "postinst.d", "initramfs", log)
    _hook(share / "postinst.d", "zz-grub", log)
    text = (SCRIPTS / "ubuntu-mainline.postinst").read_text()
    new, changes = rewrite(_relocate(text, etc, share, tmp_path))
    assert len(changes) == 1 and changes[0].in_heredoc and changes[0].line == 25
    env = _stub_path(tmp_path)
    proc = _run(new, tmp_path, "configure", env=env)
    assert proc.returncode == 0, proc.stderr
    trigger = tmp_path / "triggers" / "7.2.0-070200-generic"
    # Written at configure time with our own variables kept for run time.
    assert '"$arcops_dir"' in trigger.read_text() and "configure" in trigger.read_text()
    proc = _run(new, tmp_path, "triggered", env=env)
    assert proc.returncode == 0, proc.stderr
    assert log.read_text().splitlines() == [
        "etc/initramfs 7.2.0-070200-generic /boot/vmlinuz-7.2.0-070200-generic",
        "share/zz-grub 7.2.0-070200-generic /boot/vmlinuz-7.2.0-070200-generic",
    ]
    assert not trigger.exists()


@pytest.mark.parametrize("name", ["debian-6.1-cloud.postinst", "debian-6.1-cloud.postrm"])
def test_one_directory_scripts_are_left_alone(name):
    text = (SCRIPTS / name).read_text()
    assert rewrite(text) == (text, [])


@pytest.mark.parametrize(
    "line",
    [
        'run-parts "$dir"',  # one quoted operand: one directory
        "echo run-parts /a /b",  # not a command word
        "# run-parts /a /b",  # a comment
        "command -v run-parts >/dev/null",
    ],
)
def test_no_change_where_no_call_has_several_directories(line):
    text = f"#!/bin/sh\n{line}\n"
    assert rewrite(text) == (text, [])


def test_options_after_operands_separate_values_and_redirections(roots, tmp_path):
    etc, share, log = roots
    _hook(etc / "d", "a", log)
    _hook(share / "d", "b", log)
    text = "#!/bin/sh\nset -e\nrun-parts /etc/kernel/d --arg one -a two /usr/share/kernel/d >/dev/null 2>&1\n"
    new, changes = rewrite(_relocate(text, etc, share, tmp_path))
    assert "--arg one -a two --" in changes[0].after and changes[0].after.endswith(
        ">/dev/null 2>&1 || { arcops_rc=$?; }; fi; done; (exit $arcops_rc); }"
    )
    assert _run(new, tmp_path).returncode == 0
    assert log.read_text().splitlines() == ["etc/a one two", "share/b one two"]


def test_quoted_heredoc_keeps_dollars_live(roots, tmp_path):
    text = "#!/bin/sh\ncat >t <<'EOF'\nrun-parts /a /b\nEOF\n"
    _, changes = rewrite(text)
    assert '"$arcops_dir"' in changes[0].after and "\\$" not in changes[0].after


def test_unbalanced_script_is_a_clear_error():
    with pytest.raises(ShellSyntaxError, match="line 2: unterminated double quote"):
        rewrite('#!/bin/sh\necho "oops\nrun-parts /a /b\n')


def test_redirection_before_the_command_is_kept(roots, tmp_path):
    etc, share, log = roots
    _hook(etc / "d", "a", log)
    text = "#!/bin/sh\nset -e\n>/dev/null run-parts /etc/kernel/d /usr/share/kernel/d\n"
    new, changes = rewrite(_relocate(text, etc, share, tmp_path))
    assert len(changes) == 1 and '"$arcops_dir" >/dev/null' in changes[0].after
    assert _run(new, tmp_path).returncode == 0 and log.read_text() == "etc/a\n"


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("#!/bin/sh\nx=`run-parts /a /b`\n", r"line 2: run-parts with several directories inside `\.\.\.`"),
        ('#!/bin/sh\n\neval "run-parts /a /b"\n', "line 3: run-parts with several directories inside eval"),
        ("#!/bin/sh\nsh -c 'run-parts /a /b'\n", "line 2: run-parts with several directories inside sh"),
    ],
)
def test_run_parts_run_indirectly_is_refused_with_the_reason(script, message):
    with pytest.raises(ShellSyntaxError, match=message):
        rewrite(script)


@pytest.mark.parametrize(
    "line",
    [
        'x=$(run-parts --list "$dir")',  # one directory inside a substitution: fine as it is
        'cat <<<"$x" && run-parts /a',  # bash here-string
        "echo $'it\\'s' && run-parts /a",  # bash ANSI-C quote with an escaped quote
        'eval "echo run-parts"',
    ],
)
def test_valid_forms_with_one_directory_are_left_alone(line):
    text = f"#!/bin/bash\n{line}\n"
    assert rewrite(text) == (text, [])


def test_here_string_and_ansi_quote_do_not_hide_a_call_that_needs_splitting():
    _, changes = rewrite("#!/bin/bash\ncat <<<\"$x\"\necho $'a\\'b'\nrun-parts /a /b\n")
    assert [c.line for c in changes] == [4]


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("#!/bin/sh\nrun-parts /a /b <<", "line 2: here-document operator without a delimiter"),
        ("#!/bin/sh\nrun-parts /a /b <<EOF\n", "here-document 'EOF' is not closed"),
        ("#!/bin/sh\nrun-parts /a " + "$(" * 5000, "nested more than 100 deep"),
        ("#!/bin/sh\nrun-parts /a " + '"${' * 5000, "nested more than 100 deep"),
        ("#!/bin/sh\nrun-parts /a $'abc", r"unterminated \$'\.\.\.' quote"),
    ],
)
def test_broken_shell_is_a_one_line_error_not_a_crash(script, message):
    with pytest.raises(ShellSyntaxError, match=message) as caught:
        rewrite(script)
    assert "\n" not in str(caught.value)


def test_script_without_run_parts_is_not_even_lexed():
    text = "#!/bin/sh\necho 'never closed\n"  # no run-parts: nothing to find, nothing to refuse
    assert rewrite(text) == (text, [])


def test_cost_is_linear_in_the_script_length():
    """A benchmark's guard, by ratio (no wall-clock limit): 8x the script costs about 8x the
    time, where the quadratic line numbering this guards against (100k lines once took ~30 s)
    costs 64x. The sizes are timed in turn, best of five each, with the collector off, so a
    busy machine slows both alike."""
    import gc
    import time

    block = (
        'x=$(echo "a b" | tr a b)  # comment\n'
        'echo "line $HOME" >/dev/null && test -n "$x"\n'
        "run-parts --arg=1 /etc/kernel/postinst.d /usr/share/kernel/postinst.d\n"
    )
    sizes = (1000, 8000)
    texts = {n: "#!/bin/sh\n" + block * n for n in sizes}
    best = dict.fromkeys(sizes, float("inf"))
    gc.disable()
    try:
        for _ in range(5):
            for n in sizes:
                t = time.perf_counter()
                _, changes = rewrite(texts[n])
                best[n] = min(best[n], time.perf_counter() - t)
                assert len(changes) == n
    finally:
        gc.enable()
    ratio = best[8000] / best[1000]
    assert ratio < 8 * 3, f"8x the script took {ratio:.1f}x the time"


def test_nesting_costs_no_more_than_its_length():
    """Substitutions nested 80 deep cost about what 5 deep do at the same length (each is lexed
    once, in one pass); rescanning each level's text, as once, made 10 levels take 5 s. Timed by
    ratio, best of three, like the test above."""
    import gc
    import time

    def nested(depth: int) -> str:
        pad = "echo " + "x" * 200 + "; "
        text = pad + "run-parts /a"
        for _ in range(depth):
            text = f'echo "$({pad}{text})"'
        return "#!/bin/sh\n" + (text + "\n") * (60_000 // len(text) + 1)

    texts = {depth: nested(depth) for depth in (5, 45)}
    best = dict.fromkeys(texts, float("inf"))
    gc.disable()
    try:
        for _ in range(3):
            for depth, text in texts.items():
                t = time.perf_counter()
                assert rewrite(text) == (text, [])
                best[depth] = min(best[depth], (time.perf_counter() - t) / len(text))
    finally:
        gc.enable()
    assert best[45] / best[5] < 4, f"45 levels cost {best[45] / best[5]:.1f}x what 5 do, per byte"


@pytest.mark.parametrize(
    "body",
    [
        "exec -a x run-parts /a /b",  # refused at the top level, and inside a here-document too
        "x=`run-parts /a /b`",
        "eval 'run-parts /a /b'",
    ],
)
def test_a_refusal_inside_a_here_document_is_not_swallowed(body):
    with pytest.raises(ShellSyntaxError, match="here-document 'EOF': line 3: "):
        rewrite(f"#!/bin/sh\ncat >/t <<EOF\n{body}\nEOF\n")
