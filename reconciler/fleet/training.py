"""The Kubeflow training operator for every member cluster that lists the
``kubeflow-training`` addon: its command line, environment, certificates and the
objects it expects (its CRDs, its namespace and its webhook Secret).

The operator (built from ``hack/training-operator``) serves TFJob and PyTorchJob
(``--enable-scheme``): it creates their pods and Services, and kwok runs the pods to
completion (``stages.yaml``), so a job reaches Succeeded or Failed through the real
controller.

Its validating webhook is not registered with the API server (no
ValidatingWebhookConfiguration): v1.8.1 always starts a webhook server, whose
certificate directory is ``$TMPDIR/k8s-webhook-server/serving-certs`` (controller-runtime's
default), so each operator gets a ``TMPDIR`` of its own in the fleet directory holding
the fleet's serving certificate. Its certificate rotator only checks that
``/tmp/k8s-webhook-server/serving-certs/tls.crt`` exists (a path fixed in the operator's
source, where a pod mounts its Secret) before it starts the controllers; the fleet
writes the fleet CA's public certificate there when the file is missing (no key) and
leaves it. The webhook server listens on every interface at its port (the operator has
no flag for the address); nothing calls it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from reconciler.fleet.certs import Pki

ADDON = "kubeflow-training"
NAMESPACE = "kubeflow"
#: the Secret the operator's certificate rotator keeps its CA and serving cert in
WEBHOOK_SECRET = "training-operator-webhook-cert"
SCHEMES = ("tfjob", "pytorchjob")
#: fixed in training-operator v1.8.1 (pkg/cert/cert.go): the rotator waits for tls.crt here
FIXED_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
#: The init container the operator adds to a PyTorchJob's workers (it waits for the
#: master's name to resolve): v1.8.1's built-in template (pkg/controller.v1/pytorch) with a
#: securityContext, without which a namespace enforcing Pod Security ``restricted`` refuses
#: every worker pod. A Go template the operator fills in.
PYTORCH_INIT_CONTAINER = """\
- name: init-pytorch
  image: {{.InitContainerImage}}
  imagePullPolicy: IfNotPresent
  resources:
    limits: {cpu: 100m, memory: 20Mi}
    requests: {cpu: 50m, memory: 10Mi}
  securityContext:
    runAsNonRoot: true
    runAsUser: 65534
    allowPrivilegeEscalation: false
    capabilities: {drop: [ALL]}
    seccompProfile: {type: RuntimeDefault}
  command: ['sh', '-c', 'err=1;for i in $(seq {{.MaxTries}}); do if nslookup {{.MasterAddr}}; \
then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err']
"""


def tmpdir(cluster_dir: Path) -> Path:
    """The operator's ``TMPDIR`` in the cluster's directory of the fleet."""
    return cluster_dir / "training-operator-tmp"


def pytorch_init_container(cluster_dir: Path) -> Path:
    """Write :data:`PYTORCH_INIT_CONTAINER` into the cluster's directory; its path."""
    path = cluster_dir / "pytorch-init-container.yaml"
    path.write_text(PYTORCH_INIT_CONTAINER)
    return path


def training_operator_args(binary: str, probe_port: int, webhook_port: int,
                           kubeconfig: Path, init_container: Path | None = None) -> list[str]:
    """Command line of one cluster's training operator: readiness on
    ``127.0.0.1:probe_port`` (``/readyz``), its webhook server on ``webhook_port``, no
    metrics endpoint; PyTorch workers' init container from the template ``init_container``
    (:func:`pytorch_init_container`)."""
    template = [f"--pytorch-init-container-template-file={init_container}"] \
        if init_container is not None else []
    return [binary, f"--kubeconfig={kubeconfig}", *template,
            f"--health-probe-bind-address=127.0.0.1:{probe_port}",
            "--metrics-bind-address=0", f"--webhook-server-port={webhook_port}",
            *(f"--enable-scheme={scheme}" for scheme in SCHEMES),
            "--zap-log-level=info", "--zap-devel=false"]


def environment(base: dict[str, str], cluster_dir: Path) -> dict[str, str]:
    """``base`` with the operator's own ``TMPDIR`` and namespace."""
    return {**base, "TMPDIR": str(tmpdir(cluster_dir)), "MY_POD_NAMESPACE": NAMESPACE}


def write_certificates(cluster_dir: Path, pki: Pki) -> None:
    """Put the fleet's serving certificate where the operator's webhook server reads it,
    and make sure the file its rotator waits for exists."""
    certs = tmpdir(cluster_dir) / "k8s-webhook-server" / "serving-certs"
    certs.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(pki.serving_cert, certs / "tls.crt")
    shutil.copyfile(pki.serving_key, certs / "tls.key")
    (certs / "tls.key").chmod(0o600)
    fixed = FIXED_CERT_DIR / "tls.crt"
    if not fixed.exists():
        FIXED_CERT_DIR.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pki.ca_cert, fixed)


def prepare(api: Any) -> None:
    """Create the operator's namespace and the (empty) Secret its rotator fills, as the
    release's manifests do (``api``: a kubernetes ApiClient of the cluster)."""
    from kubernetes import client

    core: Any = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": NAMESPACE}})
    core.create_namespaced_secret(NAMESPACE, {"metadata": {"name": WEBHOOK_SECRET}})
