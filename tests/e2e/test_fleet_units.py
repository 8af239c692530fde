"""Unit tests of the fleet helpers that need no cluster: specs, nodes, ports, args."""

from __future__ import annotations

import json
import random
import socket
import time
from decimal import Decimal
from pathlib import Path

import pytest

from reconciler.fleet import addons, build, ports, storage, training
from reconciler.fleet.clusters import ClusterSpec, ClusterSpecError, load_clusters
from reconciler.fleet.fleet import STAGES
from reconciler.fleet.nodes import (
    GPU,
    GPU_TYPE_LABEL,
    KWOK_ANNOTATION,
    generate_nodes,
    host_cluster,
    parse_quantity,
    split,
)

FIXTURES = Path(__file__).parent / "fixtures" / "clusters"


def _sum(nodes: list[dict], resource: str) -> Decimal:
    return sum((parse_quantity(n["status"]["allocatable"].get(resource, "0")) for n in nodes),
               Decimal(0))


def test_load_clusters_reads_fixture_specs() -> None:
    specs = {s.name: s for s in load_clusters(FIXTURES)}
    assert sorted(specs) == ["test-east-a", "test-east-gpu", "test-west-a"]
    gpu = specs["test-east-gpu"]
    assert gpu.context == "gpu-ctx"
    assert specs["test-east-a"].context == "test-east-a"  # default: metadata.name
    assert gpu.gpu_types == ("A10G",)
    assert gpu.capacity[GPU] == "8"
    assert specs["test-east-a"].arch == ("amd64", "arm64")
    assert specs["test-west-a"].gpu_types == ()


def test_load_clusters_rejects_duplicates(tmp_path: Path) -> None:
    doc = ("apiVersion: pincompute.io/v1\nkind: Cluster\nmetadata: {name: a}\n"
           "spec: {region: r, zone: z}\n")
    (tmp_path / "a.yaml").write_text(doc + "---\n" + doc)
    with pytest.raises(ClusterSpecError, match="already defined"):
        load_clusters(tmp_path)


def test_load_clusters_ignores_other_kinds(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "apiVersion: pincompute.io/v1\nkind: Project\nmetadata: {name: p}\nspec: {}\n")
    assert load_clusters(tmp_path) == []


@pytest.mark.parametrize(("text", "value"), [
    ("500m", Decimal("0.5")), ("2", Decimal(2)), ("4Gi", Decimal(4 * 2**30)),
    ("16Ti", Decimal(16 * 2**40)), ("1k", Decimal(1000)), ("1.5", Decimal("1.5")),
])
def test_parse_quantity(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


def test_split_sums_exactly() -> None:
    for total in (0, 1, 7, 1000, 12345):
        for parts in (1, 2, 3, 5):
            chunks = split(total, parts)
            assert sum(chunks) == total and max(chunks) - min(chunks) <= 1


@pytest.mark.parametrize("path", [FIXTURES, Path(__file__).parents[2] / "examples/platform"])
def test_nodes_add_up_to_cluster_capacity(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} not present")
    for spec in load_clusters(path):
        nodes = generate_nodes(spec)
        for resource, value in spec.capacity.items():
            assert _sum(nodes, resource) == parse_quantity(value), (spec.name, resource)
        for node in nodes:
            labels = node["metadata"]["labels"]
            assert labels["topology.kubernetes.io/zone"] == spec.zone
            assert labels["topology.kubernetes.io/region"] == spec.region
            assert labels["kubernetes.io/arch"] in spec.arch
            assert node["metadata"]["annotations"][KWOK_ANNOTATION] == "fake"
            for key, value in spec.labels.items():
                assert labels[key] == value


def test_gpu_nodes_are_separate_tainted_and_labelled() -> None:
    spec = {s.name: s for s in load_clusters(FIXTURES)}["test-east-gpu"]
    nodes = generate_nodes(spec)
    gpu_nodes = [n for n in nodes if GPU in n["status"]["allocatable"]]
    general = [n for n in nodes if GPU not in n["status"]["allocatable"]]
    assert len(general) == 3 and len(gpu_nodes) == 2
    assert _sum(gpu_nodes, GPU) == 8
    for node in gpu_nodes:
        assert node["metadata"]["labels"][GPU_TYPE_LABEL] == "A10G"
        assert node["spec"]["taints"][0]["key"] == GPU
    for node in general:
        assert GPU_TYPE_LABEL not in node["metadata"]["labels"]
        assert "taints" not in node["spec"]


def test_several_gpu_types_and_arches() -> None:
    spec = ClusterSpec(name="mix", context="mix", zone="z", region="r",
                       capacity={"cpu": "10", "memory": "10Gi", GPU: "5"},
                       gpu_types=("A100", "H100"), arch=("amd64", "arm64"))
    nodes = generate_nodes(spec)
    by_type: dict[str, Decimal] = {}
    for node in nodes:
        gpu_type = node["metadata"]["labels"].get(GPU_TYPE_LABEL)
        if gpu_type:
            by_type[gpu_type] = by_type.get(gpu_type, Decimal(0)) + parse_quantity(
                node["status"]["allocatable"][GPU])
    assert by_type == {"A100": 3, "H100": 2}
    assert _sum(nodes, "cpu") == 10
    arches = {n["metadata"]["labels"]["kubernetes.io/arch"] for n in nodes}
    assert arches == {"amd64", "arm64"}
    assert len({n["metadata"]["name"] for n in nodes}) == len(nodes)


def test_cordoned_cluster_nodes_are_unschedulable() -> None:
    spec = ClusterSpec(name="c", context="c", capacity={"cpu": "4"}, schedulable=False)
    assert all(n["spec"]["unschedulable"] for n in generate_nodes(spec))


def test_host_cluster_is_small() -> None:
    nodes = generate_nodes(host_cluster(), general_nodes=1)
    assert len(nodes) == 1 and nodes[0]["metadata"]["name"] == "host-general-0"


def test_addon_crds_are_the_operators_for_training_and_stand_ins_for_keda(
        tmp_path: Path) -> None:
    (tmp_path / build.CRD_DIR).mkdir()
    for name in build.TRAINING_OPERATOR_CRDS:
        group_plural = name.split("_", 1)[1] + ".kubeflow.org"
        build.crd_path(tmp_path, name).write_text(json.dumps(
            {"kind": "CustomResourceDefinition", "metadata": {"name": group_plural}}))
    crds = {c["metadata"]["name"]: c
            for c in addons.crds_for(["kubeflow-training", "keda", "nope"], tmp_path)}
    assert set(crds) == {"tfjobs.kubeflow.org", "pytorchjobs.kubeflow.org",
                         "scaledobjects.keda.sh", "scaledjobs.keda.sh",
                         "triggerauthentications.keda.sh"}
    assert crds["tfjobs.kubeflow.org"]["metadata"]["labels"] == {
        addons.LABEL: "kubeflow-training"}
    assert "spec" not in crds["tfjobs.kubeflow.org"]  # as stored: the release's own schema


def test_training_operator_listens_on_loopback_and_serves_tfjob_and_pytorchjob() -> None:
    args = training.training_operator_args("/bin/op", 2001, 2002, Path("/k"))
    assert "--health-probe-bind-address=127.0.0.1:2001" in args
    assert "--metrics-bind-address=0" in args and "--webhook-server-port=2002" in args
    assert [a for a in args if a.startswith("--enable-scheme=")] == [
        "--enable-scheme=tfjob", "--enable-scheme=pytorchjob"]
    env = training.environment({"PATH": "/bin"}, Path("/fleet/clusters/c"))
    assert env["TMPDIR"] == "/fleet/clusters/c/training-operator-tmp"
    assert env["MY_POD_NAMESPACE"] == training.NAMESPACE


def test_a_cluster_runs_the_components_it_has_ports_for() -> None:
    from reconciler.fleet.fleet import ClusterRuntime

    host = ClusterRuntime("host", "host", 1, 2, 3, "/h", kwok_port=4)
    member = ClusterRuntime("m", "m", 1, 2, 3, "/m", kwok_port=4, metrics_server_port=5)
    trains = ClusterRuntime("t", "t", 1, 2, 3, "/t", kwok_port=4, metrics_server_port=5,
                            training_operator_port=6, training_webhook_port=7)
    control = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
    assert host.components == control
    assert member.components == (*control, "metrics-server")
    assert trains.components == (*control, "metrics-server", "training-operator")


def test_choose_ports_are_distinct_free_and_not_excluded() -> None:
    excluded = set(range(20000, 26000))
    chosen = ports.choose_ports(20, exclude=excluded, rng=random.Random(1))
    assert len(set(chosen)) == 20
    low, high = ports.PORT_RANGE
    eph = ports._ephemeral_range()
    for port in chosen:
        assert low <= port <= high and port not in excluded
        assert not eph[0] <= port <= eph[1]
        assert ports.port_is_free(port)


def test_choose_ports_skips_ports_in_use() -> None:
    busy = ports.choose_ports(1, port_range=(21000, 21900))[0]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", busy))
        sock.listen()
        assert not ports.port_is_free(busy)
        chosen = ports.choose_ports(3, port_range=(busy, busy + 3))
        assert busy not in chosen


def test_claimed_ports_never_shared_between_fleets(tmp_path: Path) -> None:
    registry = tmp_path / "ports.json"
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "state.json").write_text("{}")
    first = ports.claim_ports(registry, str(a), 40)
    second = ports.claim_ports(registry, str(b), 40)
    assert not set(first) & set(second)
    # a fleet whose state is gone loses its claim; releasing forgets it too
    (a / "state.json").unlink()
    ports.claim_ports(registry, str(b), 40)
    assert set(json.loads(registry.read_text())) == {str(b)}
    ports.release_ports(registry, str(b))
    assert json.loads(registry.read_text()) == {}


def test_version_hash_is_stable_and_tracks_go_mod(tmp_path: Path) -> None:
    mod = build.module_dir()
    assert build.version_hash(mod) == build.version_hash(mod)
    copy = tmp_path / "mod"
    copy.mkdir()
    (copy / "go.mod").write_text((mod / "go.mod").read_text().replace("v1.", "v9.", 1))
    (copy / "go.sum").write_text((mod / "go.sum").read_text())
    assert build.version_hash(copy) != build.version_hash(mod)
    assert build.versions(mod)["kubernetes"].startswith("v1.")
    assert "fleet-bin" in str(build.bin_dir(mod))


def test_stages_provision_volumes_for_every_fleet_storage_class() -> None:
    from ruamel.yaml import YAML

    stages = {d["metadata"]["name"]: d for d in YAML(typ="safe").load_all(STAGES.read_text())}
    assert {"node-initialize", "pod-ready", "pod-complete", "pod-fail", "pvc-provision"} <= set(
        stages)
    expr = stages["pvc-provision"]["spec"]["selector"]["matchExpressions"][0]["cel"]["expression"]
    for name in storage.STORAGE_CLASSES:
        assert f"'{name}'" in expr
    defaults = [c for c in storage.storage_classes() if c["metadata"]["annotations"][
        "storageclass.kubernetes.io/is-default-class"] == "true"]
    assert len(defaults) == 1


def _stages() -> dict[str, dict]:
    from ruamel.yaml import YAML

    return {d["metadata"]["name"]: d for d in YAML(typ="safe").load_all(STAGES.read_text())}


def _selector_text(stage: dict) -> str:
    return json.dumps(stage["spec"]["selector"]["matchExpressions"])


def test_never_ready_images_skip_pod_ready_and_get_their_own_stage() -> None:
    stages = _stages()
    never = "c.image.endsWith('-never-ready')"
    assert f"!self.spec.containers.exists(c, {never})" in _selector_text(stages["pod-ready"])
    own = stages["pod-never-ready"]
    assert f"self.spec.containers.exists(c, {never})" in _selector_text(own)
    assert "!self" not in _selector_text(own)
    template = own["spec"]["next"]["statusTemplate"]
    assert "phase: Running" in template and "ready: true" not in template.split(
        "initContainerStatuses")[0]


def test_pods_recover_only_where_no_other_stage_applies() -> None:
    """pod-ready-again must not compete with pod-complete/pod-fail (kwok picks one of the
    matching stages at random) nor with pod-never-ready."""
    stages = _stages()
    again = stages["pod-ready-again"]["spec"]["selector"]["matchExpressions"]
    policy = next(e for e in again if e.get("key") == ".spec.restartPolicy")
    assert policy["operator"] == "In" and policy["values"] == ["Always"]
    policies = {}
    for name in ("pod-complete", "pod-fail", "pod-restart-on-failure"):
        other = stages[name]["spec"]["selector"]["matchExpressions"]
        rule = next(e for e in other if e.get("key") == ".spec.restartPolicy")
        policies[name] = (rule["operator"], rule["values"])
    assert policies == {"pod-complete": ("NotIn", ["Always"]),
                        "pod-fail": ("In", ["Never"]),
                        "pod-restart-on-failure": ("In", ["OnFailure"])}
    assert "!self.spec.containers.exists" in json.dumps(again)
    template = stages["pod-ready-again"]["spec"]["next"]["statusTemplate"]
    assert 'status: "True"\n  type: Ready' in template


def test_a_failing_pod_ends_failed_under_never_and_restarts_under_on_failure() -> None:
    """Only one stage applies to a running run-to-completion pod: it completes without
    the exit-code annotation; with it, it fails (Never) or its containers restart
    (OnFailure), as a kubelet does, so restarts count against a backoff limit."""
    stages = _stages()

    def annotation(name: str) -> str:
        rules = stages[name]["spec"]["selector"]["matchExpressions"]
        return next(e["operator"] for e in rules if "exit-code" in e.get("key", ""))

    assert annotation("pod-complete") == "DoesNotExist"
    assert annotation("pod-fail") == annotation("pod-restart-on-failure") == "Exists"
    restart = stages["pod-restart-on-failure"]["spec"]
    assert restart["delay"]["durationMilliseconds"] == 10000  # a kubelet's first back-off
    template = restart["next"]["statusTemplate"]
    assert "restartCount: {{ add1 .restartCount }}" in template
    assert "phase" not in template  # the pod stays Running


def test_kwok_runs_with_node_leases_and_a_health_port(tmp_path: Path) -> None:
    from reconciler.fleet.fleet import (
        NODE_LEASE_SECONDS,
        ClusterRuntime,
        FleetState,
        kwok_args,
    )

    runtime = ClusterRuntime(name="a", context="a", port=1, controller_manager_port=2,
                             scheduler_port=3, etcd_prefix="/a", kwok_port=4321)
    state = FleetState(dir=tmp_path, bin_dir="/bin", clusters=[runtime])
    args = kwok_args(state, 0, tmp_path / "kwok.kubeconfig")
    assert f"--node-lease-duration-seconds={NODE_LEASE_SECONDS}" in args
    assert "--server-address=127.0.0.1:4321" in args
    # the lease must be renewed well within the node controller's 50 s grace period
    assert NODE_LEASE_SECONDS / 4 < 50 / 3
    # state files written before kwok had a port still load
    data = state.to_json()
    del data["clusters"][0]["kwok_port"]
    assert FleetState.from_json(data).clusters[0].kwok_port == 0


def test_build_progress_is_read_from_the_go_build_log(tmp_path: Path) -> None:
    from reconciler.fleet.progress import TOTAL_PREFIX, format_elapsed, read_build_log

    log = tmp_path / "build.log"
    log.write_text(f"/usr/local/go/bin/go build -v -o out/ k8s.io/kubernetes/cmd/x\n"
                   f"{TOTAL_PREFIX}4\n"
                   "internal/goarch\nk8s.io/apimachinery/pkg/util/sets\n"
                   "go: downloading k8s.io/api v0.36.3\n")
    progress = read_build_log(log, 192.4)
    assert (progress.compiled, progress.total) == (2, 4)
    assert progress.line() == ("building the fleet binaries: 2/4 packages, 3m12s elapsed "
                               "(compiling k8s.io/apimachinery/pkg/util/sets)")
    log.write_text(log.read_text() + "a/b\nc/d\n")
    assert "(linking)" in read_build_log(log, 200).line()
    waiting = read_build_log(tmp_path / "missing.log", 61, waiting=True).line()
    assert waiting == ("waiting for another process building the fleet binaries: "
                       "1m01s elapsed")
    assert format_elapsed(9.9) == "9s"


def test_status_line_rewrites_on_a_terminal_and_prints_lines_in_logs() -> None:
    import io

    from reconciler.fleet.progress import StatusLine

    term = io.StringIO()
    line = StatusLine(term, tty=True)
    line.status("a")
    line.status("b")
    line.echo("done")
    assert term.getvalue() == "\r\033[Ka\r\033[Kb\r\033[Kdone\n" and line.every == 1.0
    log = io.StringIO()
    plain = StatusLine(log, tty=False, plain_every=30)
    plain.status("a")
    plain.echo("done")
    plain.close()
    assert log.getvalue() == "a\ndone\n" and plain.every == 30


def test_node_health_summary() -> None:
    from reconciler.fleet.health import NodeHealth

    ok = NodeHealth(cluster="a", total=3, ready=3, oldest_lease_age=4.2)
    assert ok.healthy and ok.summary() == "nodes 3/3 Ready, oldest lease renewal 4s ago"
    bad = NodeHealth(cluster="a", total=3, ready=2, not_ready=["a-general-1"],
                     oldest_lease_age=61)
    assert not bad.healthy and "NOT Ready: a-general-1" in bad.summary()
    assert bad.to_json()["oldestLeaseRenewalSeconds"] == 61
    gone = NodeHealth(cluster="a", reachable=False, error="unreachable")
    assert not gone.healthy and gone.summary() == "nodes unknown (unreachable)"


FAKE_GO = """#!/bin/sh
# a stand-in for `go`: `go list -m` names the training operator's module directory,
# `go list -deps` names 3 packages, `go build -v -o DIR/ ...` prints them slowly and writes
# the binaries
if [ "$1" = list ] && [ "$2" = -m ]; then echo "$FAKE_OPERATOR_DIR"; exit 0; fi
if [ "$1" = list ]; then printf 'runtime\\nexample.com/a\\nexample.com/b\\n'; exit 0; fi
out=""; prev=""
for arg in "$@"; do [ "$prev" = "-o" ] && out="$arg"; prev="$arg"; done
for pkg in runtime example.com/a example.com/b; do echo "$pkg"; sleep 0.4; done
for bin in server kube-apiserver kube-controller-manager kube-scheduler kwok metrics-server \
    training-operator.v1; do
  touch "$out$bin"; done
"""


@pytest.fixture
def fake_toolchain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    go = tmp_path / "go"
    go.write_text(FAKE_GO)
    go.chmod(0o755)
    mod = tmp_path / "mod"
    mod.mkdir()
    (mod / "go.mod").write_text("module fake\n\nrequire k8s.io/kubernetes v1.36.3\n")
    (tmp_path / "metrics-server").mkdir()
    (tmp_path / "metrics-server" / "go.mod").write_text(
        "module fake-metrics\n\nrequire sigs.k8s.io/metrics-server v0.8.0\n")
    (tmp_path / "training-operator").mkdir()
    (tmp_path / "training-operator" / "go.mod").write_text(
        "module fake-training\n\nrequire github.com/kubeflow/training-operator v1.8.1\n")
    crds = tmp_path / "operator-module" / "manifests" / "base" / "crds"
    crds.mkdir(parents=True)
    for name in build.TRAINING_OPERATOR_CRDS:
        (crds / f"{name}.yaml").write_text(f"kind: CustomResourceDefinition\n"
                                           f"metadata: {{name: {name}}}\n")
    monkeypatch.setenv("FAKE_OPERATOR_DIR", str(tmp_path / "operator-module"))
    monkeypatch.setenv("PINCOMPILE_GO", str(go))
    monkeypatch.setenv("PINCOMPILE_FLEET_MODULE", str(mod))
    monkeypatch.setenv("PINCOMPILE_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_first_build_reports_packages_and_elapsed_time(fake_toolchain: Path) -> None:
    lines: list[str] = []
    path = build.ensure_binaries(echo=lines.append, every=0.3)
    assert build.binaries_present(path) and (path / "etcd").is_file()
    # the training operator's CRDs of the release built, stored as JSON with the binaries
    assert build.load_crd(path, "kubeflow.org_tfjobs") == {
        "kind": "CustomResourceDefinition", "metadata": {"name": "kubeflow.org_tfjobs"}}
    progress = [line for line in lines if line.startswith("building the fleet binaries:")]
    assert progress, lines
    assert any("/3 packages" in line and "elapsed (compiling example.com/" in line
               for line in progress), progress
    assert lines[-1].startswith("built fleet binaries in ")
    again: list[str] = []
    assert build.ensure_binaries(echo=again.append) == path and not again  # cached: silent


def test_waiting_for_another_build_reports_its_progress(fake_toolchain: Path) -> None:
    import fcntl
    import threading

    target = build.bin_dir()
    target.parent.mkdir(parents=True)
    log = target.parent / f"build-{target.name}.log"
    log.write_text(f"go build -v\n{build.TOTAL_PREFIX}10\nruntime\nexample.com/a\n")
    lines: list[str] = []
    with open(target.parent / ".build.lock", "a+") as other:
        fcntl.flock(other, fcntl.LOCK_EX)
        waiter = threading.Thread(target=lambda: lines.append(
            str(build.ensure_binaries(echo=lines.append, every=0.2))))
        waiter.start()
        time.sleep(1.0)
        target.mkdir()
        for name in build.PACKAGES:
            (target / name).write_text("")
        (target / build.CRD_DIR).mkdir()
        for name in build.TRAINING_OPERATOR_CRDS:
            build.crd_path(target, name).write_text("{}")
        (target / build.STAMP).write_text("done")
        fcntl.flock(other, fcntl.LOCK_UN)
    waiter.join(timeout=10)
    assert lines[0].startswith("another process is building the fleet binaries")
    assert any(line.startswith("waiting for another process building the fleet binaries: "
                               "2/10 packages") for line in lines), lines
    assert lines[-2].startswith("fleet binaries built by another process")
    assert lines[-1] == str(target)


def test_training_operator_is_pinned_in_its_own_module_and_in_the_cache_key(
        tmp_path: Path) -> None:
    mod = build.module_dir()
    assert build.versions(mod)["training-operator"] == "v1.8.1"
    assert build.training_operator_module_dir(mod) == mod.parent / "training-operator"
    assert "training-operator" in build.PACKAGES
    copy = tmp_path / "fleet"
    copy.mkdir()
    for name in ("go.mod", "go.sum"):
        (copy / name).write_text((mod / name).read_text())
    (tmp_path / "training-operator").mkdir()
    pinned = (build.training_operator_module_dir(mod) / "go.mod").read_text()
    (tmp_path / "training-operator" / "go.mod").write_text(pinned)
    same = build.version_hash(copy)
    (tmp_path / "training-operator" / "go.mod").write_text(pinned.replace("v1.8.1", "v1.9.0"))
    assert build.version_hash(copy) != same


def test_metrics_server_is_pinned_in_its_own_module_and_in_the_cache_key(
        tmp_path: Path) -> None:
    mod = build.module_dir()
    assert build.versions(mod)["metrics-server"] == "v0.8.0"
    assert build.metrics_server_module_dir(mod) == mod.parent / "metrics-server"
    assert "metrics-server" in build.PACKAGES
    # a version bump of metrics-server alone changes where the binaries are cached
    copy = tmp_path / "fleet"
    copy.mkdir()
    for name in ("go.mod", "go.sum"):
        (copy / name).write_text((mod / name).read_text())
    (tmp_path / "metrics-server").mkdir()
    (tmp_path / "metrics-server" / "go.mod").write_text(
        (build.metrics_server_module_dir(mod) / "go.mod").read_text())
    same = build.version_hash(copy)
    (tmp_path / "metrics-server" / "go.mod").write_text(
        (build.metrics_server_module_dir(mod) / "go.mod").read_text().replace(
            "v0.8.0", "v0.8.1"))
    assert build.version_hash(copy) != same
    assert "gitVersion=v0.8.1" in build.metrics_server_ldflags(copy)


def test_usage_config_serves_resource_metrics_and_reads_the_load_annotations() -> None:
    from ruamel.yaml import YAML

    from reconciler.fleet.fleet import USAGE
    from reconciler.fleet.load import annotation_key

    docs = {d["kind"]: d for d in YAML(typ="safe").load_all(USAGE.read_text())}
    assert docs["Metric"]["spec"]["path"] == "/metrics/nodes/{nodeName}/metrics/resource"
    usage = docs["ClusterResourceUsage"]["spec"]["usages"][0]["usage"]
    assert annotation_key("NS", "APP", "KIND", "cpu") == "APP.NS.load.fleet.pincompute.io/KIND.cpu"
    for resource in ("cpu", "memory"):
        expression = " ".join(usage[resource]["expression"].split())
        # the expression builds the key the CLI writes: APP.NS.<domain>/KIND.<resource>
        key = ('pod.metadata.labels["pincompute.io/app"] + "." + pod.metadata.namespace + '
               '".load.fleet.pincompute.io/" + pod.metadata.labels["pincompute.io/kind"] + '
               f'".{resource}')
        assert f'({key}") in node.metadata.annotations' in expression
        assert f'({key}-until") in node.metadata.annotations' in expression
        assert f'container.resources.requests["{resource}"]' in expression


def test_load_arguments_are_checked() -> None:
    from reconciler.fleet.load import LoadError, annotation_key, parse_app, parse_fraction

    assert parse_fraction("90%") == pytest.approx(0.9)
    assert parse_fraction("150%") == pytest.approx(1.5)
    for bad in ("90", "-5%", "ninety%", "2000%"):
        with pytest.raises(LoadError):
            parse_fraction(bad)
    app = parse_app("PinterestService/search/search-api")
    assert (app.kind, app.project, app.name) == ("PinterestService", "search", "search-api")
    for bad in ("search/search-api", "PinterestService/Search/x", "a/b/c/d"):
        with pytest.raises(LoadError):
            parse_app(bad)
    # a valid annotation key: DNS-subdomain prefix, name part of at most 63 characters
    key = annotation_key("search", "search-api", "PinService", "cpu-until")
    prefix, name = key.split("/")
    assert len(prefix) <= 253 and len(name) <= 63


def test_metrics_server_verifies_kwok_and_serves_for_the_aggregator(tmp_path: Path) -> None:
    from cryptography import x509

    from reconciler.fleet.certs import generate_pki
    from reconciler.fleet.metrics import metrics_server_args

    pki = generate_pki(tmp_path)
    args = metrics_server_args("/bin/metrics-server", 4443, 5555, pki, tmp_path / "kc")
    assert "--kubelet-port=5555" in args and "--secure-port=4443" in args
    assert f"--kubelet-certificate-authority={pki.ca_cert}" in args
    assert not any("insecure" in a for a in args)
    cert = x509.load_pem_x509_certificate(pki.metrics_server_cert.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "metrics-server.kube-system.svc" in names.get_values_for_type(x509.DNSName)


def test_demo_summary_names_every_app_that_is_not_healthy_or_suspended() -> None:
    from reconciler.fleet.demo import summary

    def row(kind: str, name: str, phase: str, message: str = "") -> dict:
        return {"kind": kind, "project": "p", "name": name,
                "status": {"phase": phase, **({"message": message} if message else {})}}

    line, ok = summary([row("PinApp", "a", "Healthy"),
                        row("PinterestJobSet", "b", "Completed"),
                        row("PinApp", "c", "Suspended"), row("Cluster", "x", "Unknown")])
    assert ok and line == ("demo: 1 of 3 apps Healthy, 1 Completed (jobs that finished), 1 "
                           "Suspended on purpose (paused or stopped in the examples); every "
                           "app is Healthy, Completed or Suspended on purpose")
    line, ok = summary([row("PinApp", "a", "Healthy"),
                        row("PinterestTrainingJob", "t", "Progressing", "waiting")])
    assert not ok
    assert line.endswith("NOT Healthy: PinterestTrainingJob/p/t Progressing (waiting)")
