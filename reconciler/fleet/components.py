"""The command lines of the fleet's etcd, of a cluster's components (kube-apiserver,
kube-controller-manager, kube-scheduler, kwok, metrics-server, the training operator) and
of the pod agent, and how a component is launched."""

from __future__ import annotations

import os
import ssl
import sys
from pathlib import Path

from reconciler.fleet import debugging, metrics, training
from reconciler.fleet.certs import Pki
from reconciler.fleet.errors import FleetError
from reconciler.fleet.kubeconfig import cluster_dir, kubeconfig_of
from reconciler.fleet.nodes import KWOK_SELECTOR, NODE_IP
from reconciler.fleet.processes import Proc, client_ssl_context, spawn
from reconciler.fleet.state import COMPONENTS, ClusterRuntime, FleetState

STAGES = Path(__file__).with_name("stages.yaml")
#: kwok's emulated kubelet resource metrics and the containers' resource usage
USAGE = Path(__file__).with_name("usage.yaml")
SERVICE_CIDR = "10.96.0.0/16"
#: controllers the fleet does not need (no cloud, no volumes to attach, no CSR signing)
DISABLED_CONTROLLERS = (
    "bootstrap-signer-controller", "token-cleaner-controller",
    "cloud-node-lifecycle-controller", "service-lb-controller", "node-route-controller",
    "node-ipam-controller", "persistentvolume-attach-detach-controller",
    "persistentvolume-expander-controller", "certificatesigningrequest-signing-controller",
    "certificatesigningrequest-approving-controller",
    "certificatesigningrequest-cleaner-controller",
)


def etcd_url(state: FleetState) -> str:
    return f"https://127.0.0.1:{state.etcd_port}"


def etcd_args(state: FleetState, pki: Pki) -> list[str]:
    """Command line of the fleet's one etcd: TLS, and a certificate of the fleet CA asked
    of every client and peer (a process on this machine — an exec'd one — gets nothing)."""
    client, peer = etcd_url(state), f"https://127.0.0.1:{state.etcd_peer_port}"
    tls = [f"--{side}{name}={path}" for side in ("", "peer-") for name, path in (
        ("cert-file", pki.etcd_cert), ("key-file", pki.etcd_key),
        ("trusted-ca-file", pki.ca_cert))]
    return [
        f"{state.bin_dir}/etcd", "--name=fleet", f"--data-dir={state.dir / 'etcd'}",
        f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=fleet={peer}", "--initial-cluster-state=new",
        *tls, "--client-cert-auth", "--peer-client-cert-auth",
        "--unsafe-no-fsync", "--quota-backend-bytes=4294967296",
        "--auto-compaction-retention=5m", "--auto-compaction-mode=periodic",
        "--log-level=warn",
    ]


def apiserver_args(state: FleetState, runtime: ClusterRuntime, pki: Pki) -> list[str]:
    """Command line of one kube-apiserver."""
    return [
        f"{state.bin_dir}/kube-apiserver",
        "--bind-address=127.0.0.1", f"--secure-port={runtime.port}",
        "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
        f"--etcd-servers={etcd_url(state)}", f"--etcd-cafile={pki.ca_cert}",
        f"--etcd-certfile={pki.etcd_cert}", f"--etcd-keyfile={pki.etcd_key}",
        f"--etcd-prefix={runtime.etcd_prefix}",
        f"--tls-cert-file={pki.serving_cert}", f"--tls-private-key-file={pki.serving_key}",
        f"--client-ca-file={pki.ca_cert}",
        f"--requestheader-client-ca-file={pki.ca_cert}",
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={pki.client_cert('front-proxy-client')}",
        f"--proxy-client-key-file={pki.client_key('front-proxy-client')}",
        # pod logs / exec / metrics: the nodes' kubelet is their cluster's kwok (HTTPS)
        f"--kubelet-certificate-authority={pki.ca_cert}",
        f"--kubelet-client-certificate={pki.client_cert('admin')}",
        f"--kubelet-client-key={pki.client_key('admin')}",
        "--kubelet-preferred-address-types=InternalIP",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki.sa_pub}",
        f"--service-account-signing-key-file={pki.sa_key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--authorization-mode=RBAC", "--allow-privileged=true",
        # GPU nodes are tainted nvidia.com/gpu; pods requesting GPUs get the toleration.
        "--enable-admission-plugins=ExtendedResourceToleration",
        "--enable-priority-and-fairness=false", "--profiling=false",
        "--event-ttl=30m",
        *state.timers.apiserver_flags(),
    ]


def _component_common(kubeconfig: Path, port: int) -> list[str]:
    return [f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}", "--bind-address=127.0.0.1",
            f"--secure-port={port}", "--leader-elect=false"]


def controller_manager_args(state: FleetState, runtime: ClusterRuntime, pki: Pki,
                            kubeconfig: Path) -> list[str]:
    """Command line of one kube-controller-manager."""
    disabled = ",".join(f"-{c}" for c in DISABLED_CONTROLLERS)
    return [
        f"{state.bin_dir}/kube-controller-manager",
        *_component_common(kubeconfig, runtime.controller_manager_port),
        f"--controllers=*,{disabled}", f"--cluster-name={runtime.name}",
        f"--service-account-private-key-file={pki.sa_key}", f"--root-ca-file={pki.ca_cert}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--kube-api-qps=200", "--kube-api-burst=400",
        *state.timers.controller_manager_flags(),
    ]


def scheduler_args(state: FleetState, runtime: ClusterRuntime, kubeconfig: Path) -> list[str]:
    """Command line of one kube-scheduler."""
    return [f"{state.bin_dir}/kube-scheduler",
            *_component_common(kubeconfig, runtime.scheduler_port),
            "--kube-api-qps=200", "--kube-api-burst=400"]


def kwok_args(state: FleetState, index: int, kubeconfig: Path) -> list[str]:
    """Command line of one kwok (fakes the nodes annotated kwok.x-k8s.io/node=fake), run
    by its reaper (:mod:`.reaper`, which ends what exec sessions leave behind).

    As kwokctl runs it: per-node Leases carry node liveness (kwok renews one per node in
    ``kube-node-lease`` every quarter of the profile's Lease duration, like a kubelet; the
    node controller's grace period counts from the last renewal, so nodes stay Ready while
    kwok runs and go NotReady when it stops), and its HTTPS server (``/healthz``, the
    nodes' emulated kubelet resource metrics that metrics-server scrapes) listens on the
    cluster's ``kwok_port``. The nodes report the pod agent's front for it
    (``kubelet_port``) as their kubelet, where the API servers ask for logs and exec. Each
    pod's log is named by a ``Logs`` object in the cluster (``--enable-crds``).
    """
    runtime = state.clusters[index]
    pki = Pki(state.dir / "pki")
    return [sys.executable, "-m", "reconciler.fleet.reaper",
            f"{state.bin_dir}/kwok", f"--kubeconfig={kubeconfig}", f"--config={STAGES}",
            f"--config={USAGE}", f"--config={debugging.kwok_config(state.dir)}",
            f"--enable-crds={','.join(debugging.KWOK_CRDS)}",
            "--manage-all-nodes=false", f"--manage-nodes-with-annotation-selector={KWOK_SELECTOR}",
            f"--node-ip={NODE_IP}", f"--cidr=10.{64 + index % 64}.0.1/16",
            f"--node-lease-duration-seconds={state.timers.node_lease_seconds}",
            f"--server-address=127.0.0.1:{runtime.kwok_port}",
            f"--node-port={runtime.kubelet_port or runtime.kwok_port}",
            f"--tls-cert-file={pki.serving_cert}",
            f"--tls-private-key-file={pki.serving_key}", "--v=WARN"]


def pod_agent_args(state: FleetState) -> list[str]:
    """Command line of the fleet's pod agent (:mod:`.pod_agent`)."""
    return [sys.executable, "-m", "reconciler.fleet.pod_agent", str(state.dir)]


def kwok_environment() -> dict[str, str]:
    """kwok's whole environment, which every exec'd command inherits: nothing of the
    user's (no tokens, no proxies), only a PATH."""
    return {"PATH": debugging.PATH, "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost"}


def environment() -> dict[str, str]:
    """This process's environment for a component: no KUBECONFIG or GOFLAGS of the
    user's, and no proxy for 127.0.0.1."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "GOFLAGS")}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def _insecure_context() -> ssl.SSLContext:
    """For the components' self-signed serving certs (health probes only)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def launch(state: FleetState, runtime: ClusterRuntime, component: str,
            env: dict[str, str]) -> tuple[Proc, str, ssl.SSLContext | None]:
    """Spawn one component of a cluster; return it with the URL that says it is ready."""
    pki = Pki(state.dir / "pki")
    index = state.clusters.index(runtime)
    if component == "kube-apiserver":
        argv = apiserver_args(state, runtime, pki)
        url = f"{runtime.server}/readyz"
        ctx: ssl.SSLContext | None = client_ssl_context(
            pki.ca_cert, pki.client_cert("admin"), pki.client_key("admin"))
    elif component == "kube-controller-manager":
        argv = controller_manager_args(state, runtime, pki,
                                       kubeconfig_of(state, runtime, "controller-manager"))
        url = f"https://127.0.0.1:{runtime.controller_manager_port}/healthz"
        ctx = _insecure_context()
    elif component == "kube-scheduler":
        argv = scheduler_args(state, runtime, kubeconfig_of(state, runtime, "scheduler"))
        url = f"https://127.0.0.1:{runtime.scheduler_port}/readyz"
        ctx = _insecure_context()
    elif component == "kwok":
        argv = kwok_args(state, index, kubeconfig_of(state, runtime, "kwok"))
        env = kwok_environment()
        url = f"https://127.0.0.1:{runtime.kwok_port}/healthz"
        ctx = client_ssl_context(pki.ca_cert, pki.client_cert("admin"),
                                 pki.client_key("admin"))
    elif component == "metrics-server" and runtime.metrics_server_port:
        argv = metrics.metrics_server_args(
            f"{state.bin_dir}/metrics-server", runtime.metrics_server_port, runtime.kwok_port,
            pki, kubeconfig_of(state, runtime, "metrics-server"))
        url = f"https://127.0.0.1:{runtime.metrics_server_port}/livez"
        ctx = client_ssl_context(pki.ca_cert, pki.client_cert("admin"),
                                 pki.client_key("admin"))
    elif component == "training-operator" and runtime.training_operator_port:
        argv = training.training_operator_args(
            f"{state.bin_dir}/training-operator", runtime.training_operator_port,
            runtime.training_webhook_port, kubeconfig_of(state, runtime, "training-operator"),
            training.pytorch_init_container(cluster_dir(state, runtime)))
        url = f"http://127.0.0.1:{runtime.training_operator_port}/readyz"
        ctx = None
        env = training.environment(env, cluster_dir(state, runtime))
    else:
        raise FleetError(f"unknown component {component!r} (one of: {', '.join(COMPONENTS)})")
    proc = spawn(f"{component}[{runtime.name}]", argv,
                 state.dir / "logs" / f"{runtime.name}.{component}.log", env=env)
    return proc, url, ctx

