"""Discovery's cache file, kept per API server address, against the fleet's real servers."""

from __future__ import annotations

import shutil

import pytest
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from reconciler.clients.connect import Connection
from reconciler.clients.discovery import cache_path
from reconciler.fleet import fleet as fleet_mod

pytestmark = pytest.mark.e2e

TRAINED, PLAIN = "use1c-gpu-01", "use1a-general-01"  # with and without the training operator


def test_a_cache_file_another_cluster_left_at_the_same_address_is_not_trusted(
        fleet: fleet_mod.FleetState) -> None:
    """A fleet started later reuses ports: the file of a cluster with the training operator,
    found at the address of one without it, made a pass LIST TFJobs there and take the
    404 for a broken cluster (a whole CI run failed so). The groups are checked first."""
    kubeconfig = str(fleet.kubeconfig)
    trained, plain = (Connection(name, name, kubeconfig) for name in (TRAINED, PLAIN))
    try:
        assert trained.resource("kubeflow.org/v1", "TFJob").kind == "TFJob"  # its file
        shutil.copyfile(cache_path(trained.api.configuration.host),
                        cache_path(plain.api.configuration.host))
        with pytest.raises(ResourceNotFoundError):
            plain.resource("kubeflow.org/v1", "TFJob")
        assert plain.resource("apps/v1", "Deployment").kind == "Deployment"
    finally:
        trained.close()
        plain.close()
