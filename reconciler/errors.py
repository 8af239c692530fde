"""The errors a cluster call may raise, and how a pass says them in one line."""

from __future__ import annotations

from kubernetes.dynamic.exceptions import DynamicApiError

from reconciler.clients.connect import ClusterUnreachable, KubeconfigError

#: What a failing cluster raises: reported for that cluster, never stopping a pass.
CLUSTER_ERRORS = (ClusterUnreachable, KubeconfigError, DynamicApiError, OSError)


def explain(exc: BaseException) -> str:
    """A cluster error in one line."""
    if isinstance(exc, DynamicApiError):
        return f"API error {exc.status}: {exc.summary()}"
    return str(exc) or type(exc).__name__
