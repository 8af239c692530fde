"""The API's documents (pydantic; they are the OpenAPI schema)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ClusterShare(BaseModel):
    """An app in one member cluster."""

    name: str
    phase: str
    replicas: int = 0
    readyReplicas: int = 0
    message: str = ""


class AppSummary(BaseModel):
    """An app over every member cluster: the one document of an app that the API's lists,
    `pincompile get apps` and `pincompile status` give (one row of their tables)."""

    kind: str
    project: str
    name: str
    phase: str = Field(description="Healthy, Completed, Progressing, Degraded, Failed, "
                                   "Suspended, Missing or Unknown")
    ready: str = Field(description="ready/desired replicas across clusters")
    replicas: int = 0
    readyReplicas: int = 0
    clusters: list[ClusterShare] = []
    message: str = ""
    observedRevision: str = Field(default="", description="the commit that last changed the "
                                  "app's spec or compiled objects")
    lastAppliedRevision: str = ""
    lastAppliedTime: str = ""
    statusTime: str = Field(default="", description="when the host's record of the app was "
                            "last written (RFC 3339; a table's AGE)")
    rollout: dict[str, Any] | None = Field(default=None, description="zone-by-zone rollout: "
                                           "zones, the current one, phase, who paused it")
    failover: dict[str, Any] | None = Field(default=None, description="set while a cluster "
                                            "it runs in is lost or returning")
    conditions: list[dict[str, Any]] = []


class AppDetail(AppSummary):
    """An app with its spec, where it is placed and why, its last revisions and, for a
    PinScaler, what it scales."""

    spec: dict[str, Any] | None = Field(default=None, description="the app's spec as the "
                                        "last pass stored it on the host")
    source: str = Field(default="", description="the spec's file in the spec repository")
    placement: dict[str, Any] | None = Field(default=None, description="the clusters chosen "
                                             "(zone, replicas), the eligible ones in order, "
                                             "why each other was left out")

    history: list[dict[str, Any]] = Field(default=[], description="the last revisions "
                                          "applied, newest first: revision, appliedAt, result")
    scaling: dict[str, Any] | None = Field(default=None, description="a PinScaler: its "
                                           "floor, schedule, replicas and rebalanced maxima")


APP_LIST_VERSION = "pincompute.io/v1"


class AppList(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    apiVersion: str = APP_LIST_VERSION
    kind: str = "AppList"
    items: list[AppSummary]
    continue_: str | None = Field(None, alias="continue",
                                  description="pass as ?continue= for the next page")


class AppEvent(BaseModel):
    """One entry of an app's timeline."""

    time: datetime = Field(description="when it was last seen")
    firstSeen: datetime
    count: int
    cluster: str = Field(description="the member cluster, empty for the app itself")
    source: str = Field(description="kubernetes (an Event of a native object) or pincompile")
    type: str = Field(description="Normal or Warning")
    reason: str
    message: str
    object: str = Field(description="Kind/namespace/name of the native object, if any")


class AppRevision(BaseModel):
    revision: str
    appliedAt: datetime
    result: str = Field(description="the app's phase when this revision was first seen "
                        "(Healthy, Progressing, Degraded, ...)")
    commit: str
    author: str
    push: str = Field(description="the webhook delivery that triggered the pass")
    detail: str


class Problem(BaseModel):
    """Any refused call: 400, 401, 403, 404, 429 or 503."""

    detail: str


class ContainerPort(BaseModel):
    """A port a container declares (what ``port-forward`` resolves a named port to)."""

    name: str = ""
    containerPort: int
    protocol: str = "TCP"


class ContainerStatus(BaseModel):
    """One container of a pod, as its kubelet last reported it."""

    name: str
    type: str = Field(default="container", description="container (the spec's), sidecar "
                      "(an init container with restartPolicy: Always, running beside them) "
                      "or init (run to completion before them)")
    image: str = ""
    ready: bool = False
    restarts: int = 0
    state: str = Field(default="Unknown",
                       description="Running, Waiting, Terminated or Unknown")
    reason: str = Field(default="", description="why it is Waiting or Terminated "
                        "(CrashLoopBackOff, ImagePullBackOff, Completed, ...)")
    lastTerminationReason: str = Field(default="", description="why it last ended "
                                       "(OOMKilled, Error, ...), empty if it never did")
    lastTerminationExitCode: int | None = None
    ports: list[ContainerPort] = Field(default=[], description="the ports its spec declares")


class PodSummary(BaseModel):
    """One pod of an app in one member cluster (no managed fields, no spec)."""

    cluster: str
    namespace: str
    name: str
    node: str = ""
    phase: str = Field(default="Unknown",
                       description="Pending, Running, Succeeded, Failed or Unknown")
    ready: str = Field(default="0/0", description="ready/all containers, as kubectl counts "
                       "them: the spec's containers and the sidecars")
    restarts: int = 0
    created: str = ""
    containers: list[ContainerStatus] = Field(
        default=[], description="the spec's containers, then its init containers (sidecars "
                                "among them) in the pod's order")


class ClusterProblem(BaseModel):
    cluster: str
    message: str


class PodList(BaseModel):
    items: list[PodSummary]
    unreadable: list[ClusterProblem] = Field(
        default=[], description="member clusters whose pods could not be read: the list "
                                "may miss pods there")


class AppObject(BaseModel):
    """One object of an app in one member cluster, with its health."""

    cluster: str
    kind: str
    namespace: str
    name: str
    phase: str = Field(description="its health by the reconciler's rule for its kind")
    message: str = ""
    created: str = ""


class ObjectList(BaseModel):
    items: list[AppObject]
    unreadable: list[ClusterProblem] = Field(
        default=[], description="member clusters whose objects could not be read")


class PodUsage(BaseModel):
    """What one pod uses now (its metrics) against what it requests: every container's,
    the sidecars' too."""

    cluster: str
    namespace: str
    name: str
    measured: bool = Field(description="false: the metrics API has no sample of it yet")
    cpu: int = Field(description="millicores used")
    memory: int = Field(description="bytes used")
    cpuRequest: int = Field(description="millicores requested")
    memoryRequest: int = Field(description="bytes requested")


class UsageList(BaseModel):
    items: list[PodUsage]
    unreadable: list[ClusterProblem] = Field(
        default=[], description="member clusters whose metrics could not be read")


class ZoneStep(BaseModel):
    """One zone of a restart: the objects it patches there, in this order."""

    zone: str
    objects: list[str] = Field(description="CLUSTER: Kind/namespace/name")


class ActionAnswer(BaseModel):
    """What an action did or will do."""

    action: str = Field(description="restart, pause, resume or rerun")
    app: str = Field(description="KIND/PROJECT/NAME")
    user: str
    message: str
    zones: list[ZoneStep] = Field(default=[], description="restart: zone by zone, in order")
    objects: list[str] = Field(default=[], description="rerun: CLUSTER: Kind/namespace/name "
                                                       "deleted and created again")


class SpecEdit(Problem):
    """A change of desired state is a commit, never an API call: the edit to commit."""

    file: str = Field(description="the spec's file in the spec repository")
    field: str = Field(description="the field to change, e.g. spec.replicas")
    value: Any
    command: str = Field(description="the `pincompile set` command that makes the edit")
