"""A `scripts/bench` command's refusal of its options: exit 2 and the error, before any run."""

from __future__ import annotations

from collections.abc import Callable


def refusal(main: Callable[[list[str]], int], argv: list[str], capsys) -> str:
    """MAIN(ARGV)'s error text; fails unless it exited 2 without starting a run ("[bench]")."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and "[bench]" not in err, (code, err)
    return err
