"""Self-signed PKI for a local fleet: a CA, serving certs (the API servers and kwok, the
metrics-servers, etcd), client certs, an SA key."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = dt.timedelta(days=3650)
SERVING_DNS = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
               "kubernetes.default.svc.cluster.local")
SERVING_IPS = ("127.0.0.1", "::1", "10.96.0.1")
#: the name the API server's aggregator verifies when it proxies to metrics-server
#: (``<service>.<namespace>.svc`` of the APIService's Service)
METRICS_SERVER_DNS = ("metrics-server.kube-system.svc", "localhost")
#: client certificates: file stem -> (common name, organizations)
CLIENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "admin": ("pincompile-admin", ("system:masters",)),
    "controller-manager": ("system:kube-controller-manager", ("system:masters",)),
    "scheduler": ("system:kube-scheduler", ("system:masters",)),
    "kwok": ("kwok-controller", ("system:masters",)),
    "metrics-server": ("system:metrics-server", ("system:masters",)),
    "training-operator": ("system:serviceaccount:kubeflow:training-operator",
                          ("system:masters",)),
    # the apiserver's client identity towards aggregated API servers (request headers)
    "front-proxy-client": ("front-proxy-client", ()),
}


@dataclass(frozen=True)
class Pki:
    """Paths of the generated files (all PEM)."""

    dir: Path

    @property
    def ca_cert(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def serving_cert(self) -> Path:
        return self.dir / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.dir / "apiserver.key"

    @property
    def metrics_server_cert(self) -> Path:
        """Serving cert of the metrics-servers, for the name the aggregator verifies."""
        return self.dir / "metrics-server-serving.crt"

    @property
    def metrics_server_key(self) -> Path:
        return self.dir / "metrics-server-serving.key"

    @property
    def etcd_cert(self) -> Path:
        """etcd's certificate: it serves with it, and the API servers (etcd's only
        clients) show it to etcd, which asks every client for one of the fleet CA."""
        return self.dir / "etcd.crt"

    @property
    def etcd_key(self) -> Path:
        return self.dir / "etcd.key"

    @property
    def sa_key(self) -> Path:
        return self.dir / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.dir / "sa.pub"

    def client_cert(self, who: str) -> Path:
        return self.dir / f"{who}.crt"

    def client_key(self, who: str) -> Path:
        return self.dir / f"{who}.key"


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write(path: Path, data: bytes, private: bool = False) -> None:
    path.write_bytes(data)
    if private:
        path.chmod(0o600)


def _name(cn: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    return x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _issue(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate | None,
    ca_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    usage: list[x509.ObjectIdentifier] | None = None,
    sans: list[x509.GeneralName] | None = None,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject if ca_cert else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_encipherment=not ca, key_cert_sign=ca,
                          crl_sign=ca, content_commitment=False, data_encipherment=False,
                          key_agreement=False, encipher_only=False, decipher_only=False),
            critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                       critical=False)
    )
    if usage:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usage), critical=False)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def generate_pki(directory: Path) -> Pki:
    """Write a fresh CA, apiserver serving cert, client certs and SA signing key."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    pem = serialization.Encoding.PEM
    ca_key = _key()
    ca_cert = _issue(_name("pincompile-fleet-ca"), ca_key, None, ca_key, ca=True)
    _write(pki.ca_cert, ca_cert.public_bytes(pem))
    _write(pki.dir / "ca.key", _key_pem(ca_key), private=True)

    server = [ExtendedKeyUsageOID.SERVER_AUTH]
    for cert_path, key_path, cn, dns, usage in (
            (pki.serving_cert, pki.serving_key, "kube-apiserver", SERVING_DNS, server),
            (pki.metrics_server_cert, pki.metrics_server_key, "metrics-server",
             METRICS_SERVER_DNS, server),
            (pki.etcd_cert, pki.etcd_key, "etcd", ("localhost",),
             [*server, ExtendedKeyUsageOID.CLIENT_AUTH])):
        key = _key()
        sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in SERVING_IPS]
        cert = _issue(_name(cn), key, ca_cert, ca_key, usage=usage, sans=sans)
        _write(cert_path, cert.public_bytes(pem))
        _write(key_path, _key_pem(key), private=True)
    for who, (cn, orgs) in CLIENTS.items():
        key = _key()
        cert = _issue(_name(cn, orgs), key, ca_cert, ca_key,
                      usage=[ExtendedKeyUsageOID.CLIENT_AUTH])
        _write(pki.client_cert(who), cert.public_bytes(pem))
        _write(pki.client_key(who), _key_pem(key), private=True)

    sa = _key()
    _write(pki.sa_key, _key_pem(sa), private=True)
    _write(pki.sa_pub, sa.public_key().public_bytes(
        pem, serialization.PublicFormat.SubjectPublicKeyInfo))
    return pki
