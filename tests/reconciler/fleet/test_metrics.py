"""metrics-server's command line and serving certificate."""

from __future__ import annotations

from pathlib import Path


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
