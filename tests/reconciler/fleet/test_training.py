"""The training operator's command line and environment."""

from __future__ import annotations

from pathlib import Path

from reconciler.fleet import training


def test_training_operator_listens_on_loopback_and_serves_tfjob_and_pytorchjob() -> None:
    args = training.training_operator_args("/bin/op", 2001, 2002, Path("/k"))
    assert "--health-probe-bind-address=127.0.0.1:2001" in args
    assert "--metrics-bind-address=0" in args and "--webhook-server-port=2002" in args
    assert [a for a in args if a.startswith("--enable-scheme=")] == [
        "--enable-scheme=tfjob", "--enable-scheme=pytorchjob"]
    env = training.environment({"PATH": "/bin"}, Path("/fleet/clusters/c"))
    assert env["TMPDIR"] == "/fleet/clusters/c/training-operator-tmp"
    assert env["MY_POD_NAMESPACE"] == training.NAMESPACE
