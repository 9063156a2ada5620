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

A call is found however the script starts it (shell_commands.RUNNERS): behind prefix commands
(`nice -n 5`, `timeout 10`, `env -i`, `flock /lock`, `busybox`, `runuser -u u --`, ...) the loop
keeps the prefix on each call; behind `exec` the loop ends with `exit`; inside $(...) it stands
in the substitution. Where a loop cannot stand in (shell text run by eval, sh -c, su -c; a call
in backquotes or a quoted string; behind chroot, xargs, exec with options, sudo -s), the package
is refused with the line and the reason. A call is never passed through unchanged.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import asdict, dataclass

from .shell_commands import MENTION, NEVER_RUN, SHELLS, Resolved, is_run_parts, resolve
from .shell_syntax import unquoted
from .shellscan import Command, HereDoc, Scan, ShellSyntaxError, Word, scan

# run-parts options that take the next word as their value when written without "=".
_TAKES_VALUE = frozenset({"-a", "--arg", "-u", "--umask", "--regex"})
# Shell text inside shell text (here-documents, backquotes, eval, sh -c, strings) is scanned
# again at each level; deeper than this is refused, which keeps the cost linear in the text.
MAX_RESCAN = 8
# A string's name part: "NAME=" (an assignment, alias NAME=...) or "--option=".
_STRING_NAME = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*|--?[A-Za-z0-9-]+)=")
# Text without blanks or operators: one word, so no call with operands.
_ONE_WORD = re.compile(r"[^ \t\n;&|()<>`]*")


@dataclass
class Change:
    line: int  # 1-based, in the original script
    before: str
    after: str
    in_heredoc: bool  # the call sits in a here-document (a trigger script written at run time)

    def as_dict(self) -> dict:
        return asdict(self)


def _shown(text: str) -> str:
    """Script text quoted in a one-line message: printable, and short."""
    text = "".join(c if c.isprintable() else "?" for c in text[:60])
    return text if len(text) < 60 else text[:57] + "..."


class RewriteRefused(ShellSyntaxError):
    """The script parses, but a run-parts call in it cannot be rewritten safely."""


def _split_args(words: list[Word]) -> tuple[list[str], list[tuple[str, bool]], bool]:
    """run-parts' arguments: (option words, [(operand, may split)], --exit-on-error given).
    getopt permutes, so options may follow operands; "--" ends the options."""
    options: list[str] = []
    operands: list[tuple[str, bool]] = []
    exit_on_error = options_done = False
    k = 0
    while k < len(words):
        w, value = words[k], unquoted(words[k].text)
        if not options_done and value == "--":
            options_done = True
        elif not options_done and value.startswith("-"):
            options.append(w.text)
            exit_on_error = exit_on_error or value == "--exit-on-error"
            if value in _TAKES_VALUE and k + 1 < len(words):
                k += 1
                options.append(words[k].text)
        else:
            operands.append((w.text, w.splits))
        k += 1
    return options, operands, exit_on_error


def needs_split(call: list[Word]) -> bool:
    """A run-parts call (name first) with more than one directory, or one that may split."""
    _unused, operands, _unused = _split_args(call[1:])
    return len(operands) > 1 or any(splits for _unused, splits in operands)


def _replacement(cmd: Command, at: int, live_dollar: bool) -> str:
    options, operands, exit_on_error = _split_args(cmd.words[at + 1 :])
    d = "\\$" if live_dollar else "$"  # in an unquoted here-doc our own expansions must stay literal
    prefix = [w.text for w in cmd.words[:at]]
    then_exit = bool(prefix) and unquoted(prefix[0]) == "exec"  # exec ends the script: so does the loop
    call = " ".join(
        [w.text for w in cmd.assignments]
        + prefix[then_exit:]
        + [cmd.words[at].text, *options, "--", f'"{d}arcops_dir"', *cmd.redirects]
    )
    on_fail = f"arcops_rc={d}?;" + (" break;" if exit_on_error else "")
    end = f"exit {d}arcops_rc" if then_exit else f"(exit {d}arcops_rc)"
    return (
        f"{{ arcops_rc=0; for arcops_dir in {' '.join(operand for operand, _unused in operands)}; do"
        f' if [ -d "{d}arcops_dir" ]; then {call} || {{ {on_fail} }}; fi; done; {end}; }}'
    )


class _Script:
    """One scan of one piece of shell text, at one depth of shell text inside shell text."""

    def __init__(self, text: str, in_heredoc: bool, live_dollar: bool, line_offset: int, depth: int) -> None:
        if depth > MAX_RESCAN:
            raise RewriteRefused(
                f"line {line_offset + 1}: shell text inside shell text nested more than {MAX_RESCAN} deep"
            )
        self.text, self.in_heredoc, self.live_dollar = text, in_heredoc, live_dollar
        self.offset, self.depth = line_offset, depth
        self.found: Scan = scan(text, needle=MENTION)
        # The outermost $(...) spans: a text position is inside some substitution exactly when
        # it is inside one of these (nested ones lie within them), so one bisect answers.
        self._subs: list[tuple[int, int]] = []
        for start, end in sorted(
            (sub.start, sub.end) for sub in self.found.substitutions if sub.kind == "$("
        ):
            if not self._subs or start >= self._subs[-1][1]:
                self._subs.append((start, end))
        self._sub_starts = [start for start, _unused in self._subs]

    def line(self, offset: int) -> int:
        return self.found.lines.line(offset) + self.offset

    def inner(self, text: str, what: str, line: int) -> None:
        """Shell text run by other means (backquotes, eval, sh -c, a string): refused when it
        holds a run-parts call that needs splitting, or cannot be read while naming run-parts."""
        if not MENTION.search(text):
            return
        try:
            _unused, changes = _Script(text, False, False, line - 1, self.depth + 1).rewrite()
        except RewriteRefused:
            raise
        except ShellSyntaxError as e:
            if not _line_needs_split(text):
                return
            raise RewriteRefused(f"line {line}: run-parts inside {what} that cannot be read ({e})") from e
        if changes:
            raise RewriteRefused(
                f"line {changes[0].line}: run-parts with several directories inside {what};"
                " rewrite it by hand"
            )

    def _literal_mention(self, word: Word) -> bool:
        """The word names run-parts outside any $(...) in it (whose commands are found anyway)."""
        for m in MENTION.finditer(self.text, word.start, word.end):
            k = bisect.bisect_right(self._sub_starts, m.start()) - 1
            if k < 0 or not self._subs[k][0] <= m.start() < self._subs[k][1]:
                return True
        return False

    def _strings(self, cmd: Command, resolved: Resolved, values: list[str]) -> None:
        """Text run later or elsewhere: shell text the command runs, strings that name run-parts."""
        line = self.line(cmd.start)
        script = [cmd.words[k] for k in resolved.script]
        if any(self._literal_mention(w) for w in script):
            self.inner(resolved.script_text, _shown(unquoted(resolved.via[-1])), line)
        if resolved.stdin_shell:
            start = self.text.rfind("\n", 0, cmd.start) + 1
            end = self.text.find("\n", cmd.end)
            if MENTION.search(self.text, start, end if end >= 0 else len(self.text)):
                raise RewriteRefused(
                    f"line {line}: a shell reads its commands from its input beside run-parts;"
                    " rewrite it by hand"
                )
        quiet = resolved.at is not None and values[resolved.at] in NEVER_RUN
        strings = list(cmd.assignments) + ([] if quiet else cmd.words[(resolved.at or 0) + 1 :])
        for w in strings:
            if w in script or not self._literal_mention(w):
                continue
            value = _STRING_NAME.sub("", unquoted(w.text), count=1)  # alias x=..., --opt=...
            if _ONE_WORD.fullmatch(value):  # a bare name, not a call with directories
                continue
            self.inner(value, "a quoted string", line)

    def _command(self, cmd: Command) -> tuple[int, int, str] | None:
        if not MENTION.search(self.text, cmd.start, cmd.end) and not any(
            w.text.rsplit("/", 1)[-1] in SHELLS for w in cmd.words
        ):
            return None  # cannot run run-parts: it does not name it, nor is it a shell reading its input
        values = [unquoted(w.text) for w in cmd.words]
        resolved = resolve(values)
        self._strings(cmd, resolved, values)
        at, line = resolved.at, self.line(cmd.start)
        if at is None:
            return None
        if not is_run_parts(values[at]):
            if values[at] in NEVER_RUN:
                return None
            behind = next((k for k in range(at + 1, len(values)) if is_run_parts(values[k])), None)
            if behind is not None and needs_split(cmd.words[behind:]):
                raise RewriteRefused(
                    f"line {line}: run-parts is an argument of {_shown(values[at])}; rewrite it by hand"
                )
            return None
        if resolved.adds_operands:
            raise RewriteRefused(
                f"line {line}: run-parts is run through {_shown(' '.join(resolved.via))}: {resolved.blocker};"
                " rewrite it by hand"
            )
        if not needs_split(cmd.words[at:]):
            return None
        if resolved.blocker:
            raise RewriteRefused(
                f"line {line}: run-parts is run through {_shown(' '.join(resolved.via))}: {resolved.blocker};"
                " rewrite it by hand"
            )
        if any(r.lstrip("0123456789").startswith("<<") for r in cmd.redirects):
            raise RewriteRefused(f"line {line}: run-parts reads a here-document; rewrite it by hand")
        # Inside $(...) the call runs when the substitution does: our $ stays live there.
        return cmd.start, cmd.end, _replacement(cmd, at, self.live_dollar and not cmd.nested)

    def rewrite(self) -> tuple[str, list[Change]]:
        text, found = self.text, self.found
        edits: list[tuple[int, int, str]] = []
        for sub in found.substitutions:
            if sub.kind == "`":  # inside backquotes \\, \` and \$ stand for the character
                inner = (
                    text[sub.start : sub.end].replace("\\\\", "\\").replace("\\`", "`").replace("\\$", "$")
                )
                self.inner(inner, "`...`", self.line(sub.start))
        for cmd in found.commands:
            edit = self._command(cmd)
            if edit:
                edits.append(edit)
        changes = [
            Change(self.line(start), text[start:end], new, self.in_heredoc) for start, end, new in edits
        ]
        for doc in found.heredocs:
            edits_in_doc, doc_changes = self._heredoc(doc)
            edits += edits_in_doc
            changes += doc_changes
        pieces, at = [], 0
        for start, end, new in sorted(edits):
            if start < at:
                raise RewriteRefused(
                    f"line {self.line(start)}: run-parts inside the arguments of another run-parts call"
                    " that is split too; rewrite it by hand"
                )
            pieces += [text[at:start], new]
            at = end
        changes.sort(key=lambda c: c.line)
        return "".join([*pieces, text[at:]]), changes

    def _heredoc(self, doc: HereDoc) -> tuple[list[tuple[int, int, str]], list[Change]]:
        body = self.text[doc.body_start : doc.body_end]
        if not MENTION.search(body):  # not a script we need to read (it may not be shell at all)
            return [], []
        offset = self.line(doc.body_start) - 1
        try:
            new_body, changes = _Script(body, True, doc.expands, offset, self.depth + 1).rewrite()
        except RewriteRefused as e:
            raise RewriteRefused(f"here-document '{doc.delimiter}': {e}") from e
        except ShellSyntaxError as e:
            # A body that is not shell (a message, a config file) may still mention run-parts: it
            # is refused only when a line of it reads as a run-parts call that needs splitting.
            if _line_needs_split(body):
                raise ShellSyntaxError(f"here-document '{doc.delimiter}': {e}") from e
            return [], []
        if not changes:
            return [], []
        return [(doc.body_start, doc.body_end, new_body)], changes


def _line_needs_split(text: str) -> bool:
    """Some line of text that is not shell as a whole reads as a run-parts call needing a split."""
    for line in text.splitlines():
        if not MENTION.search(line):
            continue
        try:
            if _Script(line, True, False, 0, MAX_RESCAN).rewrite()[1]:
                return True
        except RewriteRefused:
            return True
        except ShellSyntaxError:
            if is_run_parts(line.split()[0] if line.split() else ""):
                return True
    return False


def rewrite(script: str) -> tuple[str, list[Change]]:
    """The script with every multi-directory run-parts call split, and what changed."""
    if not MENTION.search(script):  # nothing to find: the script need not even be shell we can read
        return script, []
    return _Script(script, False, False, 0, 0).rewrite()
