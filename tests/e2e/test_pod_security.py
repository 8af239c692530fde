"""Secure by default, against the real kube-apiserver's Pod Security admission:

- every pod template of every spec tree the tests use (the examples, the reconciler's and
  the spec tests' fixture repositories, every golden case) is admitted in a namespace
  labelled as pincompile labels its project's (``restricted`` unless the policy earns more);
- what a project's policy allows (``NET_BIND_SERVICE``; root and ``CHOWN``; ``NET_ADMIN``)
  compiles to ``restricted``, ``baseline`` and ``privileged`` namespaces whose pods become
  Ready;
- a capability, root, a hostPath volume or a privileged container the policy does not allow
  is refused by ``validate`` at the field, and, applied by hand, by the API server.

What only a real API server tells: which pods its admission refuses. Every test works in
namespaces of its own and deletes them afterwards.
"""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pincompile.compiler import compile_path
from pincompile.manifest import Manifest
from tests.e2e.runnable_apply import (
    EXAMPLES,
    Applier,
    Kube,
    by_cluster,
    compile_tree,
    delete_namespaces,
    deployment_rolled_out,
    platform_copy,
)
from tests.support.expand import GOLDEN, PLATFORM, REPO, expand, load
from tests.support.specs import FIXTURE as SPEC_FIXTURE
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

CLUSTER = "use1a-general-02"
PSA = "pod-security.kubernetes.io"
FIXTURE_TREES = [EXAMPLES, REPO / "tests" / "reconciler" / "fixtures" / "repo",
                 REPO / "tests" / "reconciler" / "fixtures" / "failover", SPEC_FIXTURE]
GOLDEN_CASES = sorted(p for p in GOLDEN.iterdir() if (p / "input").is_dir())


def _trees() -> Iterator[tuple[str, list[Manifest]]]:
    """(name, every object) of each spec tree the tests compile: fixture repositories as
    ``validate`` compiles them, golden cases with their hand-written placement."""
    for root in FIXTURE_TREES:
        yield root.relative_to(REPO).as_posix(), compile_tree(root).manifests
    for case in GOLDEN_CASES:
        catalog, _ = load(PLATFORM, case / "input")
        plan = yaml.safe_load((case / "plan.yaml").read_text())
        plan.pop("scope", None)
        manifests, problems = expand(catalog, plan, revision="e2e")
        assert not problems, problems
        yield f"golden/{case.name}", manifests


def _pod_specs(node: Any) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(pod metadata, pod spec) of every pod (template) in an object."""
    if isinstance(node, dict):
        spec = node.get("spec")
        if isinstance(spec, dict) and "containers" in spec:
            yield node.get("metadata") or {}, spec
            return
        for value in node.values():
            yield from _pod_specs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _pod_specs(value)


def _levels(manifests: list[Manifest]) -> dict[str, str]:
    return {m.obj["metadata"]["name"]: m.obj["metadata"]["labels"][f"{PSA}/enforce"]
            for m in manifests if m.kind == "Namespace"}


def _create_missing_priority_classes(scheduling: Any, manifests: list[Manifest]) -> list[str]:
    """Create the PriorityClasses the pods name that the cluster lacks, unlabelled (the
    compiled ones, applied, would be taken for the examples' own and pruned or updated by
    the session's other tests); return their names."""
    created = []
    for m in manifests:
        if m.kind == "PriorityClass" and not scheduling.list_priority_class(
                field_selector=f"metadata.name={m.name}").items:
            scheduling.create_priority_class({"metadata": {"name": m.name},
                                              "value": m.obj["value"]})
            created.append(m.name)
    return created


def test_every_fixture_pod_is_admitted_at_its_namespaces_level(kube: Kube) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core: Any = client.CoreV1Api(kube(CLUSTER))
    suffix = uuid.uuid4().hex[:6]
    namespaces = {level: f"e2e-psa-{level}-{suffix}"
                  for level in ("restricted", "baseline", "privileged")}
    refused: list[str] = []
    admitted: dict[str, int] = {}
    not_restricted: dict[str, str] = {}
    created: list[str] = []  # PriorityClasses the fleet lacked (the pods name them)
    scheduling: Any = client.SchedulingV1Api(kube(CLUSTER))
    try:
        for level, ns in namespaces.items():
            core.create_namespace({"metadata": {"name": ns, "labels": {
                f"{PSA}/enforce": level, f"{PSA}/enforce-version": "latest"}}})
        for name, manifests in _trees():
            levels = _levels(manifests)
            created += _create_missing_priority_classes(scheduling, manifests)
            for m in manifests:
                for i, (meta, spec) in enumerate(_pod_specs(m.obj)):
                    level = levels[m.obj["metadata"]["namespace"]]
                    if level != "restricted":
                        not_restricted[m.obj["metadata"]["namespace"]] = level
                    ns = namespaces[level]
                    account = spec.get("serviceAccountName")
                    if account and not core.list_namespaced_service_account(
                            ns, field_selector=f"metadata.name={account}").items:
                        core.create_namespaced_service_account(ns, {"metadata": {
                            "name": account}})
                    pod = {"apiVersion": "v1", "kind": "Pod", "spec": spec, "metadata": {
                        "name": f"psa-{i}", "labels": meta.get("labels", {})}}
                    what = f"{name}: {m.cluster}/{m.kind}/{m.name} at {level}"
                    try:
                        core.create_namespaced_pod(ns, pod, dry_run="All")
                    except ApiException as exc:
                        refused.append(f"{what}: {exc.status} {exc.body}")
                    else:
                        admitted[level] = admitted.get(level, 0) + 1
        assert refused == []
        # 91 pod templates, all under restricted but those of the system projects (host
        # network, privileged, hostPath) and of the node-agent sidecar (host network)
        assert not_restricted == {"pincompute-system": "privileged",
                                  "infra-system": "privileged",
                                  "pincompute-sidecars": "privileged"}
        assert admitted["restricted"] > 50, admitted
    finally:
        delete_namespaces(kube, [CLUSTER], namespaces.values())
        for name in created:
            scheduling.delete_priority_class(name)


RUNTIME = """\
apiVersion: pincompute.io/v1
kind: RuntimeProfile
metadata: {name: default}
spec:
  defaultResources: {cpu: 100m, memory: 64Mi}
  security: {runAsUser: 10001, runAsGroup: 10001, fsGroup: 10001, readOnlyRootFilesystem: true}
"""


def _tree(tmp: Path, projects: dict[str, tuple[str, str]]) -> Path:
    """The fleet's clusters, a secure RuntimeProfile and ``projects``: name → (policy, its
    apps' file)."""
    root = platform_copy(tmp, clusters_only=True)
    (root / "platform" / "runtime.yaml").write_text(RUNTIME)
    for name, (policy, apps) in projects.items():
        (root / "platform" / f"{name}.yaml").write_text(textwrap.dedent(f"""\
            apiVersion: pincompute.io/v1
            kind: Project
            metadata: {{name: {name}}}
            spec:
              owners: [team-e2e]
              quota: {{ondemand: {{cpu: "8", memory: 8Gi}}}}
              policy: {policy}
            """))
        (root / "apps" / name).mkdir(parents=True)
        (root / "apps" / name / "apps.yaml").write_text(apps)
    return root


def _app(name: str, project: str, container: str) -> str:
    return textwrap.dedent(f"""\
        ---
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {{name: {name}, project: {project}}}
        spec:
          replicas: 1
          placement: {{clusters: [{CLUSTER}], spread: none}}
          template:
            containers:
              - {{name: main, image: "registry.internal/e2e/app:1.0", {container}}}
        """)


def test_what_a_policy_earns_is_admitted_and_becomes_ready(fleet: Any, kube: Kube,
                                                           tmp_path: Path) -> None:
    from kubernetes import client

    base = f"e2e-{uuid.uuid4().hex[:6]}"
    r, b, p = f"{base}-r", f"{base}-b", f"{base}-p"
    root = _tree(tmp_path, {
        r: ("{allowCapabilities: [NET_BIND_SERVICE]}",
            _app("web", r, "capabilities: [NET_BIND_SERVICE]")),
        b: ("{allowRunAsRoot: true, allowCapabilities: [CHOWN]}",
            _app("legacy", b, "runAsUser: 0, capabilities: [CHOWN]")),
        p: ("{allowCapabilities: [NET_ADMIN]}", _app("mesh", p, "capabilities: [NET_ADMIN]"))})
    objs = by_cluster(compile_tree(root).manifests)[CLUSTER]
    levels = {o["metadata"]["name"]: o["metadata"]["labels"][f"{PSA}/enforce"]
              for o in objs if o["kind"] == "Namespace"}
    assert levels == {r: "restricted", b: "baseline", p: "privileged"}
    apps_api: Any = client.AppsV1Api(kube(CLUSTER))
    try:
        Applier(fleet, CLUSTER).apply_all(objs)
        for project, name in ((r, "web"), (b, "legacy"), (p, "mesh")):
            wait_for(lambda: deployment_rolled_out(apps_api, project, name),  # noqa: B023
                     120, f"{project}/{name} Ready", interval=1.0)
        pod = client.CoreV1Api(kube(CLUSTER)).list_namespaced_pod(
            b, label_selector="pincompute.io/app=legacy").items[0]
        assert pod.spec.containers[0].security_context.run_as_user == 0
    finally:
        delete_namespaces(kube, [CLUSTER], [r, b, p])


PINPOD = """\
apiVersion: pincompute.io/v1
kind: PinPod
metadata: {{name: forbidden, project: {project}}}
spec:
  placement: {{clusters: [{cluster}]}}
  containers:
    - {{name: main, image: "registry.internal/e2e/shell:1.0", {container}}}
{extra}"""


@pytest.mark.parametrize(("container", "extra", "at", "code", "refusal"), [
    ("capabilities: [NET_ADMIN]", "", "7:77", "policy-capability",
     ("unrestricted capabilities", "NET_ADMIN")),
    ("runAsUser: 0", "", "7:73", "policy-run-as-root", ("runAsUser=0",)),
    ("privileged: true", "", "7:74", "policy-privileged", ("privileged",)),
    ("resources: {cpu: 100m}",
     "  volumes: [{name: host, type: hostPath, path: /etc, mountPath: /host}]\n", "8:32",
     "policy-host-path", ("restricted volume types", "hostPath")),
], ids=["capability", "root", "privileged", "hostPath"])
def test_what_the_policy_forbids_is_refused_by_validate_and_the_api_server(
        fleet: Any, kube: Kube, tmp_path: Path, container: str, extra: str, at: str, code: str,
        refusal: tuple[str, ...]) -> None:
    from kubernetes.client.exceptions import ApiException

    project = f"e2e-{uuid.uuid4().hex[:6]}"
    spec = PINPOD.format(project=project, cluster=CLUSTER, container=container, extra=extra)
    root = _tree(tmp_path, {project: ("{}", spec)})
    result = compile_path(root, revision="e2e")
    assert [(f"{d.file}:{d.line}:{d.column}", d.code) for d in result.diagnostics] == [
        (f"apps/{project}/apps.yaml:{at}", code)]
    objs = by_cluster(result.manifests)[CLUSTER]
    namespace = next(o for o in objs if o["kind"] == "Namespace")
    assert namespace["metadata"]["labels"][f"{PSA}/enforce"] == "restricted"
    applier = Applier(fleet, CLUSTER)
    try:
        applier.apply_all(o for o in objs if o["kind"] != "Pod")
        with pytest.raises(ApiException) as refused:  # by hand: what compile wrote anyway
            applier.apply(next(o for o in objs if o["kind"] == "Pod"))
        assert refused.value.status == 403
        assert "violates PodSecurity \\\"restricted:latest\\\"" in refused.value.body
        assert all(word in refused.value.body for word in refusal), refused.value.body
    finally:
        delete_namespaces(kube, [CLUSTER], [project])
