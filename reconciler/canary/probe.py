"""One probe of the canary in one member cluster and tier, as a user would launch it.

The probe workload is compiled from the served revision (:func:`compile_probe`: the
platform project's quota and tiers, the cluster's placement rules, injection), applied
to the cluster with server-side apply (after the project's ResourceQuotas there, sized as
a pass would size them with the probe placed there; sized as served again at the end),
and timed from the first write until every replica is Ready (the launch SLI); then one
of its pods' logs are read and a command is run in it through the API's own logs and exec
code (the debugging path); then it is deleted. Every
stage is bounded by the probe's deadline; a failure at any stage (the compile or placement
included) is a failed probe, never an exception, and the probe's objects are deleted
whatever happened.

The objects carry ``app.kubernetes.io/managed-by: pincompile-canary`` instead of
``pincompile``, so a reconcile pass never prunes or adopts them, and the label
``pincompute.io/canary`` (their probe's id), by which leftovers are found.
"""

from __future__ import annotations

import copy
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import DynamicApiError

from pincompile.contract import (
    LABEL_APP,
    MANAGED_BY,
    PROBE_CONTAINER,
    CanaryPolicy,
    Manifest,
    Result,
    compile_probe,
)
from reconciler.clients.access import ClusterAccess
from reconciler.clients.connect import CONNECT_ERRORS, ClusterUnreachable, Connection
from reconciler.clients.write import apply, delete
from reconciler.kinds import KindInfo, order
from reconciler.model import Obj

CANARY_MANAGER = "pincompile-canary"
"""The probe objects' ``managed-by`` value and the field manager of their writes."""
LABEL_CANARY = "pincompute.io/canary"
STAGES = ("compile", "apply", "launch", "logs", "exec")
PASSED = "passed"
POD = KindInfo("v1", "Pod")
FAILURES = (ApiException, DynamicApiError, ClusterUnreachable, *CONNECT_ERRORS, OSError,
             ValueError, LookupError)


@dataclass
class ProbeResult:
    """How one probe went. ``stage`` is where it failed (``passed`` when it did not)."""

    cluster: str
    tier: str
    started: datetime
    ok: bool = False
    stage: str = "compile"
    message: str = ""
    launch_seconds: float | None = None
    """First write to every replica Ready (None: it did not get there)."""
    logs_ok: bool | None = None
    exec_ok: bool | None = None
    seconds: float = 0.0
    """The whole probe, cleanup included."""
    requests: int = 0
    """API requests the probe made to the member cluster."""

    def document(self) -> dict[str, Any]:
        out = asdict(self)
        out["started"] = self.started.isoformat().replace("+00:00", "Z")
        return out


class ProbeFailed(Exception):
    """A stage failed; the message says why, for people."""


def probe_name(tier: str) -> str:
    """A fresh name for one probe (its objects and its id)."""
    return f"pincompile-canary-{tier[:4]}-{secrets.token_hex(3)}"


def canary_objects(manifests: Sequence[Manifest], probe: str) -> list[Obj]:
    """The compiled objects as the canary writes them: managed by the canary, labelled
    with the probe's id (the pods too), their pods within Pod Security ``restricted``, in
    apply order."""
    out = []
    for manifest in sorted(manifests, key=lambda m: order(m.kind)):
        obj = copy.deepcopy(manifest.obj)
        template = (obj.get("spec") or {}).get("template")
        for meta in (obj["metadata"], (template or {}).get("metadata")):
            if meta is not None:
                labels = meta.setdefault("labels", {})
                labels[MANAGED_BY] = CANARY_MANAGER
                labels[LABEL_CANARY] = probe
        if template is not None:
            restricted(template.setdefault("spec", {}))
        out.append(obj)
    return out


def restricted(pod: Obj) -> Obj:
    """Fill in what Pod Security ``restricted`` asks of a pod and its containers where the
    compile left it unset (never loosening what is set): non-root (uid 65534 unless one is
    given), seccomp RuntimeDefault, no privilege escalation, every capability dropped."""
    context = pod.setdefault("securityContext", {})
    context.setdefault("runAsNonRoot", True)
    context.setdefault("seccompProfile", {"type": "RuntimeDefault"})
    for container in [*(pod.get("initContainers") or ()), *(pod.get("containers") or ())]:
        own = container.setdefault("securityContext", {})
        if not own.get("runAsUser") and not context.get("runAsUser"):
            own["runAsUser"] = 65534
        own.setdefault("allowPrivilegeEscalation", False)
        own.setdefault("capabilities", {}).setdefault("drop", ["ALL"])
    return pod


class Probe:
    """One probe: :meth:`run` it once."""

    def __init__(self, conn: Connection, served: Result, policy: CanaryPolicy, cluster: str,
                 tier: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.conn, self.served = conn, served
        self.policy, self.cluster, self.tier, self.clock = policy, cluster, tier, clock
        self.name = probe_name(tier)
        self.objects: list[Obj] = []
        self.restore: list[Obj] = []
        """The project's quotas as the served revision sizes them, where the probe raised
        them."""

    def run(self) -> ProbeResult:
        result = ProbeResult(self.cluster, self.tier, datetime.now(UTC))
        start = self.clock()
        before = sum(self.conn.stats.by_verb.values())
        deadline = start + self.policy.timeout_seconds
        try:
            self._stages(result, start, deadline)
            result.ok, result.stage = True, PASSED
        except ProbeFailed as exc:
            result.message = str(exc)
        except FAILURES as exc:
            result.message = reason_of(exc)
        finally:
            cleanup = self._remove()
            if cleanup and result.ok:
                result.ok, result.stage, result.message = False, "cleanup", cleanup
            result.seconds = round(self.clock() - start, 3)
            result.requests = sum(self.conn.stats.by_verb.values()) - before
        return result

    def _stages(self, result: ProbeResult, start: float, deadline: float) -> None:
        compiled = compile_probe(self.served.sources, self.policy, self.name, self.cluster,
                                 self.tier, revision=self.served.revision)
        if compiled.problems:
            raise ProbeFailed("not placed: " + "; ".join(compiled.problems[:3]))
        self.objects = canary_objects(compiled.manifests, self.name)
        namespace = str(self.objects[0]["metadata"]["namespace"])
        result.stage = "apply"
        submitted = self.clock()
        raised, self.restore = quota_changes(self.served.manifests, compiled.quotas)
        for quota in raised:  # as a pass would size them with the probe placed here
            apply(self.conn, quota)
        for obj in self.objects:
            try:
                apply(self.conn, obj, manager=CANARY_MANAGER)
            except ApiException as exc:
                if exc.status == 404 and "namespaces" in str(exc.body):
                    raise ProbeFailed(
                        f"namespace {namespace} is not in {self.cluster}: project "
                        f"{self.policy.project} has no workload there (a daemon of the "
                        "project puts its namespace in every cluster)") from None
                raise
        result.stage = "launch"
        pods = wait_ready(self.conn, namespace, self.name, self.policy.replicas,
                          deadline - self.clock(), self.clock)
        result.launch_seconds = round(self.clock() - submitted, 3)
        result.stage = "logs"
        read_logs(self.conn, self.cluster, namespace, pods[0], max(1.0, deadline - self.clock()))
        result.logs_ok = True
        result.stage = "exec"
        run_echo(self.conn, self.cluster, namespace, pods[0], max(1.0, deadline - self.clock()))
        result.exec_ok = True

    def _remove(self) -> str:
        """Delete the probe's objects (their pods go with them) and size the project's
        quotas as the served revision does again; what failed, if anything."""
        failed = []
        for obj in reversed(self.objects):
            try:
                delete(self.conn, obj)
            except FAILURES as exc:
                failed.append(f"{obj['kind']}/{obj['metadata']['name']}: {reason_of(exc)}")
        for quota in self.restore:
            try:
                apply(self.conn, quota)
            except FAILURES as exc:
                failed.append(f"ResourceQuota/{quota['metadata']['name']}: {reason_of(exc)}")
        return ("not deleted (swept by the next round): " + "; ".join(failed)) if failed else ""


def quota_changes(served: Sequence[Manifest], probed: Sequence[Manifest]
                  ) -> tuple[list[Obj], list[Obj]]:
    """The project's ResourceQuotas the probe's placement sizes differently from the served
    revision in its cluster: (as the probe needs them, as served), both written with the
    reconciler's field manager so a pass finds its own objects."""
    if not probed:
        return [], []
    cluster = probed[0].cluster
    kept = {(m.namespace, m.name): m.obj for m in served
            if m.cluster == cluster and m.kind == "ResourceQuota"}
    raised, restore = [], []
    for quota in probed:
        before = kept.get((quota.namespace, quota.name))
        if before is not None and before.get("spec") != quota.obj.get("spec"):
            raised.append(quota.obj)
            restore.append(before)
    return raised, restore


def wait_ready(conn: ClusterAccess, namespace: str, app: str, replicas: int, seconds: float,
               clock: Callable[[], float] = time.monotonic) -> list[str]:
    """Watch the app's pods until ``replicas`` of them are Ready; their names. ProbeFailed
    after ``seconds``, saying what the pods were waiting for."""
    deadline = clock() + seconds
    selector = f"{LABEL_APP}={app}"
    pods: dict[str, Obj] = {}
    version = ""
    while True:
        left = deadline - clock()
        if left <= 0:
            raise ProbeFailed(f"{_waiting(pods, replicas)} after {seconds:.0f}s")
        if not version:
            listed = conn.list(POD, namespace=namespace, label_selector=selector)
            pods = {p["metadata"]["name"]: p for p in listed["items"]}
            version = listed["resourceVersion"]
        ready = sorted(n for n, p in pods.items() if _ready(p))
        if len(ready) >= replicas:
            return ready
        events = conn.watch(POD, namespace=namespace, label_selector=selector,
                            resource_version=version, timeout_seconds=max(1, int(left + 0.999)))
        try:
            for event in events:
                obj = event["object"]
                if event["type"] == "ERROR":
                    version = ""
                    break
                version = obj["metadata"].get("resourceVersion", version)
                if event["type"] == "DELETED":
                    pods.pop(obj["metadata"]["name"], None)
                elif event["type"] != "BOOKMARK":
                    pods[obj["metadata"]["name"]] = obj
                if sum(_ready(p) for p in pods.values()) >= replicas or clock() >= deadline:
                    break
        finally:
            getattr(events, "close", lambda: None)()


def _ready(pod: Obj) -> bool:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())


def _waiting(pods: dict[str, Obj], replicas: int) -> str:
    """``0 of 2 pods Ready: 2 Pending, not scheduled``."""
    ready = sum(_ready(p) for p in pods.values())
    why: dict[str, int] = {}
    for pod in pods.values():
        if _ready(pod):
            continue
        status = pod.get("status") or {}
        scheduled = next((c for c in status.get("conditions") or ()
                          if c.get("type") == "PodScheduled"), None)
        if scheduled is None:
            reason = "not scheduled"
        elif scheduled.get("status") != "True":
            reason = f"unschedulable: {scheduled.get('message') or scheduled.get('reason')}"
        else:
            reason = "scheduled, not Ready"
        key = f"{status.get('phase') or 'Pending'}, {reason}"
        why[key] = why.get(key, 0) + 1
    shown = "; ".join(f"{n} {k}" for k, n in sorted(why.items())) or "no pod created"
    return f"{ready} of {replicas} pods Ready ({shown[:300]})"


def read_logs(conn: Connection, cluster: str, namespace: str, pod: str, seconds: float
              ) -> None:
    """The pod's logs through the API's logs code; ProbeFailed without a line in time."""
    from reconciler.api.logs import LogQuery, LogTarget, pod_log_opener

    deadline = time.monotonic() + seconds
    query = LogQuery(container=PROBE_CONTAINER, tail_lines=5)
    while True:
        response = pod_log_opener(lambda _c: conn, query, min(seconds, 10.0))(
            LogTarget(cluster, namespace, pod, PROBE_CONTAINER))
        try:
            body = response.read(64 * 1024)
        finally:
            response.release_conn()
        if body.strip():
            return
        if time.monotonic() + 1 > deadline:
            raise ProbeFailed(f"the logs of {pod} stayed empty for {seconds:.0f}s")
        time.sleep(1.0)


def run_echo(conn: Connection, cluster: str, namespace: str, pod: str, seconds: float
             ) -> None:
    """``echo NONCE`` in the pod through the API's exec code; ProbeFailed unless it exits 0
    having printed the nonce, in time."""
    from reconciler.api.exec import Upstream, UpstreamRefused
    from reconciler.api.exec_protocol import ExecQuery, ExecTarget, exit_status, split

    nonce = secrets.token_hex(4)
    try:
        upstream = Upstream.open(conn, ExecTarget(cluster, namespace, pod, PROBE_CONTAINER),
                                 ExecQuery(command=("echo", nonce)), min(seconds, 10.0))
    except UpstreamRefused as exc:
        raise ProbeFailed(f"exec in {pod} refused: {exc}") from None
    upstream.ws.settimeout(seconds)
    out = b""
    try:
        for message in upstream.messages():
            channel, payload = split(message)
            if channel == 1:
                out += payload[:4096]
            elif channel == 3:
                code, why = exit_status(payload)
                if code != 0:
                    raise ProbeFailed(f"exec in {pod}: exit {code}: {why}")
                if nonce.encode() not in out:
                    raise ProbeFailed(f"exec in {pod}: printed {out[:80]!r}, not the nonce")
                return
    except (OSError, TimeoutError) as exc:
        raise ProbeFailed(f"exec in {pod}: {reason_of(exc)}") from None
    finally:
        upstream.abort()
    raise ProbeFailed(f"exec in {pod} ended without an exit status")


def reason_of(exc: BaseException) -> str:
    if isinstance(exc, ApiException):
        return f"{exc.status} {exc.reason}: {str(exc.body or '')[:300]}".strip()
    if isinstance(exc, DynamicApiError):
        return exc.summary()[:300]
    return (str(exc) or type(exc).__name__)[:300]
