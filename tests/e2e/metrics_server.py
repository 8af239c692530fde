"""A small External metrics API server for the e2e tests, registered with a member
cluster's API server so that its real HPA controller reads values the test sets.

It serves ``external.metrics.k8s.io/v1beta1`` over HTTPS on 127.0.0.1, the way
prometheus-adapter or KEDA's metrics server do in production: the cluster's kube-apiserver
proxies ``/apis/external.metrics.k8s.io/...`` to it (API aggregation) and the HPA
controller asks for ``namespaces/<ns>/<metric>?labelSelector=...``. The value of a metric
is whatever the test last :meth:`~ExternalMetricsServer.set`.

Registration (:func:`register`) uses an ``ExternalName`` Service pointing at 127.0.0.1:
the fleet has no kube-proxy, and Endpoints may not hold loopback addresses, so the
aggregator dials the name directly. The serving certificate is signed by a throwaway CA
whose bundle goes into the APIService, for the name the aggregator verifies
(``<service>.<namespace>.svc``): no ``insecureSkipTLSVerify``.
"""

from __future__ import annotations

import datetime as dt
import json
import ssl
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.support.wait import wait_for

GROUP = "external.metrics.k8s.io"
VERSION = "v1beta1"
GROUP_VERSION = f"{GROUP}/{VERSION}"
APISERVICE = f"{VERSION}.{GROUP}"


@dataclass(frozen=True)
class Query:
    """One metric request the server answered (what the HPA controller asked for)."""

    namespace: str
    metric: str
    selector: str
    at: float


class ExternalMetricsServer:
    """``external.metrics.k8s.io/v1beta1`` on ``https://127.0.0.1:<port>`` with values set
    by the test: ``set("queue-depth", 120)``; ``queries`` records what was asked."""

    def __init__(self, cert_dir: Path, service: str, namespace: str) -> None:
        self.ca_pem, cert, key = _certificates(cert_dir, f"{service}.{namespace}.svc")
        self._values: dict[str, str] = {}
        self._lock = threading.Lock()
        self.queries: list[Query] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="metrics",
                                        daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> ExternalMetricsServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def set(self, metric: str, value: int | str) -> None:
        """Serve ``value`` (a Kubernetes quantity) for ``metric`` from now on."""
        with self._lock:
            self._values[metric] = str(value)

    def value(self, metric: str) -> str | None:
        with self._lock:
            return self._values.get(metric)

    def asked(self, metric: str) -> list[Query]:
        with self._lock:
            return [q for q in self.queries if q.metric == metric]

    def _record(self, query: Query) -> None:
        with self._lock:
            self.queries.append(query)


def _handler(server: ExternalMetricsServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return  # quiet: pytest shows failures, not every request

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            parts = [p for p in url.path.split("/") if p]
            if parts == ["apis"]:
                return self._send(200, _group_list())
            if parts == ["apis", GROUP]:
                return self._send(200, _group())
            if parts == ["apis", GROUP, VERSION]:
                return self._send(200, _resource_list())
            if len(parts) == 6 and parts[:4] == ["apis", GROUP, VERSION, "namespaces"]:
                namespace, metric = parts[4], parts[5]
                selector = parse_qs(url.query).get("labelSelector", [""])[0]
                server._record(Query(namespace, metric, selector, time.time()))
                value = server.value(metric)
                if value is None:
                    return self._send(404, _status(404, f"no metric {metric!r}"))
                return self._send(200, _value_list(metric, selector, value))
            if parts in (["healthz"], ["readyz"], ["livez"]):
                return self._send(200, "ok")
            return self._send(404, _status(404, f"{url.path} is not served here"))

        def _send(self, code: int, body: Any) -> None:
            data = (body if isinstance(body, str) else json.dumps(body)).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json" if not isinstance(
                body, str) else "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _group() -> dict[str, Any]:
    version = {"groupVersion": GROUP_VERSION, "version": VERSION}
    return {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP, "versions": [version],
            "preferredVersion": version}


def _group_list() -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group()]}


def _resource_list() -> dict[str, Any]:
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP_VERSION,
            "resources": [{"name": "externalmetrics", "singularName": "", "namespaced": True,
                           "kind": "ExternalMetricValueList", "verbs": ["get"]}]}


def _value_list(metric: str, selector: str, value: str) -> dict[str, Any]:
    labels = dict(p.split("=", 1) for p in selector.split(",") if "=" in p)
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"kind": "ExternalMetricValueList", "apiVersion": GROUP_VERSION, "metadata": {},
            "items": [{"metricName": metric, "metricLabels": labels, "timestamp": now,
                       "value": value}]}


def _status(code: int, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
            "reason": "NotFound", "code": code}


def _certificates(directory: Path, dns_name: str) -> tuple[bytes, Path, Path]:
    """A throwaway CA and a serving certificate for ``dns_name`` and 127.0.0.1."""
    import ipaddress

    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)

    def issue(subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name,
              signer: ec.EllipticCurvePrivateKey, ca: bool) -> x509.Certificate:
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(issuer).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(minutes=5))
                   .not_valid_after(now + dt.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            builder = builder.add_extension(x509.SubjectAlternativeName([
                x509.DNSName(dns_name), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False).add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "e2e-metrics-ca")])
    ca = issue("e2e-metrics-ca", ca_key, ca_name, ca_key, ca=True)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = issue(dns_name, key, ca_name, ca_key, ca=False)
    pem = serialization.Encoding.PEM
    cert_path, key_path = directory / "metrics.crt", directory / "metrics.key"
    cert_path.write_bytes(cert.public_bytes(pem))
    key_path.write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    return ca.public_bytes(pem), cert_path, key_path


def register(api: Any, server: ExternalMetricsServer, service: str, namespace: str,
             timeout: float = 120.0) -> None:
    """Make ``server`` the cluster's ``external.metrics.k8s.io`` API (a Namespace, an
    ExternalName Service to 127.0.0.1 and an APIService with the CA bundle) and wait until
    the aggregator reports the APIService Available."""
    import base64

    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core: Any = client.CoreV1Api(api)
    registration: Any = client.ApiregistrationV1Api(api)
    try:
        core.create_namespace({"metadata": {"name": namespace}})
    except ApiException as exc:
        if exc.status != 409:
            raise
    core.create_namespaced_service(namespace, {
        "metadata": {"name": service},
        "spec": {"type": "ExternalName", "externalName": "127.0.0.1",
                 "ports": [{"name": "https", "port": server.port}]},
    })
    registration.create_api_service({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": APISERVICE},
        "spec": {"group": GROUP, "version": VERSION, "groupPriorityMinimum": 100,
                 "versionPriority": 100,
                 "caBundle": base64.b64encode(server.ca_pem).decode(),
                 "service": {"namespace": namespace, "name": service, "port": server.port}},
    })
    why = [""]

    def available() -> bool:
        status = registration.read_api_service_status(APISERVICE).status
        conditions = {c.type: c for c in (status.conditions if status else None) or []}
        found = conditions.get("Available")
        why[0] = f"{found.reason}: {found.message}" if found else "no condition yet"
        return found is not None and found.status == "True"

    wait_for(available, timeout, f"APIService {APISERVICE} to be Available", interval=1.0,
             describe=lambda: why[0])


def unregister(api: Any, service: str, namespace: str) -> None:
    """Remove what :func:`register` created (the APIService first)."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    for delete in (lambda: client.ApiregistrationV1Api(api).delete_api_service(APISERVICE),
                   lambda: client.CoreV1Api(api).delete_namespace(namespace)):
        try:
            delete()
        except ApiException as exc:
            if exc.status != 404:
                raise
