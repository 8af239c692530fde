"""``pincompile exec``: a command in a container of an app, through the PinCompute API
(a WebSocket bridged to the member cluster's exec), exiting with the command's code."""

from __future__ import annotations

import contextlib
import inspect
import shutil
import signal
import sys
import termios
import threading
import tty as ttys
from collections.abc import Iterator
from typing import Any, BinaryIO

import click
from websockets.exceptions import ConnectionClosed

from pincompile.appref import AppRef
from pincompile.commands.common import EXIT_CLUSTER, fail
from reconciler.api.client import ExecSession
from reconciler.api.exec_protocol import STDERR
from reconciler.commands.remote import (
    SERVER_HELP,
    api_client,
    api_errors,
    api_options,
    app_ref,
)

EXEC_EXIT_CODES = """\b
Exit codes: the command's own when it ran; otherwise 1 not found (no such app, pod or
container), 2 usage (no command, a bad argument, a kubeconfig that cannot be used),
3 the server or a cluster is unreachable or refused (401, 403, 429, 5xx), the app has
no Running pod (409), or the command could not be run or the session was cut (idle,
time limit)."""


@click.command("exec")
@click.argument("app", metavar="KIND/PROJECT/NAME", callback=app_ref)
@click.argument("command", nargs=-1, required=True, metavar="-- COMMAND [ARG]...")
@click.option("-c", "--container",
              help="This container: one of the spec's or a sidecar (default: the spec's "
                   "first).")
@click.option("--cluster", help="A pod in this member cluster.")
@click.option("--pod", help="This pod (default: a Running pod of the app; named on stderr).")
@click.option("-i", "--stdin", is_flag=True, help="Pass stdin to the command.")
@click.option("-t", "--tty", is_flag=True, help="Give the command a terminal.")
@click.option("-q", "--quiet", is_flag=True, help="Do not name the pod on stderr.")
@api_options
def exec_(app: AppRef, command: tuple[str, ...], container: str | None,
          cluster: str | None, pod: str | None, stdin: bool, tty: bool, quiet: bool,
          **api: Any) -> None:
    """Run a command in a container of an app, in whichever member cluster it runs in,
    and exit with the command's exit code.

    Through the API your token needs `create` on the app's `exec` subresource in its
    project (see docs/api/README.md); straight to the clusters, the kubeconfig's user
    needs `create` on `pods/exec` in the member cluster. The API bounds a session's idle
    time, its length and how many you have open.

    \b
    Examples:
      pincompile exec PinApp/search/search-api -- cat /etc/hostname
      pincompile exec PinApp/search/search-api -it -c main -- sh
      pincompile exec PinApp/search/search-api -c traffic -- env   # a sidecar
      pincompile exec PinApp/search/search-api --cluster use1a-general-01 -- env
    """
    with api_client(**api) as (client, _):
        with api_errors(str(app), client):
            session = client.exec(*app, list(command), container=container,
                                   cluster=cluster, pod=pod, stdin=stdin, tty=tty)
        _run(session, stdin, tty, quiet or pod is not None)
    if session.exit_code is None:
        fail(f"{app}: {session.error}", EXIT_CLUSTER)
    sys.exit(session.exit_code)


def _run(session: ExecSession, stdin: bool, tty: bool, quiet: bool) -> None:
    """Pass stdin, the terminal's size and the output until the session ends."""
    raw = tty and stdin and sys.stdin.isatty()
    try:
        with _raw_terminal(raw):
            if stdin:
                _start(_pass_stdin, session, sys.stdin.buffer)
            if tty and sys.stdout.isatty():
                _follow_terminal_size(session)
            _print_output(session, quiet)
    except KeyboardInterrupt:
        session.close()
        sys.exit(130)


def _print_output(session: ExecSession, quiet: bool) -> None:
    named = quiet
    for channel, payload in session.output():
        if not named and session.target:
            t = session.target
            click.echo(f"# {t['cluster']}/{t['namespace']}/{t['pod']}, container "
                       f"{t['container']}", err=True)
            named = True
        out = sys.stderr.buffer if channel == STDERR else sys.stdout.buffer
        out.write(payload)
        out.flush()


def _start(target: Any, *args: Any) -> None:
    threading.Thread(target=target, args=args, daemon=True, name="cli-exec-io").start()


def _pass_stdin(session: ExecSession, source: BinaryIO) -> None:
    """Send stdin as it comes (``read1``: what is there, not a full buffer); at its end,
    say so."""
    read = getattr(source, "read1", source.read)
    with contextlib.suppress(ConnectionClosed, OSError, ValueError):
        while data := read(16 * 1024):
            session.send_stdin(data)
        session.close_stdin()


def _follow_terminal_size(session: ExecSession) -> None:
    """Send the terminal's size now and whenever it changes (SIGWINCH)."""
    changed = threading.Event()

    def send_sizes() -> None:
        with contextlib.suppress(ConnectionClosed, OSError):
            while True:
                size = shutil.get_terminal_size()
                session.resize(size.columns, size.lines)
                changed.wait()
                changed.clear()

    signal.signal(signal.SIGWINCH, lambda *_: changed.set())
    _start(send_sizes)


@contextlib.contextmanager
def _raw_terminal(raw: bool) -> Iterator[None]:
    """The local terminal in raw mode (keys go to the remote one as typed), restored."""
    if not raw:
        yield
        return
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    ttys.setraw(fd)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


exec_.help = f"{inspect.cleandoc(exec_.help or '')}\n\n{SERVER_HELP}\n\n{EXEC_EXIT_CODES}"
