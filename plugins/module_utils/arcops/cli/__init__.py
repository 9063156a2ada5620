"""The ``arcops`` command: thin argument handling over the helper modules, grouped by what the
operator is doing (box, stack, llama, vllm, prove, fleet, operate), one file per group; each
group's ``add`` registers its commands. What each prints and its exit codes are in texts.py."""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from . import fleet, hardware, kernel, llama, operate, prove, report, vllm
from .common import Parser, error, one_line
from .texts import COMMANDS, GROUPS, OLD_NAMES

# Each group's commands, by the module that registers them.
MODULES = {
    "box": hardware,
    "stack": kernel,
    "llama": llama,
    "vllm": vllm,
    "prove": prove,
    "fleet": fleet,
    "operate": operate,
}
# Commands of a group kept in a module of their own: the report pages (box and fleet).
MORE = {"operate": report.add_box, "fleet": report.add_fleet}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="arcops", description="Facts and checks for Intel Arc inference boxes.")
    parser.add_argument("--version", action="version", version=f"arcops {__version__}")
    sub = parser.add_subparsers(dest="group", required=True, parser_class=Parser, metavar="GROUP")
    for name, about in GROUPS.items():
        group = sub.add_parser(name, help=about, description=f"{about}.")
        commands = group.add_subparsers(dest="command", required=True, parser_class=Parser, metavar="COMMAND")
        MODULES[name].add(commands)
        if name in MORE:
            MORE[name](commands)
    for path, command in leaves(parser):
        about, exits = COMMANDS[path]
        command.description, command.epilog = about, f"exit: {exits}"
    return parser


def leaves(parser: argparse.ArgumentParser, path: str = "") -> list[tuple[str, argparse.ArgumentParser]]:
    """Every command that runs something ("group command [sub]"), with its parser, in order."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found += leaves(child, f"{path} {name}".strip())
            return found
    return [(path, parser)] if path else []


def _new_words(argv: list[str]) -> list[str]:
    """An old flat command name (`arcops watchdog`) in its group's words (`arcops vllm watchdog`)."""
    if argv and argv[0] in OLD_NAMES:
        group, command = OLD_NAMES[argv[0]]
        print(
            f"arcops: '{argv[0]}' is now 'arcops {group} {command}'; the old name goes in the next release",
            file=sys.stderr,
        )
        return [group, command, *argv[1:]]
    return argv


# Values that may be empty on purpose: --render-nodes "" is "no GPU" (vllm render).
EMPTY_OK = {"render_nodes"}


def _empty_value(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """The option or argument given as an empty string: "" as a path is the working folder, as a
    journal file "none given", as an output stdout; never what was meant."""
    command = next(leaf for _path, leaf in leaves(parser) if leaf.get_default("func") is args.func)
    for action in command._actions:
        value = getattr(args, action.dest, None)
        if action.dest not in EMPTY_OK and (value == "" or (isinstance(value, list) and "" in value)):
            return action.option_strings[-1] if action.option_strings else action.metavar or action.dest
    return None


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_new_words(list(sys.argv[1:] if argv is None else argv)))
    name = f"{args.group} {args.command}"
    empty = _empty_value(parser, args)
    if empty:
        error(f"arcops {name}: {empty}: an empty value (name what you mean)")
        return 2
    try:
        return args.func(args)
    except KeyboardInterrupt:
        error("arcops: interrupted")
        return 130
    except BrokenPipeError:  # the reader went away (| head): nothing more to say
        return 0
    except ValueError as e:  # the helpers' own refusals (InputError, SpecError, ...) are ValueErrors
        error(f"arcops: {one_line(e)}")
        return 2
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        error(f"arcops {name}: {where}{e.strerror or one_line(e)}")
        return 2
    except RecursionError:
        error(f"arcops {name}: input nested too deeply")
        return 2
