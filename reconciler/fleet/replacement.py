"""The local fleet's nodes as a machine provider would run them, for remediation and
rotation to act on for real:

* :func:`set_condition` makes a kwok node report a condition (``Ready=False``, a
  node-problem-detector condition such as ``KernelDeadlock=True``) and keeps kwok from
  resetting it (the annotation :data:`HOLD_ANNOTATION`, which the fleet's node stages
  skip); :func:`heal` makes it healthy again.
* :func:`add_nodes` adds kwok nodes cloned from one of the cluster's own.
* :class:`Replacer` is the provider's other half: every kwok node deleted in a member
  cluster (a terminated or rotated machine) is replaced by a new one of the same pool,
  labelled with the pool's version (:data:`POOL_VERSION_LABEL`), as a node group brings
  up a machine of its current image.

``python -m reconciler.fleet.replacement CONTEXT --version v2`` runs a Replacer for one
member cluster of the running fleet until Ctrl-C (what ``pincompile rotate`` needs there).
"""

from __future__ import annotations

import argparse
import copy
import itertools
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from reconciler.fleet.nodes import (
    KWOK_ANNOTATION,
    METRICS_PATH_ANNOTATION,
    POOL_LABEL,
    addresses,
)

HOLD_ANNOTATION = "kwok.pincompute.io/hold-status"
POOL_VERSION_LABEL = "pincompute.io/pool-version"
HEALTHY = {"Ready": "True"}
"""A condition's healthy status (every other condition: False)."""
_KEPT_STATUS = ("allocatable", "capacity", "nodeInfo")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def set_condition(api: Any, node: str, condition: str, status: str,
                  reason: str = "FleetTest", message: str = "set by the fleet") -> None:
    """Make ``node`` report ``condition=status`` from now on (kwok leaves it alone)."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    core.patch_node(node, {"metadata": {"annotations": {HOLD_ANNOTATION: "true"}}})
    core.patch_node_status(node, {"status": {"conditions": [{
        "type": condition, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": _now(), "lastHeartbeatTime": _now()}]}})


def heal(api: Any, node: str, condition: str) -> None:
    """Make ``node``'s ``condition`` healthy again and give its status back to kwok."""
    set_condition(api, node, condition, HEALTHY.get(condition, "False"), "FleetTestHealed",
                  "healthy again")
    from kubernetes import client

    client.CoreV1Api(api).patch_node(node, {"metadata": {"annotations": {
        HOLD_ANNOTATION: None}}})


def clone(template: Mapping[str, Any], name: str, labels: Mapping[str, str] | None = None
          ) -> dict[str, Any]:
    """A new kwok Node object like ``template`` (a Node as read), named ``name``."""
    meta = template.get("metadata") or {}
    new_labels = {**(meta.get("labels") or {}), **(labels or {}),
                  "kubernetes.io/hostname": name}
    status = template.get("status") or {}
    # the node controller's taints (not-ready, unschedulable, ...) are its own, not the pool's
    taints = [copy.deepcopy(t) for t in (template.get("spec") or {}).get("taints") or []
              if not str(t.get("key", "")).startswith("node.kubernetes.io/")]
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": new_labels, "annotations": {
            KWOK_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0",
            METRICS_PATH_ANNOTATION: f"/metrics/nodes/{name}/metrics/resource"}},
        "spec": {"taints": taints} if taints else {},
        "status": {**{k: copy.deepcopy(status[k]) for k in _KEPT_STATUS if k in status},
                   "addresses": addresses(name)},
    }


def create(api: Any, node: Mapping[str, Any]) -> None:
    """Create a kwok Node (its status too: a create does not always keep it)."""
    from kubernetes import client

    core: Any = client.CoreV1Api(api)
    core.create_node(body=dict(node))
    core.patch_node_status(node["metadata"]["name"], {"status": node["status"]})


def add_nodes(api: Any, count: int, *, like: str | None = None, suffix: str = "extra"
              ) -> list[str]:
    """``count`` more kwok nodes like ``like`` (default: the first general node)."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    nodes = [api.sanitize_for_serialization(n) for n in core.list_node(
        label_selector=f"{POOL_LABEL}=general").items]
    template = next((n for n in nodes if n["metadata"]["name"] == like), None) \
        if like else (nodes[0] if nodes else None)
    if template is None:
        raise ValueError(f"no node {like or 'of pool general'} to clone")
    base = str(template["metadata"]["labels"].get("pincompute.io/cluster") or "node")
    names = []
    for index in range(count):
        name = f"{base}-{suffix}-{index}"
        create(api, clone(template, name))
        names.append(name)
    return names


class Replacer:
    """Replaces every kwok node deleted in one member cluster (``api``) by a new node of
    its pool labelled ``version``, until :meth:`stop`; ``replaced`` maps each deleted
    node to its replacement."""

    def __init__(self, api: Any, version: str, *, delay: float = 0.0) -> None:
        self.api, self.version, self.delay = api, version, delay
        self.replaced: dict[str, str] = {}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._numbers = itertools.count(1)
        self._thread = threading.Thread(target=self._run, daemon=True, name="fleet-replacer")

    def start(self) -> Replacer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        from kubernetes import client, watch

        core: Any = client.CoreV1Api(self.api)
        version = core.list_node().metadata.resource_version
        while not self._stop.is_set():
            stream = watch.Watch().stream(core.list_node, resource_version=version,
                                          timeout_seconds=5)
            try:
                for event in stream:
                    obj = event["raw_object"]
                    version = obj["metadata"]["resourceVersion"]
                    if event["type"] == "DELETED":
                        self._replace(obj)
                    if self._stop.is_set():
                        return
            except Exception as exc:  # the watch broke (410, a restart): list again
                self.errors.append(str(exc))
                version = core.list_node().metadata.resource_version

    def _replace(self, old: Mapping[str, Any]) -> None:
        meta = old.get("metadata") or {}
        labels = meta.get("labels") or {}
        if (meta.get("annotations") or {}).get(KWOK_ANNOTATION) != "fake" \
                or POOL_LABEL not in labels:
            return
        if self.delay:
            self._stop.wait(self.delay)
        base = f"{labels.get('pincompute.io/cluster', 'node')}-{labels[POOL_LABEL]}"
        name = f"{base}-{self.version}-{next(self._numbers)}"
        create(self.api, clone(old, name, {POOL_VERSION_LABEL: self.version}))
        self.replaced[str(meta.get("name"))] = name


@contextmanager
def replacing(api: Any, version: str) -> Iterator[Replacer]:
    """A running :class:`Replacer` for the ``with`` block."""
    replacer = Replacer(api, version).start()
    try:
        yield replacer
    finally:
        replacer.stop()


def main(argv: list[str] | None = None) -> None:
    """Run a Replacer on one context of the running local fleet until Ctrl-C."""
    from kubernetes import config

    from pincompile.contract import local_fleet_kubeconfig

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("context")
    parser.add_argument("--version", required=True)
    parser.add_argument("--kubeconfig", default=None)
    args = parser.parse_args(argv)
    api = config.new_client_from_config(
        config_file=args.kubeconfig or str(local_fleet_kubeconfig()), context=args.context)
    with replacing(api, args.version) as replacer:
        print(f"replacing deleted nodes of {args.context} with version {args.version} "
              "(Ctrl-C ends)", flush=True)
        seen = 0
        try:
            while True:
                time.sleep(1)
                for old, new in list(replacer.replaced.items())[seen:]:
                    print(f"{old} -> {new}", flush=True)
                seen = len(replacer.replaced)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
