"""The status schemas of the custom resources: what the reconciler writes back for each
workload, scaler, member cluster, project and platform kind."""

from __future__ import annotations

import copy
from typing import Any


def _int(description: str) -> dict[str, Any]:
    return {"type": "integer", "format": "int32", "minimum": 0, "description": description}


def _str(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


_TIME = {"type": "string", "format": "date-time"}
_CONDITIONS = {
    "type": "array",
    "description": "Latest observations (Kubernetes condition conventions), e.g. Ready, "
                   "Progressing, Compiled.",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
    "items": {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": _str("Condition type, e.g. Ready.", maxLength=316),
            "status": _str("True, False or Unknown.", enum=["True", "False", "Unknown"]),
            "reason": _str("One CamelCase word saying why.", maxLength=1024),
            "message": _str("What happened, for people.", maxLength=32768),
            "lastTransitionTime": {**_TIME, "description": "When status last changed."},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0,
                                   "description": "metadata.generation the condition is for."},
        },
    },
}
_QUANTITIES = {"type": "object", "additionalProperties": {
    "anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}}


def _common_status() -> dict[str, Any]:
    return {
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0,
                               "description": "The metadata.generation last acted on."},
        "observedRevision": _str("The git revision last compiled and applied."),
        "conditions": copy.deepcopy(_CONDITIONS),
        "message": _str("A human summary of the current state."),
    }


WORKLOAD_PHASES = ["Healthy", "Completed", "Progressing", "Degraded", "Failed", "Suspended",
                   "Missing", "Unknown"]


def workload_status() -> dict[str, Any]:
    """Aggregated status of a workload over every member cluster it is placed in."""
    counts = {
        "replicas": _int("Desired pods (replicas, shards or training replicas)."),
        "readyReplicas": _int("Pods that are ready."),
        "updatedReplicas": _int("Pods that run the current revision."),
        "active": _int("Job pods running (job kinds)."),
        "succeeded": _int("Job pods or shards that finished successfully (job kinds)."),
        "failed": _int("Job pods or shards that failed (job kinds)."),
    }
    cluster = {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": _str("Member cluster name."),
            "phase": _str("Phase in this cluster.", enum=WORKLOAD_PHASES),
            **copy.deepcopy(counts),
            "observedRevision": _str("The git revision applied to this cluster."),
            "lastSyncTime": {**_TIME, "description": "When this cluster was last reconciled."},
            "message": _str("Why the cluster is not Ready, if it is not."),
            "conditions": copy.deepcopy(_CONDITIONS),
        },
    }
    return {
        "type": "object",
        "description": "Written by the reconciler: the workload over all its member clusters.",
        "properties": {
            "phase": _str("Overall phase; the worst of the clusters' phases.",
                          enum=WORKLOAD_PHASES),
            "ready": _str("Ready pods over desired pods, e.g. \"12/12\" (for kubectl get)."),
            **counts,
            **_common_status(),
            "lastAppliedRevision": _str("The git revision of the last pass that changed "
                                        "something of this app."),
            "lastAppliedTime": {**_TIME, "description": "When that pass ran."},
            "rollout": _rollout_status(),
            "failover": _app_failover_status(),
            "placement": {
                "type": "object",
                "description": "Where the specs place the app, and why.",
                "properties": {
                    "clusters": {"type": "array", "description": "The clusters chosen.",
                                 "items": {"type": "object", "properties": {
                                     "name": _str("Member cluster name."),
                                     "zone": _str("Its zone."),
                                     "replicas": _int("Replicas (or shards) there.")}}},
                    "eligible": {"type": "array", "items": {"type": "string"},
                                 "description": "Clusters every filter passed, in the "
                                                "order they are chosen in."},
                    "filtered": {"type": "object", "additionalProperties": {"type": "string"},
                                 "description": "Why each other cluster was left out."},
                    "notes": {"type": "array", "items": {"type": "string"},
                              "description": "Placement's remarks (a zone that was full)."},
                },
            },
            "history": {
                "type": "array", "maxItems": 50,
                "description": "The last revisions applied to this app, newest first (as "
                               "`pincompile history` shows them without the insight store).",
                "items": {"type": "object", "required": ["revision"], "properties": {
                    "revision": _str("The git revision (the commit that changed the app)."),
                    "appliedAt": {**_TIME, "description": "When a pass first applied it."},
                    "result": _str("The app's phase while this revision was the current "
                                   "one (the last it had, once replaced)."),
                }},
            },
            "clusters": {
                "type": "array",
                "description": "Per member cluster the workload is placed in.",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": cluster,
            },
        },
    }


def _rollout_status() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "Zone-by-zone rollout: which template is going where.",
        "properties": {
            "target": _str("Digest of the pod templates being rolled out."),
            "revision": _str("The git revision that started this rollout."),
            "zones": {"type": "array", "items": {"type": "string"},
                      "description": "Zones in rollout order."},
            "zoneIndex": _int("Index of the zone being rolled out (= number of zones when "
                              "complete)."),
            "zone": _str("The zone being rolled out (empty when complete)."),
            "phase": _str("Progressing, Halted or Complete.",
                          enum=["Progressing", "Halted", "Complete"]),
            "message": _str("Why the rollout halted or waits, if it does."),
            "since": {**_TIME, "description": "When the current zone started."},
            "pausedBy": _str("Who paused the rollout (`pincompile rollout pause`): the "
                             "next zone waits until it is resumed."),
        },
    }


def _app_failover_status() -> dict[str, Any]:
    counts = {"type": "object", "additionalProperties": {"type": "integer", "format": "int32"}}
    return {
        "type": "object",
        "description": "Set while a member cluster the workload runs in is lost or returning: "
                       "where its share runs meanwhile.",
        "properties": {
            "phase": _str("FailedOver (a cluster is lost), FailingBack (its share moves back "
                          "in steps) or Stranded (a PinPod with failover: false).",
                          enum=["FailedOver", "FailingBack", "Stranded"]),
            "clusters": {"type": "array", "items": {"type": "string"},
                         "description": "The lost or returning clusters."},
            "message": _str("What moved where, for people."),
            "replicas": {**counts, "description": "Replicas per cluster now."},
            "normalReplicas": {**copy.deepcopy(counts),
                               "description": "Replicas per cluster where the specs put them."},
            "failback": {"type": "object", "description": "Progress moving back.",
                         "properties": {"back": _int("Replicas back already."),
                                        "of": _int("Replicas to move back in all.")}},
            "capacity": {
                "type": "object",
                "description": "A PinScaler: the other clusters' HPA floors hold the replicas "
                               "the lost clusters ran, until they return.",
                "properties": {
                    "carried": {**copy.deepcopy(counts),
                                "description": "Replicas each lost cluster ran when last read."},
                    "floors": {**copy.deepcopy(counts),
                               "description": "minReplicas per other cluster, holding them."},
                }},
        },
    }


def scaler_status() -> dict[str, Any]:
    status = workload_status()
    status["description"] = ("Written by the reconciler: the scaler's HPAs over all member "
                             "clusters, and what the autoscaler decided.")
    status["properties"].update({
            "currentReplicas": _int("Replicas running over all clusters."),
            "desiredReplicas": _int("Replicas the scaler last asked for."),
            "floor": _int("The effective minimum now (a schedule may raise minReplicas)."),
            "clusterReplicas": {
                "type": "object", "additionalProperties": {"type": "integer"},
                "description": "Per cluster, the target's replicas when it was last read "
                               "(failover carries a lost cluster's to the others)."},
            "activeSchedule": _str("The cron of the schedule in force, if any."),
            "lastScaleTime": {**_TIME, "description": "When the replica count last changed."},
            "rebalance": {
                "type": "object",
                "description": "HPA maxima moved toward clusters that ran at their maximum "
                               "while others had room (they add up to maxReplicas).",
                "properties": {
                    "maxReplicas": {"type": "object", "description": "Per cluster, now.",
                                    "additionalProperties": {"type": "integer"}},
                    "basis": {"type": "object", "description": "Per cluster, as compiled.",
                              "additionalProperties": {"type": "integer"}},
                    "reason": _str("Why the last move was made."),
                    "since": {**_TIME, "description": "When the last move was made."},
                },
            },
    })
    return status


def cluster_status() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "Written by the reconciler: whether the member cluster is reachable.",
        "properties": {
            "phase": _str("Ready, NotReady, Cordoned or Unknown (unreachable).",
                          enum=["Ready", "NotReady", "Cordoned", "Unknown"]),
            "kubernetesVersion": _str("The version its API server reports."),
            "lastProbeTime": {**_TIME, "description": "When the cluster was last reached."},
            "allocatable": {**copy.deepcopy(_QUANTITIES),
                            "description": "Sum of its nodes' allocatable resources."},
            "allocated": {
                "type": "object", "description": "Requests placed here, per tier.",
                "additionalProperties": copy.deepcopy(_QUANTITIES)},
            "failover": {
                "type": "object",
                "description": "Failover state: a cluster unreachable past the grace period "
                               "(or cordoned) is Lost and its share of every app runs "
                               "elsewhere; once it answers again it is Returning.",
                "properties": {
                    "phase": _str("Reachable, Unreachable (under the grace period), Lost or "
                                  "Returning.",
                                  enum=["Reachable", "Unreachable", "Lost", "Returning"]),
                    "reason": _str("Why, for people."),
                    "since": {**_TIME, "description": "When the phase began."},
                    "unreachableSince": {**_TIME, "description": "Start of the current run "
                                                                 "of failed passes."},
                    "failbackSteps": _int("Returning: failback steps taken."),
                },
            },
            "remediation": _remediation_status(),
            "rotation": _rotation_status(),
            **_common_status(),
        },
    }


def _remediation_status() -> dict[str, Any]:
    action = {"type": "object", "properties": {
        "node": _str("The node acted on."), "action": _str("cordon, drain or terminate."),
        "at": {**_TIME, "description": "When it started."},
        "reason": _str("The signal that held, and for how long.")}}
    return {
        "type": "object",
        "description": "Written by serve's remediation: the circuit breaker and the actions of "
                       "the last hour (what the hourly limit counts).",
        "properties": {
            "circuit": _str("Closed (acting) or Open (too many nodes unhealthy: nothing is "
                            "done).", enum=["Closed", "Open"]),
            "reason": _str("Why the circuit is open."),
            "since": {**_TIME, "description": "When the circuit last changed."},
            "unhealthy": _int("Nodes with a signal now."),
            "nodes": _int("Nodes in the cluster."),
            "actions": {"type": "array", "items": action,
                        "description": "Actions started in the last hour, oldest first."},
            "mode": _str("enforce or dry-run."),
        },
    }


def _rotation_status() -> dict[str, Any]:
    node = {"type": "object", "required": ["name"], "properties": {
        "name": _str("The node being replaced."), "pool": _str("Its pool."),
        "uid": _str("Its uid when the rotation started."),
        "state": _str("Pending, Draining, Drained, Removed or Replaced.",
                      enum=["Pending", "Draining", "Drained", "Removed", "Replaced"]),
        "replacement": _str("The node that replaced it."),
        "version": _str("The replacement's pool version label."),
        "since": {**_TIME, "description": "When it entered its state."},
        "startedAt": {**_TIME, "description": "When it was cordoned."},
        "affected": {"type": "array", "items": {"type": "string"},
                     "description": "Workloads whose pods it moved (Kind/namespace/name): "
                                    "the rotation waits until they are Ready again."}}}
    return {
        "type": "object",
        "description": "Written by serve: the node rotation `pincompile rotate` asked for, so "
                       "a restarted or new leader resumes it.",
        "properties": {
            "id": _str("The request it runs (its time and who asked)."),
            "requestedBy": _str("Who asked."),
            "phase": _str("Running, Waiting (a step waits, see message), Paused or "
                          "Complete.", enum=["Running", "Waiting", "Paused", "Complete"]),
            "message": _str("What the rotation does or waits for, for people."),
            "pool": _str("Only this pool's nodes (empty: every pool)."),
            "batch": _int("Nodes replaced at once."),
            "pauseSeconds": _int("Seconds between batches."),
            "started": {**_TIME, "description": "When it started."},
            "finished": {**_TIME, "description": "When its last node was replaced."},
            "nextBatchAt": {**_TIME, "description": "When the next batch may start."},
            "nodes": {"type": "array", "items": node,
                      "description": "Every node to replace, in order."},
        },
    }


def project_status() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "Written by the reconciler: the project's namespace and quota use.",
        "properties": {
            "namespace": _str("The namespace its workloads live in."),
            "usage": {"type": "object", "description": "Requests in use, per tier.",
                      "additionalProperties": copy.deepcopy(_QUANTITIES)},
            **_common_status(),
        },
    }


def platform_status(what: str) -> dict[str, Any]:
    return {"type": "object", "description": f"Written by the reconciler: {what}.",
            "properties": _common_status()}
