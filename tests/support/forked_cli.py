"""``python -m pincompile.cli ARGS`` as a new process per run, without paying the imports
each time (over a second: the Kubernetes client, the models): a server process imports the
modules of the commands a test module runs, once, then forks a child per run. The child is
a process of its own with the run's environment, working directory, stdin (``/dev/null``),
stdout and stderr, and runs the CLI as ``-m`` does (``pincompile/cli.py`` as ``__main__``);
the interpreter's own exit (atexit, threads joined, an uncaught exception's traceback) and
the exit code are a real process's. Only the imported modules are shared, so a module that
reads the environment when imported would see the server's: the server is started with the
environment the runs share (no ``KUBECONFIG``), and each run's differs only in what the
commands read when they run (``HOME``, ``PINCOMPILE_CACHE``)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

SERVER = r"""
import json, os, runpy, sys
import importlib
for module in sys.argv[1:]:
    importlib.import_module(module)
requests = os.fdopen(0, "rb", buffering=0, closefd=False)
answers = os.fdopen(1, "w", buffering=1, closefd=False)
while line := requests.readline():
    run = json.loads(line)
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.chdir(run["cwd"])
        os.environ.clear()
        os.environ.update(run["env"])
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                                (1, run["stdout"], os.O_WRONLY | os.O_TRUNC),
                                (2, run["stderr"], os.O_WRONLY | os.O_TRUNC)):
            opened = os.open(path, flags)
            os.dup2(opened, fd)
            os.close(opened)
        sys.argv = ["pincompile", *run["args"]]
        runpy.run_module("pincompile.cli", run_name="__main__", alter_sys=True)
        sys.exit(0)
    print(json.dumps({"pid": pid}), file=answers)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"code": os.waitstatus_to_exitcode(status)}), file=answers)
"""


class ForkedCli:
    """Runs of the CLI forked from one server that imported ``modules`` (close it after)."""

    def __init__(self, modules: Sequence[str], env: dict[str, str], cwd: Path,
                 scratch: Path) -> None:
        self.scratch = scratch
        self.runs = 0
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, *modules], cwd=cwd,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.pending = b""

    def run(self, args: Sequence[str], env: dict[str, str], cwd: Path,
            timeout: float) -> subprocess.CompletedProcess[str]:
        """What ``subprocess.run([python, -m, pincompile.cli, *args], capture_output=True,
        text=True)`` returns (a run past ``timeout`` is killed: TimeoutExpired)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.runs += 1
        out, err = (self.scratch / f"run{self.runs}.{name}" for name in ("out", "err"))
        out.touch()
        err.touch()
        self.proc.stdin.write(json.dumps({"args": list(args), "env": env, "cwd": str(cwd),
                                          "stdout": str(out), "stderr": str(err)}
                                         ).encode() + b"\n")
        self.proc.stdin.flush()
        pid = json.loads(self._answer(60))["pid"]
        deadline = time.monotonic() + timeout
        try:
            code = json.loads(self._answer(deadline - time.monotonic()))["code"]
        except subprocess.TimeoutExpired:
            os.kill(pid, 9)
            self._answer(60)
            raise subprocess.TimeoutExpired(args, timeout) from None
        return subprocess.CompletedProcess(list(args), code, out.read_text(), err.read_text())

    def _answer(self, timeout: float) -> str:
        """The server's next line (its pipe read unbuffered, so select sees what is left)."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            ready, _, _ = select.select([self.proc.stdout], [], [],
                                        max(deadline - time.monotonic(), 0))
            if not ready:
                raise subprocess.TimeoutExpired("the CLI's fork server", timeout)
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError(f"the CLI's fork server ended (exit {self.proc.wait()})")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line.decode()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
