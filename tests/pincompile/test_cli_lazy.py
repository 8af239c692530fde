"""`pincompile --help` and the completion of command names import no command: the list
and each command's line come from one table (``pincompile.cli.COMMANDS``), the same line
every command shows as its short help once imported. The day-2 commands without
``--server`` import no database, and their logs no typed core client."""

from __future__ import annotations

import ast
import subprocess
import sys

import click
from click.testing import CliRunner

from pincompile.cli import COMMANDS, cli

HEAVY = ("reconciler", "kubernetes", "sqlalchemy", "fastapi", "pydantic", "uvicorn")
NOT_DIRECT = ("sqlalchemy", "alembic", "kubernetes.client.api.core_v1_api")
"""What the API served in a one-shot command never needs: the store's database (only
with ``--store``) and the client's typed CoreV1Api, whose module alone took longer to
import than the rest of ``logs``."""
DIRECT_LOG = """\
import tempfile
from pathlib import Path
import reconciler.commands.direct, reconciler.commands.exec, reconciler.commands.remote
from reconciler.api.logs import LogQuery, LogTarget, pod_log_opener
from reconciler.clients.connect import Connection
from tests.support.member_logs import LINE, member_logs
with member_logs(Path(tempfile.mkdtemp())) as member:
    conn = Connection("east", "east", str(member.kubeconfig))
    opened = pod_log_opener(lambda _: conn, LogQuery(tail_lines=10), 5.0)(
        LogTarget("east", "shop", "web-1", "main"))
    assert opened.read() == LINE
    from reconciler.commands.remote import api_client
    try:  # the whole way into the served API: this member serves no discovery, so it ends
        with api_client(None, None, 5.0, None, False, str(member.kubeconfig), "east"):
            pass
    except (SystemExit, AttributeError):
        pass
"""


def imported_after(code: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules of ``heavy`` (a package: any of its modules) that running ``code``
    in a new interpreter imports."""
    probe = (f"import sys\n{code}\nprint(sorted({{h for h in {heavy!r} for m in sys.modules"
             f" if m == h or m.startswith(h + '.')}}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, env={"_PINCOMPILE_COMPLETE": "", "PATH": ""})
    assert done.returncode == 0, done.stderr
    found: list[str] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return found


def test_help_and_command_completion_import_no_command() -> None:
    assert imported_after("from click.testing import CliRunner\nfrom pincompile.cli import "
                          "cli\nCliRunner().invoke(cli, ['--help'])") == []
    assert imported_after("from pincompile.cli import cli\nimport click\n"
                          "cli.shell_complete(click.Context(cli), 'st')") == []


def test_without_server_logs_and_exec_import_no_database_nor_the_typed_core_client() -> None:
    """The commands' modules and the API served in the command, then one container's log
    read as ``logs`` reads it (from a member that serves only logs)."""
    assert imported_after(DIRECT_LOG, NOT_DIRECT) == []


def test_every_command_is_listed_with_its_line_and_shows_it_as_its_short_help() -> None:
    shown = CliRunner().invoke(cli, ["--help"], terminal_width=200).output
    for name, (_, _, summary) in COMMANDS.items():
        assert f"  {name} " in shown and summary in shown, name
        command = cli.get_command(click.Context(cli), name)
        assert isinstance(command, click.Command) and command.get_short_help_str(200) == summary
