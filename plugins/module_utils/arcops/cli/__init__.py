"""The ``arcops`` command: thin argument handling over the helper modules, one file per command
group (hardware, kernel, llama, vllm, prove, fleet, operate); each group's ``add`` registers its
subcommands."""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from . import fleet, hardware, kernel, llama, operate, prove, vllm
from .common import Parser, one_line

GROUPS = (hardware, kernel, llama, vllm, prove, fleet, operate)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="arcops", description="Facts and checks for Intel Arc inference boxes.")
    parser.add_argument("--version", action="version", version=f"arcops {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for group in GROUPS:
        group.add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("arcops: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (| head): nothing more to say
        return 0
    except ValueError as e:  # the helpers' own refusals (InputError, SpecError, ...) are ValueErrors
        print(f"arcops: {one_line(e)}", file=sys.stderr)
        return 2
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"arcops {args.command}: {where}{e.strerror or one_line(e)}", file=sys.stderr)
        return 2
    except RecursionError:
        print(f"arcops {args.command}: input nested too deeply", file=sys.stderr)
        return 2
