"""What a simple command runs: the command behind its prefix commands, or the shell text it runs.

A maintainer script can start run-parts directly or through commands that run another command:
`exec`, `command`, `env`, `nice`, `timeout`, `flock`, `runuser`, `busybox`, ... or hand it to a
shell as text (`eval`, `sh -c`, `su -c`, `flock -c`). RUNNERS is the data: for each such command,
the options that take a value, the operands before the command, the options whose value is
shell text, the options with which it runs nothing, and why a call behind it cannot be split
into a loop, where it cannot. `resolve` walks a command's words through the table.

Options are read the way their getopt does: a value may be attached ("-n5", "--signal=KILL")
or the next word; "--" ends the options. Words are their unquoted values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Runner:
    takes_value: frozenset[str] = frozenset()  # options whose value is the next word
    operands: int = 0  # words between the options and the command (timeout's duration, flock's file)
    script: frozenset[str] = frozenset()  # options whose value is shell text (su -c)
    runs_nothing: frozenset[str] = frozenset()  # with these no command runs (command -v)
    assignments: bool = False  # NAME=value words may stand before the command (env, sudo)
    joined: bool = False  # the remaining words, joined by blanks, are run as shell text (eval)
    su_like: bool = False  # runs only shell text given with -c (su); runuser -u runs a command
    blocker: str = ""  # why a loop cannot stand in for a call behind it
    adds_operands: bool = False  # run-parts behind it gets directories the text does not show


def _opts(*names: str) -> frozenset[str]:
    return frozenset(names)


SHELLS = _opts("sh", "bash", "dash", "ash", "ksh", "ksh93", "mksh", "lksh", "pdksh", "posh", "yash", "zsh")
_SU_VALUES = _opts("-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w", "--whitelist-environment")

RUNNERS: dict[str, Runner] = {
    "builtin": Runner(),
    "busybox": Runner(),  # its first operand is the applet: busybox run-parts, busybox sh -c
    "chroot": Runner(
        _opts("--userspec", "--groups"),
        operands=1,
        blocker="its directories are looked up inside the new root",
    ),
    "chrt": Runner(runs_nothing=_opts("-p", "--pid"), operands=1),
    "command": Runner(runs_nothing=_opts("-v", "-V")),
    "doas": Runner(_opts("-u", "-C"), runs_nothing=_opts("-C")),
    "env": Runner(
        _opts("-u", "--unset", "-C", "--chdir", "-P"), script=_opts("-S", "--split-string"), assignments=True
    ),
    "eval": Runner(joined=True),
    "exec": Runner(_opts("-a")),
    "fakeroot": Runner(_opts("-l", "--lib", "--faked", "-s", "-i")),
    "flock": Runner(
        _opts("-w", "--wait", "--timeout", "-E", "--conflict-exit-code"),
        operands=1,
        script=_opts("-c", "--command"),
    ),
    "ionice": Runner(
        _opts("-c", "--class", "-n", "--classdata"),
        runs_nothing=_opts("-p", "--pid", "-P", "--pgid", "-u", "--uid"),
    ),
    "nice": Runner(_opts("-n", "--adjustment")),
    "nohup": Runner(),
    "runuser": Runner(_SU_VALUES | _opts("-u", "--user"), script=_opts("-c", "--command"), su_like=True),
    "setsid": Runner(),
    "stdbuf": Runner(_opts("-i", "--input", "-o", "--output", "-e", "--error")),
    "su": Runner(_SU_VALUES, script=_opts("-c", "--command"), su_like=True),
    "sudo": Runner(
        _opts("-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h", "--host")
        | _opts(
            "-p", "--prompt", "-r", "--role", "-t", "--type", "-U", "--other-user", "-T", "--command-timeout"
        ),
        runs_nothing=_opts(
            "-e", "--edit", "-l", "--list", "-v", "--validate", "-k", "-K", "--remove-timestamp"
        ),
        assignments=True,
    ),
    "taskset": Runner(runs_nothing=_opts("-p", "--pid"), operands=1),
    "time": Runner(_opts("-f", "--format", "-o", "--output")),
    "timeout": Runner(_opts("-s", "--signal", "-k", "--kill-after"), operands=1),
    "watch": Runner(_opts("-n", "--interval", "-d", "--differences", "-q", "--equexit"), joined=True),
    "xargs": Runner(
        _opts("-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "-n", "--max-args", "-P")
        | _opts("--max-procs", "-s", "--max-chars", "--process-slot-var"),
        blocker="xargs adds operands read from its input",
        adds_operands=True,
    ),
}
# sudo -s/-i and doas -s run the words through the user's shell.
_THROUGH_A_SHELL = {"sudo": _opts("-s", "--shell", "-i", "--login")}
# Commands that never run their arguments: run-parts among their words is only text. The
# compound commands' heads are here too: `for x in run-parts ...` lists words, runs none.
NEVER_RUN = _opts("echo", "printf", ":", "true", "false", "test", "[", "logger", "type", "which", "hash")
NEVER_RUN |= _opts("for", "case", "select")


@dataclass
class Resolved:
    """Where a simple command's words lead."""

    at: int | None = None  # index of the word that names the command finally run (None: none)
    script: list[int] = field(default_factory=list)  # indexes of the words that hold shell text run
    script_text: str = ""  # that text: their values joined by blanks (an option's name cut off)
    stdin_shell: bool = False  # a shell that reads its commands from its input
    via: list[str] = field(default_factory=list)  # the runners passed on the way, outermost first
    blocker: str = ""  # why a loop cannot stand in for what runs (from a runner on the way)
    adds_operands: bool = False  # a runner on the way adds operands (xargs)

    def runs_text(self, words: list[str], indexes: list[int], cut: int = 0) -> Resolved:
        """This command runs the joined values of words[indexes] as shell text (the first one's
        first `cut` characters are an option's name, as in --command=TEXT)."""
        self.script = [k for k in indexes if k < len(words)]
        texts = [words[k] for k in self.script]
        if texts:
            texts[0] = texts[0][cut:]
        self.script_text = " ".join(texts)
        return self


def _value_option(word: str, runner: Runner) -> tuple[bool, bool]:
    """(is one of the runner's value options, its value is attached to the word)."""
    if word.startswith("--"):
        name = word.split("=", 1)[0]
        return name in runner.takes_value | runner.script, "=" in word
    if word[:2] in runner.takes_value | runner.script:
        return True, len(word) > 2
    return False, False


def _shell(words: list[str], i: int, found: Resolved) -> Resolved:
    """sh [options] -c TEXT, sh [options] FILE, or sh reading its input."""
    j, flags = i + 1, ""
    while j < len(words) and words[j][:1] in "-+" and words[j] not in ("-", "--", "+"):
        if words[j] in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            j += 2
            continue
        if not words[j].startswith("--"):
            flags += words[j][1:]
        j += 1
    if j < len(words) and words[j] in ("-", "--"):
        j += 1
    found.via.append(words[i])
    if "c" in flags:
        return found.runs_text(words, [j])
    if "s" in flags or j >= len(words):
        found.stdin_shell = True
    return found  # else a script file: what it runs is not in this text


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def resolve(words: list[str]) -> Resolved:
    """Follow runners from the first word to the command run, or to shell text run."""
    found, i = Resolved(), 0
    while i < len(words):
        name = _basename(words[i])
        if name in SHELLS:
            return _shell(words, i, found)
        runner = RUNNERS.get(name)
        if runner is None:
            found.at = i
            return found
        found.via.append(words[i])
        if runner.joined and name == "eval":
            return found.runs_text(words, list(range(i + 1, len(words))))
        j, command_mode = i + 1, not runner.su_like
        while j < len(words) and words[j].startswith("-") and words[j] != "-":
            word = words[j]
            if word == "--":
                j += 1
                break
            option, attached = _value_option(word, runner)
            key = word.split("=", 1)[0] if word.startswith("--") else word[:2]
            if key in runner.runs_nothing or word in runner.runs_nothing:
                return Resolved(via=found.via)
            if key in runner.script:
                cut = (len(key) + word.startswith("--")) if attached else 0
                return found.runs_text(words, [j] if attached else [j + 1], cut)
            if key in _THROUGH_A_SHELL.get(name, ()):
                found.blocker = f"{name} {key} runs it through a shell"
            if name == "exec":
                found.blocker = found.blocker or "exec with options"
            if name == "runuser" and key in ("-u", "--user"):
                command_mode = True  # runuser -u USER [--] COMMAND runs the command itself
            j += 1 if attached or not option else 2
        if runner.su_like and not command_mode:
            for k in range(j, len(words)):
                key = words[k].split("=", 1)[0]
                if key in ("-c", "--command"):
                    attached = "=" in words[k]
                    return found.runs_text(
                        words, [k] if attached else [k + 1], len(key) + 1 if attached else 0
                    )
            return found
        while runner.assignments and j < len(words) and "=" in words[j] and not words[j].startswith("="):
            j += 1
        if name == "flock" and j + 1 < len(words) and words[j + 1] in ("-c", "--command"):
            return found.runs_text(words, [j + 2])
        j += runner.operands
        if runner.joined:  # watch: the rest is shell text
            return found.runs_text(words, list(range(j, len(words))))
        found.blocker = found.blocker or runner.blocker
        found.adds_operands = found.adds_operands or runner.adds_operands
        i = j
    return Resolved(via=found.via)


# run-parts as written in text, with quotes or backslashes between its letters ('run'-parts, r\\un-parts).
MENTION = re.compile(r"""r['"\\]*u['"\\]*n['"\\]*-['"\\]*p['"\\]*a['"\\]*r['"\\]*t['"\\]*s""")


def is_run_parts(word: str) -> bool:
    """The word names run-parts: by name or any path, or computed from text that names it."""
    return _basename(word) == "run-parts" or ("$" in word and "run-parts" in word)
