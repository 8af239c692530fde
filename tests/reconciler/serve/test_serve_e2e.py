"""``pincompile serve`` with the REAL reconciler, end to end on the exclusive fleet (serve
reconciles its whole repository, prunes included: it must be the fleet's only reconciler).

A bare git repository on disk holds the reconciler's fixture specs (three zonal member
clusters); ``serve`` runs as a child process against the fleet; a commit pushed to the bare
repository and announced with a signed webhook must become live in the member clusters.
The tests run in file order and build on the state the previous one left, as pushes do.
Every API request ``serve`` makes is recorded (``PINCOMPILE_RECORD_REQUESTS``) for the
RBAC test (``test_rbac_e2e.py``).
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rbac_rules import CHECK_ONLY_VERBS, SERVICE_ACCOUNT, allowed, documents, grants

from reconciler.clients.record import AccessRequest, read_requests
from reconciler.fleet import fleet as fleet_mod
from reconciler.serve.webhooks import GENERIC_SIGNATURE_HEADER, sign
from tests.reconciler.store.postgres import postgres_server
from tests.support.fleet import host_status_follows, scale_and_wait
from tests.support.serve import (
    BAD_SPEC,
    ImageWatch,
    ServeProcess,
    SpecRepo,
    get_json,
    git,
    http,
    image_of,
    serve_status,
)
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
FIXTURE_REPO = Path(__file__).parents[1] / "fixtures" / "repo"
SECRET = "e2e-secret"
API_SPEC = "apps/shop/api.yaml"
#: Member clusters the fixture's ``api`` app lands in (spread over two zones).
API_CLUSTERS = ("rt-b", "rt-c")


@pytest.fixture(scope="module")
def serve_fleet(exclusive_fleet: fleet_mod.FleetState) -> fleet_mod.FleetState:
    """Three member clusters of the repository's (rt-a, rt-b, rt-c) and a host."""
    return exclusive_fleet


@pytest.fixture(scope="module")
def api(serve_fleet: fleet_mod.FleetState) -> Iterator[Callable[[str], Any]]:
    from tests.conftest import api_clients

    with api_clients(serve_fleet.kubeconfig) as get:
        yield get


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("serve-e2e")


@pytest.fixture(scope="module")
def repo(workdir: Path) -> SpecRepo:
    return SpecRepo(workdir / "repo", specs=FIXTURE_REPO)


@pytest.fixture(scope="module")
def host_ns(api: Callable[[str], Any]) -> str:
    """serve's --namespace: the one the shipped RBAC (contrib/serve/) gives it."""
    from kubernetes import client

    client.CoreV1Api(api("host")).create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=SERVICE_ACCOUNT[0])))
    return SERVICE_ACCOUNT[0]


@pytest.fixture(scope="module")
def store_url() -> Iterator[str]:
    """The insight store every replica of this module shares: a real PostgreSQL server."""
    with (tempfile.TemporaryDirectory(prefix="pincompile-pg-") as base,
          postgres_server(Path(base)) as url):
        yield url


@pytest.fixture(scope="module")
def serve(serve_fleet: fleet_mod.FleetState, repo: SpecRepo, host_ns: str,
          workdir: Path, store_url: str) -> Iterator[ServeProcess]:
    process = ServeProcess(
        repo.bare, workdir / "audit.jsonl", "--kubeconfig", str(serve_fleet.kubeconfig),
        "--namespace", host_ns, "--audit-log", str(workdir / "audit.jsonl"),
        "--lease-duration", "8s", "--renew-deadline", "5s", "--retry-period", "1s",
        "--resync", "30m",  # passes come from pushes only: a test can tell one ran
        identity="serve-e2e", real=True,
        env={"PINCOMPILE_WEBHOOK_SECRET": SECRET, "PINCOMPILE_STORE": store_url,
             "PINCOMPILE_RECORD_REQUESTS": str(workdir / "requests.jsonl")})
    yield process
    process.stop()


@pytest.fixture(scope="module")
def restricted_kubeconfig(serve_fleet: fleet_mod.FleetState, api: Callable[[str], Any],
                          workdir: Path) -> Path:
    """The shipped RBAC applied to the host and every member; a kubeconfig whose every
    context authenticates as serve's ServiceAccount there (a TokenRequest token)."""
    import yaml
    from kubernetes import client
    from kubernetes.dynamic import DynamicClient

    config = yaml.safe_load(Path(serve_fleet.kubeconfig).read_text())
    users = []
    for context in config["contexts"]:
        name = context["name"]
        dynamic = DynamicClient(api(name))
        for doc in documents("rbac-host.yaml" if name == "host" else "rbac-member.yaml"):
            meta = doc["metadata"]
            dynamic.server_side_apply(
                dynamic.resources.get(api_version=doc["apiVersion"], kind=doc["kind"]),
                body=doc, name=meta["name"], namespace=meta.get("namespace"),
                field_manager="serve-e2e")
        token = client.CoreV1Api(api(name)).create_namespaced_service_account_token(
            SERVICE_ACCOUNT[1], SERVICE_ACCOUNT[0], client.AuthenticationV1TokenRequest(
                spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)))
        users.append({"name": f"serve-{name}", "user": {"token": token.status.token}})
        context["context"]["user"] = f"serve-{name}"
    config["users"] = users
    path = workdir / "serve-kubeconfig.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def restricted_serve(restricted_kubeconfig: Path, repo: SpecRepo, host_ns: str,
                     workdir: Path, store_url: str) -> Iterator[ServeProcess]:
    process = ServeProcess(
        repo.bare, workdir / "restricted.jsonl", "--kubeconfig", str(restricted_kubeconfig),
        "--namespace", host_ns, "--lease-duration", "8s", "--renew-deadline", "5s",
        "--retry-period", "1s", identity="serve-restricted", real=True,
        env={"PINCOMPILE_WEBHOOK_SECRET": SECRET, "PINCOMPILE_STORE": store_url,
             "PINCOMPILE_RECORD_REQUESTS": str(workdir / "requests.jsonl")})
    yield process
    process.stop()


def delivery_of(sha: str) -> str:
    """The delivery id :func:`push_hook` sends for ``sha``."""
    return f"delivery-{sha[:12]}"


def push_hook(base: str, sha: str) -> float:
    """Announce ``sha`` with a signed generic webhook; the instant serve answered 202."""
    body = json.dumps({"ref": "refs/heads/main", "after": sha}).encode()
    status, answer = http("POST", f"{base}/webhooks/generic", body,
                          {"Content-Type": "application/json",
                           "X-Pincompile-Delivery": delivery_of(sha),
                           GENERIC_SIGNATURE_HEADER: sign(SECRET.encode(), body)})
    assert status == 202, answer
    return time.monotonic()


def api_spec(repo: SpecRepo, image: str) -> dict[str, str]:
    """The fixture's ``api`` app with another image."""
    text = (FIXTURE_REPO / API_SPEC).read_text()
    return {API_SPEC: re.sub(r"registry\.internal/shop/api:\S+", image, text)}


def test_the_first_pass_applies_the_repository(serve: ServeProcess, repo: SpecRepo,
                                               api: Callable[[str], Any]) -> None:
    from kubernetes import client

    state = wait_for(lambda: (s := serve_status(serve.base))["lastApplied"] and s, 300,
                     "serve's first pass")
    assert state["lastApplied"]["revision"] == repo.first
    assert state["lastPass"]["outcome"] == "applied", state["lastPass"]
    for cluster in API_CLUSTERS:
        live = client.AppsV1Api(api(cluster)).read_namespaced_deployment("api", "shop")
        assert image_of(live) == "registry.internal/shop/api:2.0.0"
        assert live.metadata.annotations["pincompute.io/revision"] == repo.first
    assert http("GET", f"{serve.base}/readyz")[0] == 200


def test_a_signed_push_is_live_in_every_target_cluster(serve: ServeProcess, repo: SpecRepo,
                                                       api: Callable[[str], Any]) -> None:
    image = "registry.internal/shop/api:2.0.1"
    watch = ImageWatch(api, image, API_CLUSTERS)
    try:
        sha = repo.commit("api: 2.0.1", files=api_spec(repo, image))
        accepted = push_hook(serve.base, sha)
        done = wait_for(watch.everywhere, 120, f"{image} in {API_CLUSTERS}")
    finally:
        watch.stop()
    latency = done - accepted
    print(f"push-to-applied (webhook 202 -> Deployment changed in {len(API_CLUSTERS)} "
          f"clusters): {latency:.2f}s")
    assert latency < 60, "a margin for the loaded test machine; the figure is in bench/"
    state = wait_for(lambda: (s := serve_status(serve.base))["lastApplied"]["revision"] == sha
                     and s, 120, "the pass recorded")
    last = state["lastPass"]
    assert last["trigger"] == "push" and last["subject"] == "api: 2.0.1"
    assert {c for c, r in last["clusters"].items()
            if "Deployment/shop/api" in r["updated"]} == set(API_CLUSTERS)
    assert last["push_to_applied_seconds"] is not None


def _pass_errors(base: str, stage: str) -> float:
    _, text = http("GET", f"{base}/metrics")
    found = re.search(rf'^pincompile_serve_pass_errors_total{{stage="{stage}"}} (\S+)$',
                      text.decode(), re.M)
    return float(found.group(1)) if found else 0.0


def test_a_push_that_fails_to_compile_applies_nothing_until_fixed(
        serve: ServeProcess, repo: SpecRepo, api: Callable[[str], Any], host_ns: str) -> None:
    from kubernetes import client

    applied = serve_status(serve.base)["lastApplied"]["revision"]
    before = _pass_errors(serve.base, "compile")
    bad_image = "registry.internal/shop/api:2.0.2-broken"
    watch = ImageWatch(api, bad_image, API_CLUSTERS)
    try:
        bad = repo.commit("api: 2.0.2 and a broken spec",
                          files={**api_spec(repo, bad_image), "apps/shop/broken.yaml": BAD_SPEC})
        push_hook(serve.base, bad)
        state = wait_for(lambda: (s := serve_status(serve.base))["lastPass"]["revision"] == bad
                         and s, 120, "the failed pass in /status")
        # the good part of the commit (the image) must not reach any cluster either
        time.sleep(5)
        assert watch.reached == {}, f"a broken push applied: {watch.seen}"
    finally:
        watch.stop()
    last = state["lastPass"]
    assert last["outcome"] == "compile-failed" and not last["ok"]
    assert any("apps/shop/broken.yaml:5" in d for d in last["diagnostics"]), last
    assert state["lastApplied"]["revision"] == applied
    assert _pass_errors(serve.base, "compile") == before + 1
    events = [e for e in client.CoreV1Api(api("host")).list_namespaced_event(host_ns).items
              if e.reason == "CompileFailed"]
    assert events and bad[:12] in events[-1].message and events[-1].type == "Warning"

    fixed_image = "registry.internal/shop/api:2.0.2"
    watch = ImageWatch(api, fixed_image, API_CLUSTERS)
    try:
        repo.remove("apps/shop/broken.yaml")
        good = repo.commit("api: 2.0.2, broken spec removed", files=api_spec(repo, fixed_image))
        push_hook(serve.base, good)
        wait_for(watch.everywhere, 120, f"{fixed_image} everywhere")
    finally:
        watch.stop()
    assert all(bad_image not in images for images in watch.seen.values()), watch.seen
    wait_for(lambda: serve_status(serve.base)["lastApplied"]["revision"] == good, 120,
             "the fixed push recorded as applied")


def test_a_warm_pass_dry_runs_only_objects_that_may_have_changed(
        serve: ServeProcess, repo: SpecRepo, workdir: Path) -> None:
    """A push that changes no object: the reconciler's plan memo skips the dry-run of every
    object whose desired content and live resourceVersion are what it last found unchanged
    (controllers still touch some objects' status, which plans those afresh)."""
    requests = workdir / "requests.jsonl"
    planned = []
    for round_ in range(2):
        wait_for(lambda: not serve_status(serve.base)["busy"], 120, "serve idle")
        time.sleep(3)  # let controllers finish with the previous pass's writes
        before = len(requests.read_text().splitlines())
        sha = repo.commit(f"no object changes ({round_})")
        push_hook(serve.base, sha)
        state = wait_for(lambda sha=sha: (s := serve_status(serve.base))["lastApplied"]
                         ["revision"] == sha and not s["busy"] and s, 120, "the no-op pass")
        members = {c: r for c, r in state["lastPass"]["clusters"].items() if c != "host"}
        assert all(not (r["created"] or r["updated"] or r["replaced"] or r["pruned"])
                   for r in members.values()), members
        objects = sum(r["unchanged"] for r in members.values())
        new = read_requests(str(requests))[before:]
        dry_runs = [r for r in new if r.dry_run and r.cluster != "host"]
        planned.append((len(dry_runs), objects))
    print(f"member dry-runs per no-op pass: {planned[0][0]} then {planned[1][0]} "
          f"(of {planned[1][1]} desired objects)")
    assert planned[1][0] <= planned[1][1] // 4, planned


def test_status_serves_the_apps_pincompile_status_shows(
        serve: ServeProcess, serve_fleet: fleet_mod.FleetState, repo: SpecRepo) -> None:
    from pincompile.cli import cli

    def cli_rows() -> Any:
        result = CliRunner().invoke(cli, ["status", "-o", "json", "--kubeconfig",
                                          str(serve_fleet.kubeconfig)])
        assert result.exit_code == 0, result.output
        return [(i["kind"], i["project"], i["name"], i["phase"], i["observedRevision"])
                for i in json.loads(result.output)["items"]]

    def same() -> Any:
        served = get_json(f"{serve.base}/status")["apps"]
        return [(r["kind"], r["project"], r["name"], r["status"].get("phase"),
                 r["status"].get("observedRevision")) for r in served
                if r["kind"] != "Cluster"] == cli_rows() and served

    wait_for(lambda: not serve_status(serve.base)["busy"], 120, "serve idle")
    rows = wait_for(same, 60, "/status apps equal to `pincompile status -o json`")
    apps = {(r["kind"], r["project"], r["name"]) for r in rows}
    assert ("PinApp", "shop", "api") in apps and ("PinApp", "shop", "web") in apps
    api_row = next(r for r in rows if r["name"] == "api" and r["kind"] == "PinApp")
    # the commit that last changed api (the pushes since left it alone), not serve's last
    changed_api = git(repo.work, "log", "-1", "--format=%H", "--", API_SPEC).strip()
    assert api_row["status"]["observedRevision"] == changed_api
    assert serve_status(serve.base)["lastApplied"]["revision"] != changed_api


@pytest.fixture(scope="module")
def shop_token(api: Callable[[str], Any]) -> str:
    """A host ServiceAccount token allowed to get and list PinApps in ``shop`` only."""
    from kubernetes import client

    core, rbac = client.CoreV1Api(api("host")), client.RbacAuthorizationV1Api(api("host"))
    core.create_namespace({"metadata": {"name": "tenants"}})
    core.create_namespaced_service_account("tenants", {"metadata": {"name": "reader"}})
    rbac.create_namespaced_role("shop", {
        "metadata": {"name": "app-reader"},
        "rules": [{"apiGroups": ["pincompute.io"], "resources": ["pinapps"],
                   "verbs": ["get", "list"]}]})
    rbac.create_namespaced_role_binding("shop", {
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "app-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "tenants"}]})
    return str(core.create_namespaced_service_account_token(
        "reader", "tenants", {"spec": {"expirationSeconds": 3600}}).status.token)


def test_the_api_serves_a_tenant_its_apps_history_and_events(
        serve: ServeProcess, repo: SpecRepo, shop_token: str,
        api: Callable[[str], Any]) -> None:
    from kubernetes import client

    wait_for(lambda: (serve_status(serve.base)["lastPass"] or {}).get("ok"), 300,
             "serve's first pass succeeds")
    auth = {"Authorization": f"Bearer {shop_token}"}

    def listed() -> Any:  # the first pass installed the CRDs: the API's watch finds them
        return json.loads(http("GET", f"{serve.base}/api/v1/apps", headers=auth)[1])["items"]

    listed = wait_for(listed, 30, "the API lists the tenant's apps", interval=0.5)
    assert {a["project"] for a in listed} == {"shop"}
    assert {"api", "web"} <= {a["name"] for a in listed if a["kind"] == "PinApp"}
    assert http("GET", f"{serve.base}/api/v1/apps")[0] == 401
    # the revision last applied to this app (a later push that left it alone keeps it)
    applied = next(a for a in listed if a["kind"] == "PinApp" and a["name"] == "api"
                   )["lastAppliedRevision"]

    def history() -> Any:
        status, body = http("GET", f"{serve.base}/api/v1/apps/PinApp/shop/api/history",
                            headers=auth)
        if status == 429:  # polled faster than --api-rate allows
            return None
        assert status == 200, body
        return [r for r in json.loads(body) if r["revision"] == applied]

    (revision,) = wait_for(history, 30, "the applied revision in the history", interval=0.2)
    assert revision["commit"] == applied and revision["author"]

    def pod_events() -> Any:
        status, body = http("GET", f"{serve.base}/api/v1/apps/PinApp/shop/api/events",
                            headers=auth)
        assert status in (200, 429), body
        return status == 200 and [e for e in json.loads(body) if e["source"] == "kubernetes"
                                  and e["reason"] == "Scheduled"]

    # the scheduler's Events of api's pods, from each member cluster it runs in
    scheduled = wait_for(lambda: (found := pod_events()) and {
        e["cluster"] for e in found} == set(API_CLUSTERS) and found, 60,
                         "the scheduler's Events of api's pods in the timeline", interval=0.5)
    assert all(e["object"].startswith("Pod/shop/api-") for e in scheduled), scheduled
    # the API servers drop Events after their TTL (here: deleted at once); the store keeps them
    for cluster in API_CLUSTERS:
        core = client.CoreV1Api(api(cluster))
        for event in core.list_namespaced_event(
                "shop", field_selector="involvedObject.kind=Pod,reason=Scheduled").items:
            core.delete_namespaced_event(event.metadata.name, "shop")
    time.sleep(3)  # two rounds of the collector
    kept = pod_events()
    assert kept and all(e in kept for e in scheduled), (scheduled, kept)


def test_host_status_follows_member_objects_between_passes(
        serve: ServeProcess, api: Callable[[str], Any], shop_token: str) -> None:
    """Someone scales web in rt-a: its host status says so within seconds, no pass run;
    its timeline has the scaling, as the member's Deployment and ReplicaSet Events."""
    from kubernetes import client

    wait_for(lambda: not serve_status(serve.base)["busy"], 120, "serve idle")
    last_pass = serve_status(serve.base)["lastPass"]
    replicas = int(client.AppsV1Api(api("rt-a")).read_namespaced_deployment(
        "web", "shop").spec.replicas) + 1
    scale_and_wait(api("rt-a"), "shop", "web", replicas)

    def rt_a_scaled(status: dict[str, Any]) -> bool:
        clusters = {c["name"]: c for c in status.get("clusters") or []}
        return bool(clusters.get("rt-a", {}).get("readyReplicas") == replicas)

    followed = host_status_follows(api("host"), "pinapps", "shop", "web", rt_a_scaled,
                                   timeout=30)
    print(f"host status followed {followed:.1f}s after the pods were ready")
    assert followed < 5.0
    assert serve_status(serve.base)["lastPass"] == last_pass  # no pass wrote it

    def scaling() -> Any:
        """web's Events in rt-a: the Deployment's scaling to ``replicas`` and its
        ReplicaSet's pods created."""
        status, body = http("GET", f"{serve.base}/api/v1/apps/PinApp/shop/web/events",
                            headers={"Authorization": f"Bearer {shop_token}"})
        assert status in (200, 429), body
        rt_a = [e for e in (json.loads(body) if status == 200 else [])
                if e["source"] == "kubernetes" and e["cluster"] == "rt-a"]
        scaled = [e for e in rt_a if e["reason"] == "ScalingReplicaSet"
                  and e["object"] == "Deployment/shop/web"
                  and e["message"].endswith(f" to {replicas}")]
        created = [e for e in rt_a if e["reason"] == "SuccessfulCreate"
                   and e["object"].startswith("ReplicaSet/shop/web-")]
        return scaled and created

    wait_for(scaling, 30, "web's scaling in rt-a in its timeline", interval=0.5)


def _check_requests(path: Path) -> list[AccessRequest]:
    """Every recorded request, each allowed by the shipped RBAC of its cluster."""
    rules = {"host": grants("rbac-host.yaml"), "member": grants("rbac-member.yaml")}
    requests = read_requests(str(path))
    refused = sorted({str(r) for r in requests
                      if not allowed(rules["host" if r.cluster == "host" else "member"], r)})
    assert not refused, "requests the shipped RBAC does not allow:\n" + "\n".join(refused)
    return requests


def test_every_request_serve_made_is_allowed_by_the_shipped_rbac(
        serve: ServeProcess, workdir: Path, api: Callable[[str], Any]) -> None:
    from kubernetes import client

    wait_for(lambda: (serve_status(serve.base)["lastPass"] or {}).get("ok"), 300,
             "serve's first pass succeeds")  # (when this test runs alone)
    requests = _check_requests(workdir / "requests.jsonl")
    assert {r.cluster for r in requests} == {"host", "rt-a", "rt-b", "rt-c"}
    # API groups this fleet does not serve (kubeflow.org: no training operator here)
    served = {g.name for g in client.ApisApi(api("rt-a")).get_api_versions().groups} | {""}
    # no grant is dead weight: each (verb, group, resource) was needed by a request, or is
    # listed in IDLE_GRANTS with the path that needs it
    for role, name in (("host", "rbac-host.yaml"), ("member", "rbac-member.yaml")):
        seen = [r for r in requests if (r.cluster == "host") == (role == "host")]
        exercised = {(r.verb, r.group, r.resource + (f"/{r.subresource}" if r.subresource
                                                     else "")) for r in seen}
        read = {(g, r) for v, g, r in exercised if v in ("list", "watch")}
        granted = {p for g in grants(name) for p in g.pairs()}
        idle = sorted(p for p in granted if p not in exercised and p[1] in served
                      and p[0] not in CHECK_ONLY_VERBS)
        unexplained = [p for p in idle if idle_reason(p, granted, read) is None]
        print(f"{name}: {len(idle)} granted (verb, group, resource) not exercised by this "
              f"run: {idle}")
        assert not unexplained, f"{name}: granted, never needed, no reason why: {unexplained}"


#: Grants a run need not exercise, each with the path that needs it. A ``*`` resource
#: stands for a kind serve reads (lists or watches) in this run but did not happen to write
#: or delete: its writes go through the same apply and prune as the kinds the run changes.
IDLE_GRANTS: dict[tuple[str, str, str], str] = {
    ("create", "*", "*"): "a server-side apply that creates an object is authorized as "
                          "create as well; the request itself is a PATCH (needs patch too)",
    ("patch", "*", "*"): "apply of a kind the fixture's specs do not change in this run",
    ("delete", "*", "*"): "prune, and replace (delete + create), of a kind this run removes "
                          "nothing of",
    ("get", "*", "*"): "one object read back: waiting for health, replacing an object, "
                       "an apply that met a conflict; this run reads by list and watch",
    ("list", "coordination.k8s.io", "leases"): "--shards: the roster of replicas",
    ("delete", "coordination.k8s.io", "leases"): "--shards: a replica removes its roster "
                                                 "Lease when it stops",
    ("patch", "coordination.k8s.io", "leases"): "--shards: a push relayed to another "
                                                "shard's leader is a note on its Lease",
    ("create", "", "pods/exec"): "the API's exec sessions (`pincompile exec`; a WebSocket "
                                 "exec is authorized as create): this run opens none",
    ("create", "", "pods/portforward"): "the API's forwarded connections (`pincompile "
                                        "port-forward`; a WebSocket is authorized as "
                                        "create): this run opens none",
    ("get", "apps", "replicasets"): "the insight store's lookup of the app of a ReplicaSet "
                                    "an Event names, once none of its pods is left to say "
                                    "(this run's pods say)",
    **dict.fromkeys([("list", "", "nodes"), ("watch", "", "nodes"),
                     ("list", "metrics.k8s.io", "pods")],
                    "a member's capacity and usage: the API's /clusters and /projects, and the "
                    "usage samples taken every 5 minutes (docs/capacity.md); this run asks "
                    "for neither and may end before the first sample"),
}


def idle_reason(grant: tuple[str, str, str], granted: set[tuple[str, str, str]],
                read: set[tuple[str, str]]) -> str | None:
    """Why ``grant`` may go unused in this run (None: it is dead weight)."""
    verb, group, resource = grant
    if grant in IDLE_GRANTS:
        return IDLE_GRANTS[grant]
    if (group, resource.split("/")[0]) not in read:
        return None  # a kind serve never reads: nothing of it is ever written either
    if verb == "create" and ("patch", group, resource) not in granted:
        return None
    return IDLE_GRANTS.get((verb, "*", "*"))

CART = {
    "platform/projects/cart.yaml": """apiVersion: pincompute.io/v1
kind: Project
metadata: {name: cart}
spec:
  namespace: cart
  owners: [team-cart]
  quota:
    ondemand: {cpu: "4", memory: 8Gi}
""",
    "apps/cart/web.yaml": """apiVersion: pincompute.io/v1
kind: PinApp
metadata: {name: cart-web, project: cart}
spec:
  replicas: 2
  tier: ondemand
  template:
    containers:
      - name: main
        image: registry.internal/cart/web:1.0.0
        ports: [{name: http, containerPort: 8080}]
        resources: {cpu: 100m, memory: 128Mi}
  placement: {clusters: [rt-a]}
  rollout: {strategy: all-at-once}
  service:
    ports: [{name: http, port: 80, targetPort: 8080}]
""",
}


def test_serve_reconciles_with_nothing_but_the_shipped_rbac(
        serve: ServeProcess, restricted_serve: ServeProcess, repo: SpecRepo,
        api: Callable[[str], Any], workdir: Path) -> None:
    """A replica whose kubeconfig holds only the ServiceAccount tokens: it updates (api),
    creates a project and an app (namespace, quotas, policies, the owners' RoleBinding to
    ``view``, Deployment, Service, PDB) and prunes a removed PinPod."""
    from kubernetes import client

    serve.stop()  # the admin-credentialed replica; the restricted one takes the Lease
    wait_for(lambda: serve_status(restricted_serve.base)["leading"] == [0], 60,
             "the restricted replica leads")
    wait_for(lambda: (serve_status(restricted_serve.base)["lastPass"] or {}).get("ok"), 300,
             "the restricted replica's first pass succeeds")
    image = "registry.internal/shop/api:2.0.3"
    watch = ImageWatch(api, image, API_CLUSTERS)
    try:
        repo.remove("apps/shop/notebook.yaml")
        sha = repo.commit("api: 2.0.3, cart-web added, notebook removed",
                          files={**api_spec(repo, image), **CART})
        push_hook(restricted_serve.base, sha)
        wait_for(watch.everywhere, 120, f"{image} applied by the restricted replica")
    finally:
        watch.stop()
    state = wait_for(lambda: (s := serve_status(restricted_serve.base))["lastApplied"]
                     ["revision"] == sha and s, 300, "the restricted pass recorded")
    clusters = state["lastPass"]["clusters"]
    assert all(c["error"] is None and not c["conflicts"] for c in clusters.values()), clusters
    assert "Deployment/cart/cart-web" in clusters["rt-a"]["created"]
    assert "RoleBinding/cart/pincompute-owners-view" in clusters["rt-a"]["created"]
    assert "Pod/shop/notebook" in clusters["rt-a"]["pruned"]
    binding = client.RbacAuthorizationV1Api(api("rt-a")).read_namespaced_role_binding(
        "pincompute-owners-view", "cart")
    assert binding.role_ref.name == "view"
    assert client.AppsV1Api(api("rt-a")).read_namespaced_deployment("cart-web", "cart")
    assert get_json(f"{restricted_serve.base}/status")["apps"], "the apps read with its token"
    # a denial: HTTP 403 / "Forbidden" (not a port such as :40305, nor a log line's
    # milliseconds such as ",403", nor the API server's "Forbidden: field is immutable",
    # which is no denial)
    messages = re.sub(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ", "",
                      restricted_serve.log.read_text(), flags=re.MULTILINE)
    denied = re.search(r"\b403\b|\bforbidden\b(?!:)", messages, re.IGNORECASE)
    assert denied is None, f"the restricted replica was denied: {denied}"
    _check_requests(workdir / "requests.jsonl")


def test_history_is_one_postgresql_store_that_outlives_the_replica_that_wrote_it(
        serve: ServeProcess, restricted_serve: ServeProcess, repo: SpecRepo,
        serve_fleet: fleet_mod.FleetState, host_ns: str, workdir: Path, store_url: str,
        shop_token: str) -> None:
    """Every replica of this module writes one PostgreSQL store. In file order ``api`` was
    applied four times (the first pass and three pushes) by two replicas, the first of them
    stopped since; a replica started now, with no state of its own, serves all of them."""
    broken = git(repo.work, "log", "--diff-filter=A", "--format=%H", "--",
                 "apps/shop/broken.yaml").split()  # the push that failed: never applied
    changed = [c for c in git(repo.work, "log", "--format=%H", "--", API_SPEC).split()
               if c not in broken]  # newest first
    auth = {"Authorization": f"Bearer {shop_token}"}

    def history(base: str) -> list[dict[str, Any]] | None:
        status, body = http("GET", f"{base}/api/v1/apps/PinApp/shop/api/history",
                            headers=auth)
        return json.loads(body) if status == 200 else None  # 404/503: still warming up

    seen: list[list[str]] = [[]]

    def every_revision(found: list[dict[str, Any]] | None) -> bool:
        """Each pass hands the store what it published, so every revision is there, newest
        first, though the next push replaced it within the collector's 2 s round."""
        seen[0] = [r["commit"][:8] for r in found or []]
        return [r["commit"] for r in found or []] == changed

    try:
        written = wait_for(lambda: (h := history(restricted_serve.base)) and every_revision(h)
                           and h, 60, f"the {len(changed)} revisions of api", interval=0.3)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last seen {seen[0]} of {[c[:8] for c in changed]}") \
            from None
    assert all(r["result"] in ("Progressing", "Healthy") and r["author"] for r in written), \
        written
    # the last push's revision names its webhook delivery; the first pass had none
    assert (written[0]["push"], written[-1]["push"]) == (delivery_of(changed[0]), ""), written
    again = ServeProcess(
        repo.bare, workdir / "again.jsonl", "--kubeconfig", str(serve_fleet.kubeconfig),
        "--namespace", host_ns, identity="serve-again", real=True,
        env={"PINCOMPILE_WEBHOOK_SECRET": SECRET, "PINCOMPILE_STORE": store_url})
    try:
        read = wait_for(lambda: history(again.base), 120, "a new replica serves the app's history",
                        interval=0.3)
    finally:
        again.stop()
    assert read == written
