"""An exec session's processes: the wrapper runs the command in the pod's directory with
the session's token, and ending the session kills everything it started — what stayed
under the wrapper and what left the tree — and nothing else."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.fleet import sessions
from reconciler.fleet.processes import running
from tests.support.wait import wait_for


@pytest.fixture
def tokens() -> Iterator[dict[str, str]]:
    """Session tokens of this test only (other test runs may share the machine); every
    process of these sessions is killed afterwards."""
    made: dict[str, str] = {}
    yield made
    for token in made.values():
        sessions.end_session(token, os.getuid(), {os.getpid()})


def started(token: str, directory: Path, script: str) -> subprocess.Popen[bytes]:
    """A session as kwok starts one (this test process standing in for kwok)."""
    return subprocess.Popen(sessions.wrapper_argv(token, directory, "web-0",
                                                  ["sh", "-c", script]),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def test_the_wrapper_runs_the_command_in_the_pods_directory_with_the_sessions_token(
        tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    proc = started(token, tmp_path, 'echo "$PWD $HOME $HOSTNAME $PINCOMPILE_EXEC_SESSION"; '
                                    "exit 3")
    out, _ = proc.communicate(timeout=10)
    assert out.decode() == f"{tmp_path} {tmp_path} web-0 {token}\n"
    assert proc.returncode == 3  # the command's exit status, not the wrapper's


def test_ending_a_session_kills_its_tree_and_what_left_it_but_no_other_session(
        tmp_path: Path, tokens: dict[str, str]) -> None:
    # a background job that leaves the tree (its parent exits at once) and a foreground one
    script = "(sleep 300 & echo $! > escaped) ; sleep 300"
    (tmp_path / "o").mkdir()
    tokens.update(mine=uuid.uuid4().hex, other=uuid.uuid4().hex)
    mine = started(tokens["mine"], tmp_path, script)
    other = started(tokens["other"], tmp_path / "o", "sleep 300")
    try:
        wait_for(lambda: (tmp_path / "escaped").exists()
                 and (tmp_path / "escaped").read_text().strip(), 10, "the background job")
        escaped = int((tmp_path / "escaped").read_text())
        table = sessions.process_table()
        assert table[escaped].ppid != mine.pid  # it left the wrapper's tree
        live = sessions.wrappers(table, {os.getpid()})
        assert live[tokens["mine"]] == mine.pid
        assert sessions.end_session(tokens["mine"], os.getuid(), {os.getpid()}) >= 3
        assert mine.wait(timeout=5) in (-9, 128 + 9)  # killed, or exited as its child was
        wait_for(lambda: not running(escaped), 10, "the escaped job to end")
        wait_for(lambda: not [p for p in sessions.process_table()
                              if sessions.session_token(p) == tokens["mine"]], 10,
                 "no process of the session")
        assert other.poll() is None and tokens["other"] in sessions.wrappers(
            sessions.process_table(), {os.getpid()})
    finally:
        for token in tokens.values():
            sessions.end_session(token, os.getuid(), {os.getpid()})
        mine.wait()
        other.wait()


def test_only_kwoks_children_are_wrappers(tmp_path: Path, tokens: dict[str, str]) -> None:
    """A tenant's process that copies a session's command line keeps no session alive:
    it is not a child of kwok."""
    tokens["copy"] = uuid.uuid4().hex
    outer = subprocess.Popen(["sh", "-c", '"$@"; :', "sh", *sessions.wrapper_argv(
        tokens["copy"], tmp_path, "web-0", ["sleep", "300"])])
    try:
        def copy_runs() -> bool:
            table = sessions.process_table()
            return tokens["copy"] in sessions.wrappers(table, {outer.pid})

        wait_for(copy_runs, 10, "the copy")  # it has the wrapper's very command line ...
        assert tokens["copy"] not in sessions.wrappers(sessions.process_table(),
                                                      {os.getpid()})  # ... not its parent
    finally:
        sessions.end_session(tokens["copy"], os.getuid(), {outer.pid})
        outer.wait()
