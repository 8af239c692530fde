"""Helpers for serve's tests: a real bare git repository with a clone to push from, serve as a
child process, and HTTP calls."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.support.git import git
from tests.support.wait import wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "examples"
FAKE_RUNNER_DIR = REPO_ROOT / "tests" / "reconciler" / "serve"
"""Where ``fake_runner`` (``--runner fake_runner:factory``) is."""
BAD_SPEC = """apiVersion: pincompute.io/v1
kind: PinApp
metadata: {name: broken, project: search}
spec:
  replicas: many
"""


class SpecRepo:
    """``bare`` is what serve follows; ``work`` is a clone that commits and pushes."""

    def __init__(self, tmp: Path, specs: Path = EXAMPLES, clusters: Path | None = None) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        self.bare = tmp / "platform.git"
        self.work = tmp / "work"
        git(tmp, "init", "--quiet", "--bare", "--initial-branch=main", str(self.bare))
        git(tmp, "clone", "--quiet", str(self.bare), str(self.work))
        git(self.work, "checkout", "--quiet", "-b", "main")
        shutil.copytree(specs, self.work, dirs_exist_ok=True)
        if clusters is not None:  # only the Cluster specs (the fleet's may sit beside others)
            target = self.work / "platform" / "clusters"
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            sources = [clusters] if clusters.is_file() else sorted(clusters.rglob("*.yaml"))
            for index, source in enumerate(sources):
                docs = [d for d in yaml.safe_load_all(source.read_text())
                        if isinstance(d, dict) and d.get("kind") == "Cluster"]
                if docs:
                    (target / f"{index:02d}-{source.name}").write_text(
                        yaml.safe_dump_all(docs, sort_keys=False))
        self.counter = 0
        self.first = self.commit("initial specs")

    def commit(self, subject: str, files: dict[str, str] | None = None,
               branch: str = "main") -> str:
        """Commit (a change to a marker file unless ``files`` says what) and push."""
        self.counter += 1
        for name, text in (files or {"apps/search/push-marker.yaml":
                                     f"# push {self.counter}\n"}).items():
            path = self.work / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        git(self.work, "add", "-A")
        git(self.work, "commit", "--quiet", "-m", subject)
        git(self.work, "push", "--quiet", "origin", f"HEAD:refs/heads/{branch}")
        return git(self.work, "rev-parse", "HEAD")

    def remove(self, name: str) -> None:
        (self.work / name).unlink()


def http(method: str, url: str, body: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def get_json(url: str) -> Any:
    status, body = http("GET", url)
    assert status == 200, body
    return json.loads(body)


def serve_status(base: str) -> dict[str, Any]:
    """The ``serve`` part of ``GET /status`` (leadership, the last pass)."""
    document = get_json(f"{base}/status")
    assert set(document) == {"apps", "serve"}, document
    return document["serve"]  # type: ignore[no-any-return]


class ServeProcess:
    """``pincompile serve`` as a child process: with the recording fake runner, or with the
    real reconciler (``real=True``; ``record`` then only names the log file)."""

    def __init__(self, repo: Path | str, record: Path, *args: str, delay: float = 0.0,
                 identity: str = "", env: dict[str, str] | None = None,
                 real: bool = False, open_status: bool = True) -> None:
        self.record = record
        environment = {k: v for k, v in os.environ.items()
                       if k not in ("PINCOMPILE_WEBHOOK_SECRET", "PINCOMPILE_STATUS_TOKEN")}
        environment |= {"PYTHONPATH": str(FAKE_RUNNER_DIR),
                        "SERVE_FAKE_RECORD": str(record), "SERVE_FAKE_DELAY": str(delay),
                        "SERVE_FAKE_IDENTITY": identity,
                        "PINCOMPILE_STORE": "sqlite:///" + str(
                            record.with_suffix(f".{identity or 'serve'}.db")),
                        **(env or {})}
        command = [sys.executable, "-m", "pincompile.cli", "serve", "--repo", str(repo),
                   "--listen", "127.0.0.1:0", "--coalesce", "0.2", *args]
        if open_status:  # the tests read /status and /metrics without a token
            command.append("--open-status")
        if not real:
            command += ["--runner", "fake_runner:factory"]
        if identity:
            command += ["--identity", identity]
        self.log = record.with_suffix(f".{identity or 'serve'}.log")
        self.proc = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL,
                                     stderr=self.log.open("w"), cwd=REPO_ROOT)
        pattern = re.compile(r"on (http://127\.0\.0\.1:\d+) as")

        def listening() -> re.Match[str] | bool:
            """Where serve listens, once it says so; True once it ended without."""
            return pattern.search(self.log.read_text()) or self.proc.poll() is not None

        with contextlib.suppress(AssertionError):  # the shared test machine can be very slow
            found = wait_for(listening, 420, "serve to listen")
            if isinstance(found, re.Match):
                self.base = found.group(1)
                return
        self.proc.kill()
        raise AssertionError(f"serve did not start:\n{self.log.read_text()}")

    def passes(self, event: str = "applied") -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        lines = [json.loads(line) for line in self.record.read_text().splitlines()]
        return [line for line in lines if line["event"] == event]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


def image_of(deployment: Any) -> str:
    return str(deployment.spec.template.spec.containers[0].image)


class ImageWatch:
    """Watches the Deployment ``namespace/name`` in each of ``clusters`` from now on: when
    it first ran ``image`` there, and every image it was seen with (in order)."""

    def __init__(self, api: Callable[[str], Any], image: str, clusters: tuple[str, ...],
                 namespace: str = "shop", name: str = "api") -> None:
        from kubernetes import client, watch

        self.image = image
        self.reached: dict[str, float] = {}
        self.seen: dict[str, list[str]] = {c: [] for c in clusters}
        self.watches = {c: watch.Watch() for c in clusters}
        self.threads: list[threading.Thread] = []
        self.stopped = threading.Event()
        for cluster in clusters:
            apps = client.AppsV1Api(api(cluster))
            current = apps.read_namespaced_deployment(name, namespace)
            self.seen[cluster].append(image_of(current))
            thread = threading.Thread(target=self._follow, daemon=True, args=(
                cluster, apps, namespace, name, current.metadata.resource_version))
            thread.start()
            self.threads.append(thread)

    def _follow(self, cluster: str, apps: Any, namespace: str, name: str,
                version: str) -> None:
        """Follow the watch; when the server ends it (or sends an error), read the object
        again and watch on from there, until :meth:`stop`."""
        import urllib3
        from kubernetes.client.exceptions import ApiException

        while not self.stopped.is_set():
            try:
                for event in self.watches[cluster].stream(
                        apps.list_namespaced_deployment, namespace,
                        field_selector=f"metadata.name={name}", resource_version=version,
                        timeout_seconds=600):
                    if not isinstance(event, dict):
                        continue  # the client yields None for a blank keep-alive line
                    obj = event.get("object")
                    if event.get("type") == "ERROR" or getattr(obj, "spec", None) is None:
                        break
                    self._saw(cluster, image_of(obj))
                    version = obj.metadata.resource_version
            except (urllib3.exceptions.HTTPError, ApiException):
                pass
            if self.stopped.is_set():
                return
            time.sleep(0.05)
            try:
                current = apps.read_namespaced_deployment(name, namespace)
            except (urllib3.exceptions.HTTPError, ApiException):
                continue
            self._saw(cluster, image_of(current))
            version = current.metadata.resource_version

    def _saw(self, cluster: str, image: str) -> None:
        if image != self.seen[cluster][-1]:
            self.seen[cluster].append(image)
        if image == self.image and cluster not in self.reached:
            self.reached[cluster] = time.monotonic()

    def everywhere(self) -> float | None:
        """When the last cluster got the image (None: not yet everywhere)."""
        if len(self.reached) < len(self.seen):
            return None
        return max(self.reached.values())

    def stop(self) -> None:
        self.stopped.set()
        for w in self.watches.values():
            w.stop()
