"""The `arcops` command reads as one tool: groups by what the operator does, every command's text
in one place (cli/texts.py) shown by --help and written to docs/cli.md, and the old flat names
still working, hidden, for one release."""

from __future__ import annotations

import subprocess
import sys

import pytest
from arcops import cli
from arcops.cli import texts
from arcops.devtools import clidocs

from .conftest import REPO


def test_docs_cli_md_is_written_from_the_parser():
    page = (REPO / "docs/cli.md").read_text()
    assert clidocs.page(page) == page, "run scripts/cli-docs"
    rows = [line for line in page.splitlines() if line.startswith("| `arcops ")]
    assert len(rows) == len(cli.leaves(cli.build_parser())) == len(texts.COMMANDS)


def test_every_command_has_its_text_and_every_text_a_command():
    paths = [path for path, _ in cli.leaves(cli.build_parser())]
    assert sorted(paths) == sorted(texts.COMMANDS)
    assert [p.split()[0] for p in paths] == sorted(
        (p.split()[0] for p in paths), key=list(texts.GROUPS).index
    )


def test_help_lists_the_groups_only(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert all(f"    {group} " in out for group in texts.GROUPS)
    assert not any(f"    {old} " in out for old in texts.OLD_NAMES if old not in texts.GROUPS)


@pytest.mark.parametrize("old", sorted(texts.OLD_NAMES))
def test_an_old_name_runs_its_new_command_and_says_so(old, capsys):
    group, command = texts.OLD_NAMES[old]
    with pytest.raises(SystemExit) as done:
        cli.main([old, *(["lock"] if old == "bundle" else []), "--help"])
    assert done.value.code == 0
    out, err = capsys.readouterr()
    assert f"usage: arcops {group} {command}" in out
    assert (
        err == f"arcops: '{old}' is now 'arcops {group} {command}'; the old name goes in the next release\n"
    )


def test_a_leaf_help_says_what_it_prints_and_its_exit_codes():
    done = subprocess.run(
        [sys.executable, "-m", "arcops.cli", "vllm", "watchdog", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0
    about = texts.COMMANDS["vllm watchdog"][0]
    assert " ".join(about.split()[:6]) in " ".join(done.stdout.split())
    assert "exit: 0 ready" in done.stdout


def test_the_old_sysfs_root_option_is_the_root():
    args = cli.build_parser().parse_args(["vllm", "health-watch", "--spec", "s.json", "--sysfs-root", "/x"])
    assert args.root == "/x"
