"""`pincompile --help` and the completion of command names import no command: the list
and each command's line come from one table (``pincompile.cli.COMMANDS``), the same line
every command shows as its short help once imported."""

from __future__ import annotations

import ast
import subprocess
import sys

import click
from click.testing import CliRunner

from pincompile.cli import COMMANDS, cli

HEAVY = ("reconciler", "kubernetes", "sqlalchemy", "fastapi", "pydantic", "uvicorn")


def imported_after(code: str) -> list[str]:
    probe = (f"import sys\n{code}\nprint(sorted({{m.split('.')[0] for m in sys.modules"
             f" if m.startswith({HEAVY!r})}}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, env={"_PINCOMPILE_COMPLETE": "", "PATH": ""})
    found: list[str] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return found


def test_help_and_command_completion_import_no_command() -> None:
    assert imported_after("from click.testing import CliRunner\nfrom pincompile.cli import "
                          "cli\nCliRunner().invoke(cli, ['--help'])") == []
    assert imported_after("from pincompile.cli import cli\nimport click\n"
                          "cli.shell_complete(click.Context(cli), 'st')") == []


def test_every_command_is_listed_with_its_line_and_shows_it_as_its_short_help() -> None:
    shown = CliRunner().invoke(cli, ["--help"], terminal_width=200).output
    for name, (_, _, summary) in COMMANDS.items():
        assert f"  {name} " in shown and summary in shown, name
        command = cli.get_command(click.Context(cli), name)
        assert isinstance(command, click.Command) and command.get_short_help_str(200) == summary
