"""Security rules: a capability, root, a privileged or hostPath-using injected container only
where the project's policy allows it, each error located where it is written; the
RuntimeProfile's volumes are of the kinds Pod Security ``restricted`` admits."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pincompile.compiler import compile_path
from tests.support.expand import PLATFORM, write_repo

APP = "apps/search/web.yaml"


def app(container: str = "", template: str = "") -> str:
    return f"""\
apiVersion: pincompute.io/v1
kind: PinApp
metadata: {{name: web, project: search}}
spec:
  replicas: 1
  template:
    containers:
      - name: main
        image: registry.internal/web:1.0.0
{container}{template}"""


def problems(tmp: Path, files: dict[str, str], policy: str | None = None
             ) -> list[tuple[str, str, str]]:
    """(file:line:column, code, message) of every problem of the golden fleet plus
    ``files``, project search given ``policy``."""
    root = tmp / "repo"
    shutil.copytree(PLATFORM, root)
    if policy is not None:
        projects = root / "platform" / "projects.yaml"
        projects.write_text(projects.read_text().replace(
            "  owners: [team-search, search-oncall]\n",
            f"  owners: [team-search, search-oncall]\n  policy: {policy}\n", 1))
    write_repo(root, files)
    result = compile_path(root, revision="test", expand=False)
    return [(d.location(), d.code, d.message) for d in result.diagnostics]


def test_a_capability_the_project_does_not_allow(tmp_path: Path) -> None:
    spec = app("        capabilities: [NET_BIND_SERVICE, NET_ADMIN]\n")
    assert problems(tmp_path, {APP: spec}, "{allowCapabilities: [NET_BIND_SERVICE]}") == [
        (f"{APP}:10:42", "policy-capability",
         "capability NET_ADMIN is not allowed in project 'search' (policy.allowCapabilities "
         "does not list it)")]
    assert problems(tmp_path / "allowed", {APP: spec},
                    "{allowCapabilities: [NET_ADMIN, NET_BIND_SERVICE]}") == []


def test_root_needs_allow_run_as_root(tmp_path: Path) -> None:
    spec = app("        runAsUser: 0\n        runAsGroup: 0\n")
    assert problems(tmp_path, {APP: spec}) == [
        (f"{APP}:10:20", "policy-run-as-root",
         "root is not allowed in project 'search' (policy.allowRunAsRoot is false)")]
    assert problems(tmp_path / "allowed", {APP: spec}, "{allowRunAsRoot: true}") == []
    assert problems(tmp_path / "non-root", {APP: app("        runAsUser: 1000\n")}) == []


def test_an_unknown_capability_is_a_schema_error_with_a_suggestion(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(PLATFORM, root)
    write_repo(root, {APP: app("        capabilities: [CAP_NET_ADMIN]\n")})
    found = compile_path(root, revision="test", expand=False).diagnostics
    assert [(d.location(), d.code) for d in found] == [(f"{APP}:10:24", "invalid-enum")]
    assert found[0].hint == "did you mean 'NET_ADMIN'?"


MESH_INIT = """\
apiVersion: pincompute.io/v1
kind: PinterestSideCar
metadata: {name: mesh-init}
spec:
  inject: INJECT
  appliesTo: [PinApp]
  container:
    image: registry.internal/mesh-init:1.0.0
    resources: {cpu: 10m, memory: 16Mi}
    capabilities: [NET_ADMIN]
"""


def test_an_opt_in_sidecar_is_refused_where_the_workload_lists_it(tmp_path: Path) -> None:
    files = {"platform/mesh-init.yaml": MESH_INIT.replace("INJECT", "opt-in"),
             APP: app(template="    sidecars: [mesh-init]\n")}
    assert problems(tmp_path, files) == [
        (f"{APP}:10:16", "policy-capability",
         "managed sidecar 'mesh-init' needs capability NET_ADMIN, which project 'search' does "
         "not allow (policy.allowCapabilities does not list it)")]
    assert problems(tmp_path / "allowed", files, "{allowCapabilities: [NET_ADMIN]}") == []


def test_an_always_injected_sidecar_is_refused_once_per_project(tmp_path: Path) -> None:
    files = {"platform/mesh-init.yaml": MESH_INIT.replace("INJECT", "always"),
             APP: app(), "apps/search/api.yaml": app().replace("name: web", "name: api")}
    assert problems(tmp_path, files) == [
        ("platform/mesh-init.yaml:10:20", "policy-capability",
         "managed sidecar 'mesh-init' is injected into pods of project 'search' and needs "
         "capability NET_ADMIN, which project 'search' does not allow "
         "(policy.allowCapabilities does not list it)")]


def test_a_privileged_sidecar_with_a_host_path_needs_both_flags(tmp_path: Path) -> None:
    sidecar = MESH_INIT.replace("INJECT", "opt-in").replace(
        "    capabilities: [NET_ADMIN]\n", "    privileged: true\n") + (
        "  volumes: [{name: proc, type: hostPath, path: /proc, mountPath: /host/proc}]\n")
    files = {"platform/mesh-init.yaml": sidecar, APP: app(template="    sidecars: [mesh-init]\n")}
    assert [(at, code) for at, code, _ in problems(tmp_path, files)] == [
        (f"{APP}:10:16", "policy-host-path"), (f"{APP}:10:16", "policy-privileged")]
    assert problems(tmp_path / "allowed", files,
                    "{allowPrivileged: true, allowHostPath: true}") == []


def test_a_runtime_init_container_with_a_capability(tmp_path: Path) -> None:
    runtime = (PLATFORM / "platform" / "runtime.yaml").read_text().replace(
        "      resources: {cpu: 50m, memory: 64Mi}\n",
        "      resources: {cpu: 50m, memory: 64Mi}\n      capabilities: [CHOWN]\n")
    assert problems(tmp_path, {"platform/runtime.yaml": runtime, APP: app()}) == [
        ("platform/runtime.yaml:13:22", "policy-capability",
         "the RuntimeProfile's init container goes into every pod of project 'search' and "
         "needs capability CHOWN, which the project does not allow (policy.allowCapabilities "
         "does not list it)")]


@pytest.mark.parametrize("source", ["hostPath: {path: /var/log}", "nfs: {server: n, path: /}"])
def test_a_runtime_profile_volume_restricted_refuses(tmp_path: Path, source: str) -> None:
    runtime = (PLATFORM / "platform" / "runtime.yaml").read_text().replace(
        "    - {name: logs, emptyDir: {}}\n", f"    - {{name: logs, {source}}}\n")
    found = problems(tmp_path, {"platform/runtime.yaml": runtime})
    kind = source.split(":")[0]
    assert found == [(f"platform/runtime.yaml:18:{20 + len(kind) + 2}",
                      "pod-security-volume",
                      f"volume 'logs' ({kind}) goes into every workload pod, and Pod Security "
                      "restricted, which project namespaces enforce by default, refuses it")]


def test_the_writable_tmp_volume_name_is_the_platforms(tmp_path: Path) -> None:
    spec = app(template="    volumes: [{name: pincompute-tmp, type: emptyDir, "
                        "mountPath: /scratch}]\n")
    assert [(at, code) for at, code, _ in problems(tmp_path, {APP: spec})] == [
        (f"{APP}:10:22", "duplicate-volume")]


def test_the_profile_may_not_make_root_the_default(tmp_path: Path) -> None:
    runtime = (PLATFORM / "platform" / "runtime.yaml").read_text().replace(
        "spec:\n", "spec:\n  security: {runAsUser: 0}\n", 1)
    assert [code for _, code, _ in problems(tmp_path, {"platform/runtime.yaml": runtime})] == [
        "invalid-value"]
