"""Rewrite run-parts calls that pass several directories into one call per directory.

noble's run-parts (debianutils 5.17) and Debian 12's (5.7) take exactly one directory;
newer kernel packaging passes two (/etc/kernel/X.d and /usr/share/kernel/X.d), so the
maintainer script dies with "run-parts: missing operand". A call is rewritten when it has
more than one directory operand, or one that can split into several at run time (an
unquoted $var, as in `make bindeb-pkg`'s `run-parts ... $hookdirs`). The replacement is a
brace group, so it fits wherever the call stood (`test -n "$x" && ...`, if-conditions,
here-documents that write a trigger script):

    { arcops_rc=0; for arcops_dir in A B; do if [ -d "$arcops_dir" ]; then
      VARS run-parts OPTS "$arcops_dir" REDIRS || { arcops_rc=$?; BREAK }; fi; done;
      (exit $arcops_rc); }

Per directory, in order, with the same options, --arg values, environment prefix and
redirections; missing directories are skipped. Status: that of the last failing call, so
under `set -e` a failing hook still stops the script; with --exit-on-error (-e is not an
option of run-parts) the remaining directories are not run, as run-parts itself stops.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .shellscan import Command, HereDoc, ShellSyntaxError, scan

RUN_PARTS = frozenset({"run-parts", "/bin/run-parts", "/usr/bin/run-parts"})
# Commands that run their arguments as a command: a run-parts behind them is not rewritten
# (exec would end the script, env/nice change its environment) but reported as an error.
_WRAPPERS = frozenset({"exec", "command", "env", "nice", "nohup", "time", "xargs", "sudo"})
# run-parts options that take the next word as their value when written without "=".
_TAKES_VALUE = frozenset({"-a", "--arg", "-u", "--umask", "--regex"})


@dataclass
class Change:
    line: int  # 1-based, in the original script
    before: str
    after: str
    in_heredoc: bool  # the call sits in a here-document (a trigger script written at run time)

    def as_dict(self) -> dict:
        return asdict(self)


def _unquoted_head(word: str) -> str:
    return word.lstrip("\"'")


def _split_args(cmd: Command) -> tuple[list[str], list[tuple[str, bool]], bool]:
    """(option words, [(operand, may split)], --exit-on-error given). getopt permutes, so
    options may follow operands; "--" ends the options."""
    options: list[str] = []
    operands: list[tuple[str, bool]] = []
    exit_on_error = False
    words = cmd.words[1:]
    k = 0
    options_done = False
    while k < len(words):
        w = words[k]
        head = _unquoted_head(w.text)
        if not options_done and head == "--":
            options_done = True
            options.append(w.text)
        elif not options_done and head.startswith("-"):
            options.append(w.text)
            exit_on_error = exit_on_error or head == "--exit-on-error"
            if head in _TAKES_VALUE and k + 1 < len(words):
                k += 1
                options.append(words[k].text)
        else:
            operands.append((w.text, w.splits))
        k += 1
    return options, operands, exit_on_error


def needs_split(cmd: Command) -> bool:
    if not cmd.words or cmd.words[0].text not in RUN_PARTS:
        return False
    _unused, operands, _unused = _split_args(cmd)
    return len(operands) > 1 or any(splits for _unused, splits in operands)


def _wrapped(cmd: Command) -> bool:
    """A run-parts with several directories run through exec/env/...: not rewritten blindly."""
    if not cmd.words or cmd.words[0].text not in _WRAPPERS:
        return False
    at = next((i for i, w in enumerate(cmd.words) if w.text in RUN_PARTS), None)
    return at is not None and needs_split(Command([], cmd.words[at:], [], cmd.start, cmd.end))


def _replacement(cmd: Command, live_dollar: bool) -> str:
    options, operands, exit_on_error = _split_args(cmd)
    d = "\\$" if live_dollar else "$"  # in an unquoted here-doc our own expansions must stay literal
    call = " ".join(
        [w.text for w in cmd.assignments]
        + [cmd.words[0].text]
        + [o for o in options if _unquoted_head(o) != "--"]
        + ["--", f'"{d}arcops_dir"']
        + cmd.redirects
    )
    on_fail = f"arcops_rc={d}?;" + (" break;" if exit_on_error else "")
    return (
        f"{{ arcops_rc=0; for arcops_dir in {' '.join(operand for operand, _unused in operands)}; do"
        f' if [ -d "{d}arcops_dir" ]; then {call} || {{ {on_fail} }}; fi; done;'
        f" (exit {d}arcops_rc); }}"
    )


class RewriteRefused(ShellSyntaxError):
    """The script parses, but a run-parts call in it cannot be rewritten safely."""


_SHELLS = frozenset({"sh", "bash", "dash", "/bin/sh", "/bin/bash", "/bin/dash", "/usr/bin/bash"})


def _unquote(word: str) -> str:
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"":
        return word[1:-1]
    return word


def _evaluated_text(cmd: Command) -> str | None:
    """The script an `eval ...` or `sh -c '...'` runs, as far as it is written out, else None."""
    words = [w.text for w in cmd.words]
    if words and words[0] == "eval":
        return " ".join(_unquote(w) for w in words[1:])
    if words and words[0] in _SHELLS and "-c" in words[1:-1]:
        return _unquote(words[words.index("-c") + 1])
    return None


def _refuse_hidden(text: str, what: str, line: int) -> None:
    """A script run indirectly (inside $(...), `...`, eval, sh -c) cannot be rewritten in place:
    refuse when it holds a run-parts call that needs splitting, or cannot be read."""
    if "run-parts" not in text:
        return
    try:
        _unused, changes = _rewrite(text, False, False, line - 1)
    except RewriteRefused:
        raise
    except ShellSyntaxError as e:
        raise RewriteRefused(f"line {line}: run-parts inside {what} that cannot be read ({e})") from e
    if changes:
        raise RewriteRefused(
            f"line {changes[0].line}: run-parts with several directories inside {what}; rewrite it by hand"
        )


def _rewrite(text: str, in_heredoc: bool, live_dollar: bool, line_offset: int) -> tuple[str, list[Change]]:
    found = scan(text, needle="run-parts")
    edits: list[tuple[int, int, str]] = []
    changes: list[Change] = []
    for sub in found.substitutions:
        inner = text[sub.start : sub.end]
        if sub.kind == "`":  # inside backquotes \\, \` and \$ stand for the character
            inner = inner.replace("\\\\", "\\").replace("\\`", "`").replace("\\$", "$")
        what = "$(...)" if sub.kind == "$(" else "`...`"
        _refuse_hidden(inner, what, found.lines.line(sub.start) + line_offset)
    for cmd in found.commands:
        if _wrapped(cmd):
            where, wrapper = cmd.line + line_offset, cmd.words[0].text
            raise RewriteRefused(f"line {where}: run-parts is run through {wrapper}; rewrite it by hand")
        evaluated = _evaluated_text(cmd)
        if evaluated is not None:
            _refuse_hidden(evaluated, cmd.words[0].text, cmd.line + line_offset)
        if not needs_split(cmd):
            continue
        if any(r.lstrip("0123456789").startswith("<<") for r in cmd.redirects):
            raise RewriteRefused(
                f"line {cmd.line + line_offset}: run-parts reads a here-document; rewrite it by hand"
            )
        new = _replacement(cmd, live_dollar)
        edits.append((cmd.start, cmd.end, new))
        changes.append(Change(cmd.line + line_offset, cmd.text(text), new, in_heredoc))
    for doc in found.heredocs:
        edits_in_doc, doc_changes = _rewrite_heredoc(
            text, doc, line_offset + found.lines.line(doc.body_start) - 1
        )
        edits += edits_in_doc
        changes += doc_changes
    pieces, at = [], 0
    for start, end, new in sorted(edits):
        pieces += [text[at:start], new]
        at = end
    changes.sort(key=lambda c: c.line)
    return "".join([*pieces, text[at:]]), changes


def _rewrite_heredoc(text: str, doc: HereDoc, offset: int) -> tuple[list[tuple[int, int, str]], list[Change]]:
    body = text[doc.body_start : doc.body_end]
    if "run-parts" not in body:  # not a script we need to read (it may not be shell at all)
        return [], []
    try:
        new_body, changes = _rewrite(body, True, doc.expands, offset)
    except RewriteRefused as e:
        raise RewriteRefused(f"here-document '{doc.delimiter}': {e}") from e
    except ShellSyntaxError as e:
        # A body that is not shell (a message, a config file) may still mention run-parts: it is
        # refused only when a line of it reads as a run-parts call that needs splitting.
        if any("run-parts" in line and _line_needs_split(line) for line in body.splitlines()):
            raise ShellSyntaxError(f"here-document '{doc.delimiter}': {e}") from e
        return [], []
    if not changes:
        return [], []
    return [(doc.body_start, doc.body_end, new_body)], changes


def _line_needs_split(line: str) -> bool:
    try:
        return bool(_rewrite(line, True, False, 0)[1])
    except RewriteRefused:
        return True
    except ShellSyntaxError:
        return line.lstrip().startswith(tuple(RUN_PARTS))


def rewrite(script: str) -> tuple[str, list[Change]]:
    """The script with every multi-directory run-parts call split, and what changed."""
    if "run-parts" not in script:  # nothing to find: the script need not even be shell we can read
        return script, []
    return _rewrite(script, False, False, 0)
