"""metrics-server for every member cluster: its command line and its registration as the
cluster's ``metrics.k8s.io`` API (API aggregation).

Each member cluster runs one metrics-server (built from ``hack/metrics-server``) that
scrapes the kubelet resource-metrics endpoints kwok emulates for the cluster's nodes
(``/metrics/nodes/<node>/metrics/resource`` on the cluster's kwok port, see
``usage.yaml``). The kube-apiserver proxies ``/apis/metrics.k8s.io/v1beta1`` to it through
an ``ExternalName`` Service to 127.0.0.1 (the fleet has no kube-proxy) and the
``v1beta1.metrics.k8s.io`` APIService, whose CA bundle verifies the metrics-server's
serving certificate for ``metrics-server.kube-system.svc``.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from reconciler.fleet.certs import Pki

NAMESPACE = "kube-system"
SERVICE = "metrics-server"
#: how often metrics-server scrapes the nodes: at least its 10 s kubelet request timeout
RESOLUTION = "15s"
GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
APISERVICE = f"{VERSION}.{GROUP}"


def metrics_server_args(binary: str, port: int, kwok_port: int, pki: Pki,
                        kubeconfig: Path) -> list[str]:
    """Command line of one cluster's metrics-server (serving on ``port``, scraping the
    cluster's kwok on ``kwok_port`` and verifying kwok's certificate with the fleet CA)."""
    return [
        binary, f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}", "--bind-address=127.0.0.1",
        f"--secure-port={port}", f"--tls-cert-file={pki.metrics_server_cert}",
        f"--tls-private-key-file={pki.metrics_server_key}",
        "--kubelet-preferred-address-types=InternalIP", f"--kubelet-port={kwok_port}",
        f"--kubelet-certificate-authority={pki.ca_cert}", f"--metric-resolution={RESOLUTION}",
        "--profiling=false", "--v=1",
    ]


def register(api: Any, port: int, pki: Pki) -> None:
    """Create the Service and the APIService that route ``metrics.k8s.io`` to the
    metrics-server on ``port`` (``api``: a kubernetes ApiClient of the cluster)."""
    from kubernetes import client

    core: Any = client.CoreV1Api(api)
    core.create_namespaced_service(NAMESPACE, {
        "metadata": {"name": SERVICE, "labels": {"k8s-app": SERVICE}},
        "spec": {"type": "ExternalName", "externalName": "127.0.0.1",
                 "ports": [{"name": "https", "port": port}]},
    })
    registration: Any = client.ApiregistrationV1Api(api)
    registration.create_api_service({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": APISERVICE, "labels": {"k8s-app": SERVICE}},
        "spec": {"group": GROUP, "version": VERSION, "groupPriorityMinimum": 100,
                 "versionPriority": 100,
                 "caBundle": base64.b64encode(pki.ca_cert.read_bytes()).decode(),
                 "service": {"namespace": NAMESPACE, "name": SERVICE, "port": port}},
    })


def unavailable_reason(api: Any) -> str | None:
    """None when the cluster's ``v1beta1.metrics.k8s.io`` APIService is Available, else
    why not."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    registration: Any = client.ApiregistrationV1Api(api)
    try:
        status = registration.read_api_service_status(APISERVICE).status
    except ApiException as exc:
        return f"APIService {APISERVICE}: {exc.status} {exc.reason}"
    conditions = {c.type: c for c in (status.conditions if status else None) or []}
    available = conditions.get("Available")
    if available is not None and available.status == "True":
        return None
    return (f"APIService {APISERVICE}: {available.reason}: {available.message}"
            if available else f"APIService {APISERVICE}: no condition yet")
