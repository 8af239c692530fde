"""Health rules, one kind at a time, on objects shaped as the API server returns them."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from reconciler.health import assess, has_rule, health_of
from reconciler.model import Health, Phase


def obj(text: str, **status: Any) -> dict[str, Any]:
    """A YAML object, with ``status`` fields added or replaced."""
    parsed: dict[str, Any] = yaml.safe_load(text)
    parsed.setdefault("status", {}).update(status)
    return parsed


def with_spec(base: dict[str, Any], **spec: Any) -> dict[str, Any]:
    changed = copy.deepcopy(base)
    changed["spec"].update(spec)
    return changed


def phase(o: dict[str, Any]) -> Phase:
    health = health_of(o)
    assert health is not None
    return health.phase


# --- Deployment -----------------------------------------------------------------------------

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: search-api, namespace: search, generation: 2}
spec:
  replicas: 3
  progressDeadlineSeconds: 600
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  selector: {matchLabels: {app: search-api}}
  template:
    metadata: {labels: {app: search-api}}
    spec: {containers: [{name: app, image: "registry.internal/search/api:2.0"}]}
status:
  observedGeneration: 2
  replicas: 3
  updatedReplicas: 3
  readyReplicas: 3
  availableReplicas: 3
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable,
     message: Deployment has minimum availability.}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable,
     message: ReplicaSet "search-api-7c9d8b6f5" has successfully progressed.}
"""


def test_deployment_fully_rolled_out_is_healthy() -> None:
    assert health_of(obj(DEPLOYMENT)) == Health(Phase.HEALTHY)


def test_deployment_just_created_without_status_is_progressing() -> None:
    fresh = obj(DEPLOYMENT)
    fresh["metadata"]["generation"] = 1
    del fresh["status"]
    health = health_of(fresh)
    assert health == Health(Phase.PROGRESSING,
                            "waiting for the controller to observe the new object")


def test_deployment_status_of_an_older_generation_is_not_trusted() -> None:
    # the spec changed (generation 3) but the status still says everything is fine for 2
    stale = obj(DEPLOYMENT)
    stale["metadata"]["generation"] = 3
    health = health_of(stale)
    assert health is not None and health.phase is Phase.PROGRESSING
    assert "generation 3 (observed 2)" in health.message


def test_deployment_stale_deadline_condition_is_ignored_until_new_generation_observed() -> None:
    stale = obj(DEPLOYMENT, conditions=[
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
         "message": 'ReplicaSet "search-api-6f7d" has timed out progressing.'}])
    stale["metadata"]["generation"] = 3
    assert phase(stale) is Phase.PROGRESSING


def test_deployment_surge_in_progress_goes_through_each_step() -> None:
    # maxSurge 1, maxUnavailable 0: one new pod at a time, old ones kept until it is ready
    steps = [
        ({"replicas": 4, "updatedReplicas": 1, "availableReplicas": 3},
         "1 of 3 replicas updated"),
        ({"replicas": 4, "updatedReplicas": 3, "availableReplicas": 3},
         "1 old replicas pending termination"),
        ({"replicas": 3, "updatedReplicas": 3, "availableReplicas": 2},
         "2 of 3 updated replicas available"),
    ]
    for status, message in steps:
        assert health_of(obj(DEPLOYMENT, **status)) == Health(Phase.PROGRESSING, message)


def test_deployment_paused_is_suspended_even_mid_rollout() -> None:
    paused = with_spec(obj(DEPLOYMENT, updatedReplicas=1), paused=True)
    assert health_of(paused) == Health(Phase.SUSPENDED, "rollout is paused")


def test_deployment_past_progress_deadline_is_degraded_with_the_controllers_message() -> None:
    stuck = obj(DEPLOYMENT, replicas=4, updatedReplicas=1, availableReplicas=3, conditions=[
        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
         "message": 'ReplicaSet "search-api-6f7d" has timed out progressing.'}])
    assert health_of(stuck) == Health(
        Phase.DEGRADED, 'ReplicaSet "search-api-6f7d" has timed out progressing.')


def test_deployment_replica_failure_explains_the_stall() -> None:
    quota = ('pods "search-api-6f7d-x" is forbidden: exceeded quota: search, '
             'requested: cpu=2, used: cpu=8, limited: cpu=8')
    failing = obj(DEPLOYMENT, replicas=3, updatedReplicas=0, availableReplicas=3, conditions=[
        {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": quota}])
    health = health_of(failing)
    assert health is not None and health.phase is Phase.PROGRESSING
    assert health.message == f"0 of 3 replicas updated; {quota}"
    failing["status"]["conditions"].append(
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
         "message": 'ReplicaSet "search-api-6f7d" has timed out progressing.'})
    health = health_of(failing)
    assert health is not None and health.phase is Phase.DEGRADED and quota in health.message


def test_deployment_scaled_to_zero_is_healthy() -> None:
    zero = with_spec(obj(DEPLOYMENT, replicas=0, updatedReplicas=0, availableReplicas=0,
                         readyReplicas=0), replicas=0)
    assert phase(zero) is Phase.HEALTHY


# --- ReplicaSet, StatefulSet, DaemonSet -----------------------------------------------------

REPLICASET = """
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: search-api-7c9d8b6f5, namespace: search, generation: 1}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, readyReplicas: 2, availableReplicas: 2}
"""


def test_replicaset() -> None:
    assert phase(obj(REPLICASET)) is Phase.HEALTHY
    assert health_of(obj(REPLICASET, availableReplicas=1)) == Health(
        Phase.PROGRESSING, "1 of 2 replicas available")
    failing = obj(REPLICASET, availableReplicas=0, conditions=[
        {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
         "message": 'pods "x" is forbidden: exceeded quota'}])
    assert health_of(failing) == Health(Phase.DEGRADED, 'pods "x" is forbidden: exceeded quota')


STATEFULSET = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: index, namespace: search, generation: 4}
spec:
  replicas: 3
  updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 0}}
status:
  observedGeneration: 4
  replicas: 3
  readyReplicas: 3
  availableReplicas: 3
  currentReplicas: 3
  updatedReplicas: 3
  currentRevision: index-5b8c
  updateRevision: index-5b8c
"""


def test_statefulset_rolled_out_is_healthy() -> None:
    assert health_of(obj(STATEFULSET)) == Health(Phase.HEALTHY)


def test_statefulset_waits_for_observed_generation_ready_pods_and_revision() -> None:
    unseen = obj(STATEFULSET)
    unseen["metadata"]["generation"] = 5
    assert phase(unseen) is Phase.PROGRESSING
    assert health_of(obj(STATEFULSET, readyReplicas=2)) == Health(
        Phase.PROGRESSING, "2 of 3 replicas ready")
    # partition 0 is the API server's default: rolling update runs until currentRevision moves
    no_partition = obj(STATEFULSET, updatedReplicas=1, updateRevision="index-6d9e")
    del no_partition["spec"]["updateStrategy"]["rollingUpdate"]
    health = health_of(no_partition)
    assert health is not None and health.phase is Phase.PROGRESSING
    assert "1 of 3 replicas at revision index-6d9e" in health.message


def test_statefulset_partitioned_rollout_is_done_above_the_partition() -> None:
    canary = with_spec(obj(STATEFULSET, updatedReplicas=1, updateRevision="index-6d9e"),
                       updateStrategy={"type": "RollingUpdate",
                                       "rollingUpdate": {"partition": 2}})
    assert phase(canary) is Phase.HEALTHY
    canary["status"]["updatedReplicas"] = 0
    assert phase(canary) is Phase.PROGRESSING


def test_statefulset_on_delete_and_min_ready_seconds() -> None:
    on_delete = with_spec(obj(STATEFULSET, updateRevision="index-6d9e"),
                          updateStrategy={"type": "OnDelete"})
    assert phase(on_delete) is Phase.HEALTHY
    slow = with_spec(obj(STATEFULSET, availableReplicas=1), minReadySeconds=30)
    assert health_of(slow) == Health(Phase.PROGRESSING, "1 of 3 replicas available")


DAEMONSET = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: log-shipper, namespace: platform, generation: 2}
spec: {updateStrategy: {type: RollingUpdate}}
status: {observedGeneration: 2, desiredNumberScheduled: 5, currentNumberScheduled: 5,
         updatedNumberScheduled: 5, numberAvailable: 5, numberReady: 5}
"""


def test_daemonset() -> None:
    assert phase(obj(DAEMONSET)) is Phase.HEALTHY
    assert health_of(obj(DAEMONSET, updatedNumberScheduled=3)) == Health(
        Phase.PROGRESSING, "3 of 5 nodes run the updated pod")
    assert health_of(obj(DAEMONSET, numberAvailable=4)) == Health(
        Phase.PROGRESSING, "4 of 5 pods available")
    on_delete = with_spec(obj(DAEMONSET, updatedNumberScheduled=0), updateStrategy={
        "type": "OnDelete"})
    assert phase(on_delete) is Phase.HEALTHY


# --- Pod ------------------------------------------------------------------------------------

POD = """
apiVersion: v1
kind: Pod
metadata: {name: search-api-7c9d8b6f5-abcde, namespace: search}
spec:
  restartPolicy: Always
  containers: [{name: app, image: "registry.internal/search/api:2.0"}]
status:
  phase: Running
  conditions:
  - {type: PodScheduled, status: "True"}
  - {type: Initialized, status: "True"}
  - {type: ContainersReady, status: "True"}
  - {type: Ready, status: "True"}
  containerStatuses:
  - name: app
    ready: true
    restartCount: 0
    state: {running: {startedAt: "2026-11-23T16:00:00Z"}}
"""


def not_ready(**container: Any) -> dict[str, Any]:
    pod = obj(POD)
    pod["status"]["conditions"][-1] = {
        "type": "Ready", "status": "False", "reason": "ContainersNotReady",
        "message": "containers with unready status: [app]"}
    pod["status"]["containerStatuses"][0].update(ready=False, **container)
    return pod


def test_pod_running_and_ready_is_healthy() -> None:
    assert health_of(obj(POD)) == Health(Phase.HEALTHY)


def test_pod_crash_loop_is_degraded_with_the_kubelets_message() -> None:
    looping = not_ready(restartCount=5, state={"waiting": {
        "reason": "CrashLoopBackOff",
        "message": "back-off 2m40s restarting failed container=app pod=search-api-abcde"}},
        lastState={"terminated": {"exitCode": 1, "reason": "Error"}})
    assert health_of(looping) == Health(
        Phase.DEGRADED, "container app: CrashLoopBackOff: back-off 2m40s restarting failed "
                        "container=app pod=search-api-abcde")


def test_pod_image_pull_backoff_while_pending_is_degraded() -> None:
    pulling = not_ready(state={"waiting": {
        "reason": "ImagePullBackOff",
        "message": 'Back-off pulling image "registry.internal/search/api:2.1"'}})
    pulling["status"]["phase"] = "Pending"
    health = health_of(pulling)
    assert health is not None and health.phase is Phase.DEGRADED
    assert "ImagePullBackOff" in health.message and "api:2.1" in health.message


def test_pod_init_container_errors_count_too() -> None:
    pod = obj(POD, phase="Pending", initContainerStatuses=[{
        "name": "fetch-config", "ready": False, "restartCount": 0,
        "state": {"waiting": {"reason": "CreateContainerConfigError",
                              "message": 'secret "search-creds" not found'}}}])
    assert health_of(pod) == Health(
        Phase.DEGRADED,
        'container fetch-config: CreateContainerConfigError: secret "search-creds" not found')


def test_pod_not_ready_after_a_restart_is_degraded_before_it_is_merely_starting() -> None:
    starting = not_ready(state={"running": {"startedAt": "2026-11-23T16:00:00Z"}})
    assert health_of(starting) == Health(Phase.PROGRESSING,
                                         "containers with unready status: [app]")
    restarted = not_ready(restartCount=1, lastState={"terminated": {"exitCode": 137}})
    health = health_of(restarted)
    assert health is not None and health.phase is Phase.DEGRADED
    assert "restarted: app" in health.message


def test_pod_pending_unschedulable_carries_the_schedulers_reason() -> None:
    pending = yaml.safe_load(POD)
    pending["status"] = {"phase": "Pending", "conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]}
    assert health_of(pending) == Health(
        Phase.PROGRESSING, "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")


def test_pod_run_to_completion_is_not_judged_on_transient_waits() -> None:
    # Argo CD's nuance: a Never/OnFailure pod may get past an image pull error, and is
    # Progressing until it ends, whatever it waits for
    job_pod = with_spec(not_ready(state={"waiting": {"reason": "ErrImagePull"}}),
                        restartPolicy="Never")
    assert health_of(job_pod) == Health(Phase.PROGRESSING, "running to completion")
    job_pod["status"]["phase"] = "Succeeded"
    assert phase(job_pod) is Phase.COMPLETED


def test_pod_failed_says_why() -> None:
    evicted = obj(POD, phase="Failed", reason="Evicted",
                  message="The node was low on resource: memory.")
    assert health_of(evicted) == Health(Phase.FAILED, "The node was low on resource: memory.")
    oom = obj(POD, phase="Failed", containerStatuses=[{
        "name": "app", "ready": False, "restartCount": 0,
        "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}])
    assert health_of(oom) == Health(Phase.FAILED, "container app was OOMKilled")
    exit_code = obj(POD, phase="Failed", containerStatuses=[{
        "name": "app", "ready": False, "restartCount": 0,
        "state": {"terminated": {"exitCode": 2, "reason": "Error"}}}])
    assert health_of(exit_code) == Health(Phase.FAILED, "container app failed with exit code 2")


# --- Job, CronJob, training jobs ------------------------------------------------------------

JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: sitemap-refresh-29400000, namespace: search, generation: 1}
spec: {completions: 1, parallelism: 1, backoffLimit: 0, suspend: false}
status: {active: 1, ready: 1, startTime: "2026-11-23T16:00:00Z"}
"""


def test_job_running_is_progressing_with_counts() -> None:
    assert health_of(obj(JOB)) == Health(Phase.PROGRESSING, "1 active, 0 of 1 succeeded")
    assert health_of(obj(JOB, active=1, failed=2)) == Health(
        Phase.PROGRESSING, "1 active, 0 of 1 succeeded, 2 failed")


def test_job_complete_is_completed_already_at_success_criteria_met() -> None:
    done = obj(JOB, active=0, succeeded=1, conditions=[
        {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"}])
    assert health_of(done) == Health(Phase.COMPLETED)
    done["status"]["conditions"].append(
        {"type": "Complete", "status": "True", "reason": "CompletionsReached"})
    assert health_of(done) == Health(Phase.COMPLETED)


def test_job_failed_names_the_controllers_reason() -> None:
    failing = obj(JOB, active=0, failed=1, conditions=[
        {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded",
         "message": "Job has reached the specified backoff limit"}])
    expected = Health(Phase.FAILED,
                      "BackoffLimitExceeded: Job has reached the specified backoff limit")
    assert health_of(failing) == expected
    failing["status"]["conditions"].append({**failing["status"]["conditions"][0],
                                            "type": "Failed"})
    assert health_of(failing) == expected
    deadline = obj(JOB, conditions=[
        {"type": "Failed", "status": "True", "reason": "DeadlineExceeded",
         "message": "Job was active longer than specified deadline"}])
    assert health_of(deadline) == Health(
        Phase.FAILED, "DeadlineExceeded: Job was active longer than specified deadline")


def test_job_condition_that_is_false_does_not_count() -> None:
    assert phase(obj(JOB, conditions=[{"type": "Failed", "status": "False"}])) \
        is Phase.PROGRESSING


def test_job_suspended() -> None:
    suspended = with_spec(obj(JOB, active=0), suspend=True)
    assert health_of(suspended) == Health(Phase.SUSPENDED, "the job is suspended")
    by_condition = obj(JOB, active=0, conditions=[
        {"type": "Suspended", "status": "True", "reason": "JobSuspended"}])
    assert phase(by_condition) is Phase.SUSPENDED


CRONJOB = """
apiVersion: batch/v1
kind: CronJob
metadata: {name: sitemap-refresh, namespace: search}
spec: {schedule: "0 * * * *", suspend: false, jobTemplate: {spec: {}}}
status: {}
"""


def test_cronjob_by_its_last_run() -> None:
    assert health_of(obj(CRONJOB)) == Health(Phase.HEALTHY, "not run yet")
    running = obj(CRONJOB, lastScheduleTime="2026-11-23T16:00:00Z", active=[
        {"kind": "Job", "name": "sitemap-refresh-29400000", "namespace": "search"}])
    assert health_of(running) == Health(Phase.PROGRESSING, "running: sitemap-refresh-29400000")
    succeeded = obj(CRONJOB, lastScheduleTime="2026-11-23T16:00:00Z",
                    lastSuccessfulTime="2026-11-23T16:00:41Z")
    assert health_of(succeeded) == Health(Phase.HEALTHY)
    # the 17:00 run ended without success: its last success is the 16:00 one
    failed = obj(CRONJOB, lastScheduleTime="2026-11-23T17:00:00Z",
                 lastSuccessfulTime="2026-11-23T16:00:41Z")
    assert health_of(failed) == Health(
        Phase.DEGRADED, "the run scheduled at 2026-11-23T17:00:00Z did not succeed "
                        "(last success at 2026-11-23T16:00:41Z)")
    never = obj(CRONJOB, lastScheduleTime="2026-11-23T17:00:00Z")
    health = health_of(never)
    assert health is not None and health.phase is Phase.DEGRADED
    assert "never succeeded" in health.message
    assert phase(with_spec(failed, suspend=True)) is Phase.SUSPENDED


PYTORCHJOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: ranker-pretrain, namespace: ml}
spec: {pytorchReplicaSpecs: {Master: {replicas: 1}, Worker: {replicas: 4}}}
"""


def conditions(*entries: tuple[str, str, str]) -> list[dict[str, str]]:
    return [{"type": t, "status": s, "reason": f"PyTorchJob{t}", "message": m}
            for t, s, m in entries]


def test_training_job_follows_the_operators_conditions() -> None:
    assert health_of(obj(PYTORCHJOB)) == Health(Phase.PROGRESSING,
                                                "waiting for the training operator")
    created = ("Created", "True", "PyTorchJob ranker-pretrain is created.")
    running = obj(PYTORCHJOB, conditions=conditions(
        created, ("Running", "True", "PyTorchJob ml/ranker-pretrain is running.")))
    assert health_of(running) == Health(Phase.PROGRESSING,
                                        "PyTorchJob ml/ranker-pretrain is running.")
    done = obj(PYTORCHJOB, conditions=conditions(
        created, ("Running", "False", ""),
        ("Succeeded", "True", "PyTorchJob ml/ranker-pretrain successfully completed.")))
    assert health_of(done) == Health(Phase.COMPLETED)
    failed = obj(PYTORCHJOB, conditions=conditions(
        created, ("Running", "False", ""),
        ("Failed", "True", "PyTorchJob ml/ranker-pretrain has failed because 1 Worker "
                           "replica(s) failed.")))
    assert health_of(failed) == Health(
        Phase.FAILED, "PyTorchJobFailed: PyTorchJob ml/ranker-pretrain has failed because 1 "
                      "Worker replica(s) failed.")
    tf = obj(PYTORCHJOB.replace("PyTorchJob", "TFJob"),
             conditions=[{"type": "Suspended", "status": "True"}])
    assert phase(tf) is Phase.SUSPENDED


# --- HorizontalPodAutoscaler ----------------------------------------------------------------

HPA = """
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: search-api, namespace: search}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: search-api}
  minReplicas: 3
  maxReplicas: 12
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization,
             averageUtilization: 60}}}]
status: {currentReplicas: 3, desiredReplicas: 3}
"""
ABLE = {"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale",
        "message": "recommended size matches current size"}
ACTIVE = {"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound",
          "message": "the HPA was able to successfully calculate a replica count from cpu "
                     "resource utilization (percentage of request)"}
NO_METRICS = {"type": "ScalingActive", "status": "False", "reason": "FailedGetResourceMetric",
              "message": "the HPA was unable to compute the replica count: failed to get cpu "
                         "utilization: unable to get metrics for resource cpu"}


def test_hpa_scaling_is_healthy() -> None:
    assert health_of(obj(HPA, conditions=[ABLE, ACTIVE])) == Health(Phase.HEALTHY)
    limited = {"type": "ScalingLimited", "status": "True", "reason": "TooFewReplicas",
               "message": "the desired replica count is less than the minimum replica count"}
    assert health_of(obj(HPA, conditions=[ABLE, ACTIVE, limited])) == Health(
        Phase.HEALTHY, "the desired replica count is less than the minimum replica count")


def test_hpa_not_yet_assessed_is_progressing() -> None:
    assert phase(obj(HPA)) is Phase.PROGRESSING


def test_hpa_metrics_failure_is_degraded_even_after_a_true_able_to_scale() -> None:
    assert health_of(obj(HPA, conditions=[ABLE, NO_METRICS])) == Health(
        Phase.DEGRADED, NO_METRICS["message"])
    invalid = {**NO_METRICS, "reason": "InvalidSelector", "message": "selector is required"}
    assert health_of(obj(HPA, conditions=[ABLE, invalid])) == Health(
        Phase.DEGRADED, "selector is required")


def test_hpa_that_cannot_scale_its_target_is_degraded() -> None:
    cannot = {"type": "AbleToScale", "status": "False", "reason": "FailedGetScale",
              "message": 'the HPA controller was unable to get the target\'s current scale: '
                         'deployments/scale.apps "search-api" not found'}
    health = health_of(obj(HPA, conditions=[cannot]))
    assert health is not None and health.phase is Phase.DEGRADED and "not found" in \
        health.message
    backoff = {**cannot, "reason": "BackoffBoth", "message": "within the forbidden windows"}
    assert phase(obj(HPA, conditions=[backoff, ACTIVE])) is Phase.HEALTHY


def test_hpa_of_a_target_scaled_to_zero_is_suspended() -> None:
    disabled = {"type": "ScalingActive", "status": "False", "reason": "ScalingDisabled",
                "message": "scaling is disabled since the replica count of the target is zero"}
    assert health_of(obj(HPA, conditions=[ABLE, disabled])) == Health(
        Phase.SUSPENDED, disabled["message"])


def test_hpa_autoscaling_v1_reads_conditions_from_the_annotation() -> None:
    v1 = yaml.safe_load(HPA)
    v1["apiVersion"] = "autoscaling/v1"
    v1["metadata"]["annotations"] = {
        "autoscaling.alpha.kubernetes.io/conditions": json.dumps([ABLE, NO_METRICS])}
    assert phase(v1) is Phase.DEGRADED


# --- PVC, Service, Ingress, PodDisruptionBudget ---------------------------------------------

PVC = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: index-data, namespace: search}
spec: {accessModes: [ReadWriteOnce], storageClassName: pincompute-block,
       resources: {requests: {storage: 100Gi}}, volumeName: pvc-1f2e}
"""


def test_pvc_by_phase() -> None:
    assert health_of(obj(PVC, phase="Bound")) == Health(Phase.HEALTHY)
    assert phase(obj(PVC, phase="Pending")) is Phase.PROGRESSING
    assert health_of(obj(PVC, phase="Lost")) == Health(
        Phase.DEGRADED, "claim lost: pvc-1f2e no longer exists")
    resizing = obj(PVC, phase="Bound", conditions=[
        {"type": "FileSystemResizePending", "status": "True",
         "message": "Waiting for user to (re-)start a pod to finish file system resize"}])
    assert phase(resizing) is Phase.PROGRESSING


def test_service_and_ingress_wait_for_a_load_balancer_address() -> None:
    service = obj("""
apiVersion: v1
kind: Service
metadata: {name: search-api, namespace: search}
spec: {type: ClusterIP, ports: [{port: 80}]}
""")
    assert health_of(service) == Health(Phase.HEALTHY)
    service["spec"]["type"] = "LoadBalancer"
    assert phase(service) is Phase.PROGRESSING
    service["status"] = {"loadBalancer": {"ingress": [{"ip": "10.1.2.3"}]}}
    assert phase(service) is Phase.HEALTHY
    ingress = obj("""
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: search-api, namespace: search}
spec: {rules: [{host: search.internal}]}
status: {loadBalancer: {}}
""")
    assert phase(ingress) is Phase.PROGRESSING
    ingress["status"]["loadBalancer"]["ingress"] = [{"hostname": "lb.internal"}]
    assert phase(ingress) is Phase.HEALTHY


PDB = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: search-api, namespace: search, generation: 1}
spec: {maxUnavailable: 1, selector: {matchLabels: {app: search-api}}}
status: {observedGeneration: 1, expectedPods: 3, currentHealthy: 3, desiredHealthy: 2,
         disruptionsAllowed: 1,
         conditions: [{type: DisruptionAllowed, status: "True", reason: SufficientPods}]}
"""


def test_pdb() -> None:
    assert health_of(obj(PDB)) == Health(Phase.HEALTHY)
    short = obj(PDB, currentHealthy=1, disruptionsAllowed=0, conditions=[
        {"type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods"}])
    assert health_of(short) == Health(Phase.PROGRESSING,
                                      "1 of the 2 pods the budget requires are healthy")
    tight = obj(PDB, desiredHealthy=3, disruptionsAllowed=0)
    assert health_of(tight) == Health(
        Phase.HEALTHY, "no voluntary disruption allowed: node drains will wait")
    broken = obj(PDB, conditions=[{"type": "DisruptionAllowed", "status": "False",
                                   "reason": "SyncFailed", "message": "found no controllers"}])
    assert health_of(broken) == Health(Phase.DEGRADED, "found no controllers")
    unseen = obj(PDB)
    unseen["metadata"]["generation"] = 2
    assert phase(unseen) is Phase.PROGRESSING


# --- dispatch -------------------------------------------------------------------------------

def test_kinds_without_a_rule_have_no_opinion() -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    assert health_of(config_map) is None
    assert assess(config_map) == Health(Phase.HEALTHY)
    # the group decides, not just the kind: a CRD's "Deployment" is not apps/Deployment
    assert health_of({"apiVersion": "example.com/v1", "kind": "Deployment"}) is None
    assert not has_rule("example.com/v1", "Deployment")
    assert has_rule("apps/v1", "Deployment") and has_rule("v1", "Pod")
    assert has_rule("extensions/v1beta1", "Ingress") and has_rule("kubeflow.org/v1", "TFJob")


def test_absent_object_is_missing() -> None:
    assert assess(None) == Health(Phase.MISSING, "not found")


def test_object_being_deleted_is_progressing_whatever_its_kind() -> None:
    for text in (DEPLOYMENT, "{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}"):
        doomed = yaml.safe_load(text)
        doomed["metadata"]["deletionTimestamp"] = "2026-11-23T16:00:00Z"
        assert health_of(doomed) == Health(Phase.PROGRESSING, "pending deletion")


@pytest.mark.parametrize("text", [DEPLOYMENT, POD, JOB, HPA])
def test_malformed_status_is_unknown_not_a_crash(text: str) -> None:
    broken = yaml.safe_load(text)
    broken["status"] = {"replicas": "many", "conditions": "none", "phase": "Running",
                        "containerStatuses": 7, "active": "x", "observedGeneration": "two"}
    health = health_of(broken)
    assert health is not None and health.phase is Phase.UNKNOWN
    assert health.message.startswith("cannot assess health: ")
