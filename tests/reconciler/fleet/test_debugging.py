"""Where exec and logs lead on the local fleet: exec as an unprivileged user in the pod's
own scratch directory, outside the fleet's files; a log file per container."""

from __future__ import annotations

import os
import pwd
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from reconciler.fleet import debugging, forward_responder


def test_exec_runs_as_nobody_when_the_fleet_runs_as_root(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    nobody = pwd.getpwnam("nobody")
    assert debugging.exec_user() == debugging.ExecUser("nobody", nobody.pw_uid,
                                                       nobody.pw_gid)
    assert nobody.pw_uid != 0 and nobody.pw_gid != 0
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # kwok could not switch users
    assert debugging.exec_user() is None


def test_kwok_runs_commands_as_that_user_with_a_minimal_environment(tmp_path: Path) -> None:
    user = debugging.ExecUser("nobody", 65534, 65534)
    path = debugging.write_kwok_config(tmp_path, tmp_path / "exec", user)
    doc, forward = yaml.safe_load_all(path.read_text())
    assert doc["kind"] == "ClusterExec"
    (local,) = [e["local"] for e in doc["spec"]["execs"]]
    assert local["securityContext"] == {"runAsUser": 65534, "runAsGroup": 65534}
    assert local["workDir"] == str(tmp_path / "exec")
    assert {e["name"] for e in local["envs"]} == {"PATH", "HOME"}
    unprivileged = debugging.write_kwok_config(tmp_path, tmp_path / "exec", None)
    assert "securityContext" not in unprivileged.read_text()
    # every port of every pod: the responder, with this interpreter, as that user
    assert forward["kind"] == "ClusterPortForward" and "selector" not in forward["spec"]
    (command,) = [f["command"] for f in forward["spec"]["forwards"] if "ports" not in f]
    assert command[:3] == [sys.executable, "-I", "-S"] and command[4:] == ["65534", "65534"]
    assert Path(command[3]) == Path(forward_responder.__file__).resolve()
    assert yaml.safe_load_all(unprivileged.read_text())


def test_a_forwarded_port_answers_http_and_echoes_the_rest() -> None:
    assert forward_responder.answer(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").endswith(
        forward_responder.BODY)
    assert forward_responder.answer(b"HEAD /x HTTP/1.0\r\n\r\n").endswith(b"\r\n\r\n")
    assert forward_responder.answer(b"GET the milk") is None
    for sent, back in ((b"ping\n", b"ping\n"), (b"GET / HTTP/1.1\r\n\r\n", b"HTTP/1.1 200")):
        (stdin_r, stdin_w), (stdout_r, stdout_w) = os.pipe(), os.pipe()
        os.write(stdin_w, sent)
        os.close(stdin_w)  # the client closed: the responder ends
        forward_responder.serve(stdin_r, stdout_w, idle=5)
        os.close(stdout_w)
        assert os.read(stdout_r, 1000).startswith(back)
        os.close(stdin_r)
        os.close(stdout_r)
    idle_r, idle_w = os.pipe()
    forward_responder.serve(idle_r, idle_w, idle=0.05)  # no byte: it gives up
    os.close(idle_r)
    os.close(idle_w)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_a_pods_scratch_directory_is_the_exec_users_alone(tmp_path: Path) -> None:
    root = debugging.make_exec_root()
    try:
        user = debugging.exec_user()
        assert user is not None
        scratch = debugging.scratch_dir(root, user, "c1", "shop", "web-0")
        assert scratch == root / "c1" / "shop" / "web-0"
        info = scratch.stat()
        assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (user.uid, user.gid, 0o700)
        # the root is not the fleet directory, and the user may pass it but not list it
        assert root.stat().st_mode & 0o777 == 0o711 and root.stat().st_uid == 0
        assert debugging.scratch_dir(root, user, "c1", "shop", "web-0") == scratch
    finally:
        shutil.rmtree(root)


def test_names_that_are_no_kubernetes_names_never_become_paths(tmp_path: Path) -> None:
    for bad in ("..", "a/b", "", "Web", "-x"):
        with pytest.raises(ValueError, match="not a Kubernetes name"):
            debugging.pod_dir(tmp_path, "c1", bad, "web-0")
        with pytest.raises(ValueError, match="not a Kubernetes name"):
            debugging.log_file(tmp_path, "c1", "shop", "web-0", bad)
    assert debugging.log_file(tmp_path, "c1", "shop", "web-0", "main") == (
        tmp_path / "pods" / "c1" / "shop" / "web-0" / "main.log")
