"""The memory of the API's member caches (:class:`reconciler.api.pods.MemberPods`) at N
apps x C member clusters: the pods watch of each cluster holds
:func:`reconciler.api.pods.lean_pod` of every pod that carries an app's label, and the
Events watch :func:`reconciler.api.member_events.lean_event` of each Event of an app's
kinds.

The objects are synthetic but shaped like a Deployment's pods and their Events on a real
cluster: 3 pods per app per cluster (a ReplicaSet's, scheduled and Running, with the
controller's, the scheduler's and the kubelet's managed fields), and the Events one
rollout inside the Events' TTL leaves (:data:`EVENTS_PER_ROLLOUT`).
"""

from __future__ import annotations

import json
import tracemalloc
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from reconciler.api.member_events import lean_event, pods_objects
from reconciler.api.pods import lean_pod

PODS_PER_APP = 3
EVENTS_PER_ROLLOUT = (
    [("Deployment", "ScalingReplicaSet", "Scaled up replica set {rs} from 0 to 3"),
     ("Deployment", "ScalingReplicaSet", "Scaled down replica set {old} from 3 to 0")]
    + [("ReplicaSet", "SuccessfulCreate", "Created pod: {pod}")] * PODS_PER_APP
    + [("ReplicaSet", "SuccessfulDelete", "Deleted pod: {old}-7c9d8")] * PODS_PER_APP
    + [("Pod", "Scheduled", "Successfully assigned {ns}/{pod} to {node}"),
       ("Pod", "Pulling", "Pulling image \"{image}\""),
       ("Pod", "Pulled", "Successfully pulled image \"{image}\" in 2.1s (2.1s including "
                         "waiting). Image size: 48211932 bytes."),
       ("Pod", "Created", "Created container: main"),
       ("Pod", "Started", "Started container main")] * PODS_PER_APP
    + [("Pod", "Killing", "Stopping container main")] * PODS_PER_APP)
"""(kind, reason, message) of each Event a rolling update of a 3-replica Deployment
leaves in one cluster: 26 (a cluster keeps Events for an hour by default)."""
MIB = 1024 * 1024


def fields(document: Any, keyed_lists: bool = True) -> Any:
    """The ``fieldsV1`` set the API server records for ``document``: every map key, and
    a list of maps keyed by its first item's name (``keyed_lists``: a pod's containers,
    conditions, ...) or atomic."""
    if isinstance(document, dict):
        return {f"f:{k}": fields(v, keyed_lists) for k, v in document.items()}
    if keyed_lists and isinstance(document, list) and document \
            and isinstance(document[0], dict):
        key = document[0].get("name") or document[0].get("type") or ""
        return {f'k:{{"name":"{key}"}}': fields(document[0])}
    return {}


def entry(manager: str, operation: str, of: dict[str, Any], sub: str | None = None
          ) -> dict[str, Any]:
    out = {"manager": manager, "operation": operation, "apiVersion": "v1",
           "time": "2026-11-26T09:00:02Z", "fieldsType": "FieldsV1", "fieldsV1": fields(of)}
    return {**out, "subresource": sub} if sub else out


def pod(app: tuple[str, str, str], cluster: str, index: int) -> dict[str, Any]:
    """One of ``app``'s pods in ``cluster`` as the API server sends it."""
    kind, project, name = app
    rs = f"{name}-5d8f6b9c7"
    pod_name = f"{rs}-{index:05x}"[:63]
    labels = {"app.kubernetes.io/managed-by": "pincompile", "pincompute.io/app": name,
              "pincompute.io/project": project, "pincompute.io/kind": kind,
              "pod-template-hash": "5d8f6b9c7"}
    image = f"registry.internal/{project}/{name}:1.4.2"
    container = {
        "name": "main", "image": image, "args": ["--port=8080"],
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": [{"name": "PINCOMPUTE_APP", "value": name},
                {"name": "PINCOMPUTE_CLUSTER", "value": cluster}],
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                      "limits": {"memory": "1Gi"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"},
                           "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                           "failureThreshold": 3},
        "volumeMounts": [{"name": "kube-api-access-x7k2p", "readOnly": True,
                          "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}
    spec = {
        "volumes": [{"name": "kube-api-access-x7k2p", "projected": {"sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt",
                           "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}],
            "defaultMode": 420}}],
        "containers": [container], "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default", "serviceAccount": "default",
        "nodeName": f"{cluster}-node-{index % 8}", "securityContext": {},
        "schedulerName": "default-scheduler",
        "tolerations": [{"key": f"node.kubernetes.io/{t}", "operator": "Exists",
                         "effect": "NoExecute", "tolerationSeconds": 300}
                        for t in ("not-ready", "unreachable")],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                       "whenUnsatisfiable": "ScheduleAnyway",
                                       "labelSelector": {"matchLabels": {
                                           "pincompute.io/app": name}}}],
        "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority"}
    conditions = [{"type": t, "status": "True", "lastProbeTime": None,
                   "lastTransitionTime": "2026-11-26T09:00:04Z"}
                  for t in ("PodReadyToStartContainers", "Initialized", "Ready",
                            "ContainersReady", "PodScheduled")]
    ip = f"10.{64 + index % 8}.{index // 250 % 250}.{index % 250 + 1}"
    status = {
        "phase": "Running", "conditions": conditions, "hostIP": "127.0.0.1",
        "hostIPs": [{"ip": "127.0.0.1"}], "podIP": ip, "podIPs": [{"ip": ip}],
        "startTime": "2026-11-26T09:00:02Z", "qosClass": "Burstable",
        "containerStatuses": [{
            "name": "main", "state": {"running": {"startedAt": "2026-11-26T09:00:03Z"}},
            "lastState": {}, "ready": True, "restartCount": 0, "image": image,
            "imageID": f"{image.split(':')[0]}@sha256:{uuid.uuid4().hex}{uuid.uuid4().hex}",
            "containerID": f"containerd://{uuid.uuid4().hex}{uuid.uuid4().hex}",
            "started": True}]}
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
             "uid": str(uuid.uuid4()), "controller": True, "blockOwnerDeletion": True}
    meta_set = {"generateName": f"{rs}-", "labels": labels, "ownerReferences": [owner]}
    metadata = {
        "name": pod_name, "generateName": f"{rs}-", "namespace": project,
        "uid": str(uuid.uuid4()), "resourceVersion": str(100_000 + index),
        "creationTimestamp": "2026-11-26T09:00:02Z", "labels": labels,
        "ownerReferences": [owner],
        "managedFields": [
            entry("kube-controller-manager", "Update", {"metadata": meta_set,
                                                        "spec": spec}),
            entry("kube-scheduler", "Update", {"status": {"conditions": conditions[-1:]}},
                  "status"),
            entry("kubelet", "Update", {"status": status}, "status")]}
    return {"kind": "Pod", "apiVersion": "v1", "metadata": metadata, "spec": spec,
            "status": status}


def events(pods: list[dict[str, Any]], cluster: str) -> Iterator[dict[str, Any]]:
    """The Events one rollout of the app of ``pods`` (one cluster's) leaves, as the API
    server sends them."""
    first = pods[0]["metadata"]
    project, rs = first["namespace"], first["ownerReferences"][0]["name"]
    deployment = rs.rsplit("-", 1)[0]
    image = pods[0]["spec"]["containers"][0]["image"]
    uids = {("Deployment", deployment): str(uuid.uuid4()), ("ReplicaSet", rs): str(uuid.uuid4())}
    names = [p["metadata"]["name"] for p in pods]
    for i, (kind, reason, message) in enumerate(EVENTS_PER_ROLLOUT):
        pod_name = names[i % len(names)]
        name = {"Deployment": deployment, "ReplicaSet": rs, "Pod": pod_name}[kind]
        text = message.format(rs=rs, old=f"{deployment}-6f7b8c9d4", pod=pod_name, ns=project,
                              node=pods[0]["spec"]["nodeName"], image=image)
        source = {"Deployment": "deployment-controller", "ReplicaSet": "replicaset-controller",
                  "Pod": "kubelet"}[kind]
        yield {
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": f"{name}.{uuid.uuid4().hex[:16]}", "namespace": project,
                         "uid": str(uuid.uuid4()), "resourceVersion": str(200_000 + i),
                         "creationTimestamp": "2026-11-26T09:00:02Z",
                         "managedFields": [entry(source, "Update", {
                             "count": 1, "firstTimestamp": "", "lastTimestamp": "",
                             "involvedObject": {"kind": "", "name": ""}, "message": "",
                             "reason": "", "reportingComponent": "", "source": {},
                             "type": ""})]},
            "involvedObject": {"kind": kind, "namespace": project, "name": name,
                               "uid": uids.get((kind, name)) or str(uuid.uuid4()),
                               "apiVersion": "v1" if kind == "Pod" else "apps/v1",
                               "resourceVersion": str(100_000 + i)},
            "reason": reason, "message": text,
            "source": {"component": source, "host": f"{cluster}-node-0"}
            if kind == "Pod" else {"component": source},
            "firstTimestamp": "2026-11-26T09:00:02Z", "lastTimestamp": "2026-11-26T09:00:02Z",
            "count": 1, "type": "Normal", "eventTime": None, "reportingComponent": source,
            "reportingInstance": ""}


def texts(apps: Iterable[tuple[str, str, str]], clusters: list[str]
          ) -> tuple[list[str], list[str]]:
    """The JSON text of every pod and of every Event the watches would receive."""
    pod_texts: list[str] = []
    event_texts: list[str] = []
    for cluster in clusters:
        for i, app in enumerate(apps):
            pods = [pod(app, cluster, PODS_PER_APP * i + n) for n in range(PODS_PER_APP)]
            pod_texts += [json.dumps(p) for p in pods]
            event_texts += [json.dumps(e) for e in events(pods, cluster)]
    return pod_texts, event_texts


def memory(apps: list[tuple[str, str, str]], clusters: list[str]) -> list[str]:
    """Table rows: what the member pods' and Events' caches hold for ``apps`` placed in
    every one of ``clusters`` (traced Python allocations), each object kept as its watch
    keeps it (the product's ``keep``: :func:`reconciler.api.pods.lean_pod`,
    :func:`reconciler.api.member_events.lean_event`); and, for comparison, the pods whole."""
    pod_texts, event_texts = texts(apps, clusters)
    tracemalloc.start()
    pods = [lean_pod(json.loads(text)) for text in pod_texts]
    held_pods = tracemalloc.get_traced_memory()[0]
    kept = [lean_event(json.loads(text)) for text in event_texts]
    held_events = tracemalloc.get_traced_memory()[0] - held_pods
    refs = pods_objects(pods)  # an Events round's apps of the pods and their owners
    held_refs = tracemalloc.get_traced_memory()[0] - held_pods - held_events
    del refs, pods
    before = tracemalloc.get_traced_memory()[0]
    whole = [json.loads(text) for text in pod_texts]
    whole_pods = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    count = len(whole)
    del whole
    pod_bytes = sum(map(len, pod_texts)) / len(pod_texts)
    event_bytes = sum(map(len, event_texts)) / len(event_texts)
    return [
        f"| the member pods' cache ({count:,} pods: {PODS_PER_APP} per app in each of "
        f"{len(clusters)} clusters, {pod_bytes:,.0f} B of JSON each, kept lean) | "
        f"{held_pods / MIB:.1f} MiB ({held_pods / count:,.0f} B per pod) |",
        f"| ... the same pods whole, managed fields included (what the watch kept before "
        f"`lean_pod`) | {whole_pods / MIB:.1f} MiB ({whole_pods / count:,.0f} B per pod) |",
        f"| the member Events' cache ({len(kept):,} Events: {len(EVENTS_PER_ROLLOUT)} per app "
        f"per cluster, one rolling update's, {event_bytes:,.0f} B of JSON each, kept lean) | "
        f"{held_events / MIB:.1f} MiB ({held_events / len(kept):,.0f} B per Event) |",
        f"| an Events round's map of the pods and their owners to apps (built each round) | "
        f"{held_refs / MIB:.1f} MiB |",
        f"| **the member caches in all** (pods and Events, as kept now) | "
        f"**{(held_pods + held_events) / MIB:,.1f} MiB** "
        f"({(held_pods + held_events) / len(apps) / 1024:,.0f} KiB per app) |"]
