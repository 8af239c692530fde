"""Schema rules: every field of every kind is checked where it is written.

Each case adds one document to the valid fixture and asserts the exact diagnostics —
``file:line:column``, code and message — plus the hint where there is one. Lines and
columns are 1-based and count from the first line of the snippet.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.support.specs import doc, files, triples, validate

BAD = "apps/shop/bad.yaml"


@dataclass
class Case:
    id: str
    text: str
    expected: list[tuple[str, str, str]]
    """(``line:column``, code, message) in ``BAD``."""
    hint: str | None = None


SCHEMA_CASES = [
    Case('unknown-kind', """
        apiVersion: pincompute.io/v1
        kind: PinAppp
        metadata: {name: bad, project: shop}
        """, [
        ('2:7', 'unknown-kind',
         "kind is 'PinAppp'; not a pincompute.io kind")],
        hint="did you mean 'PinApp'?"),
    Case('api-version', """
        apiVersion: pincompute.io/v2
        kind: PinPod
        metadata: {name: bad, project: shop}
        """, [
        ('1:13', 'api-version',
         "apiVersion is 'pincompute.io/v2'; expected 'pincompute.io/v1'")],
        hint='pincompile reads documents with apiVersion pincompute.io/v1'),
    Case('not-a-mapping', """
        - apiVersion: pincompute.io/v1
          kind: PinPod
        """, [
        ('1:1', 'not-a-mapping',
         'a document must be a mapping with apiVersion, kind, metadata, spec; this one is '
         'a list')],
        hint="write each spec as its own document, separated by '---'"),
    Case('missing-field', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata:
          name: bad
        spec:
          containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('4:3', 'missing-field',
         "missing required field 'project' in metadata")],
        hint=None),
    Case('unknown-field', """
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {name: bad, project: shop}
        spec:
          replica: 3
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('5:3', 'unknown-field',
         "unknown field 'replica' in spec")],
        hint="did you mean 'replicas'?"),
    Case('unknown-field-snake-case', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers: [{name: main, image: "registry.internal/app:1.0"}]
          gpu_type: A10G
        """, [
        ('6:3', 'unknown-field',
         "unknown field 'gpu_type' in spec")],
        hint="did you mean 'gpuType'?"),
    Case('unknown-field-no-close-match', """
        apiVersion: pincompute.io/v1
        kind: PinterestCronJob
        metadata: {name: bad, project: shop}
        spec:
          schedule: "0 * * * *"
          template:
            containers: [{name: main, image: "registry.internal/app:1.0", imagePullPolicy: Always}]
        """, [
        ('7:67', 'unknown-field',
         "unknown field 'imagePullPolicy' in spec.template.containers[0]")],
        hint='allowed here: args, command, env, image, lifecycle, name, ports, privileged, '
             'probes, resources, workingDir'),
    Case('dns-name', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: Bad_Name, project: shop}
        spec:
          containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('3:18', 'invalid-value',
         "metadata.name: 'Bad_Name' is not a DNS-1123 label: lowercase letters, digits "
         "and '-', starting and ending with a letter or digit")],
        hint=None),
    Case('name-too-long', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: a-name-that-is-far-too-long-for-suffixes-to-be-added-1, project: shop}
        spec:
          containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('3:18', 'invalid-value',
         "metadata.name: 'a-name-that-is-far-too-long-for-suffixes-to-be-added-1' is 54 "
         'characters; at most 52 allowed')],
        hint=None),
    Case('label-value', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata:
          name: bad
          project: shop
          labels: {team: "search team"}
        spec:
          containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('6:18', 'invalid-value',
         "metadata.labels.team: 'search team' is not a valid label value: at most 63 "
         "letters, digits, '-', '_', '.'")],
        hint=None),
    Case('image-no-tag', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers:
            - name: main
              image: registry.internal/app
        """, [
        ('7:14', 'invalid-value',
         "spec.containers[0].image: image 'registry.internal/app' has no tag or digest; "
         "add one, e.g. 'registry.internal/app:1.0.0' or "
         "'registry.internal/app@sha256:...'")],
        hint=None),
    Case('image-latest', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers:
            - name: main
              image: registry.internal/app:latest
        """, [
        ('7:14', 'invalid-value',
         "spec.containers[0].image: image 'registry.internal/app:latest' uses ':latest'; "
         'pin a version tag or a digest so rollouts are reproducible')],
        hint=None),
    Case('image-invalid', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers:
            - name: main
              image: "Registry Internal/app:1.0"
        """, [
        ('7:14', 'invalid-value',
         "spec.containers[0].image: 'Registry Internal/app:1.0' is not a valid image "
         'reference')],
        hint=None),
    Case('quantity', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers:
            - name: main
              image: registry.internal/app:1.0
              resources: {cpu: 2 cores, memory: 4Gi}
        """, [
        ('8:24', 'invalid-value',
         "spec.containers[0].resources.cpu: '2 cores' is not a Kubernetes quantity "
         '(examples: 500m, 2, 4Gi, 100Mi)')],
        hint=None),
    Case('duration', """
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {name: bad, project: shop}
        spec:
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
          rollout:
            healthTimeout: 10 minutes
        """, [
        ('8:20', 'invalid-value',
         "spec.rollout.healthTimeout: '10 minutes' is not a duration (examples: 30s, 5m, "
         '1h, 1h30m)')],
        hint=None),
    Case('percent', """
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {name: bad, project: shop}
        spec:
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
          rollout: {maxSurge: 150%}
        """, [
        ('7:23', 'invalid-value',
         "spec.rollout.maxSurge: '150%' is neither a whole number nor a percentage such "
         "as '25%'")],
        hint=None),
    Case('lifecycle-enum', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers:
            - name: main
              image: registry.internal/app:1.0
              lifecycle: sidcar
        """, [
        ('8:18', 'invalid-enum',
         "spec.containers[0].lifecycle: 'sidcar' is not one of: main, sidecar")],
        hint="did you mean 'sidecar'?"),
    Case('network-enum', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers: [{name: main, image: "registry.internal/app:1.0"}]
          network: routeable
        """, [
        ('6:12', 'invalid-enum',
         "spec.network: 'routeable' is not one of: bridge, routable, dedicated-eni, host")],
        hint="did you mean 'routable'?"),
    Case('tier-enum', """
        apiVersion: pincompute.io/v1
        kind: PinterestJobSet
        metadata: {name: bad, project: shop}
        spec:
          completions: 3
          tier: spot
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('6:9', 'invalid-enum',
         "spec.tier: 'spot' is not one of: reserved, ondemand, preemptible")],
        hint=None),
    Case('mode-enum', """
        apiVersion: pincompute.io/v1
        kind: PinterestSideCar
        metadata: {name: bad}
        spec:
          mode: deamon
          container: {image: "registry.internal/agent:1.0"}
        """, [
        ('5:9', 'invalid-enum',
         "spec.mode: 'deamon' is not one of: sidecar, daemon")],
        hint="did you mean 'daemon'?"),
    Case('inject-enum', """
        apiVersion: pincompute.io/v1
        kind: PinterestSideCar
        metadata: {name: bad}
        spec:
          inject: optin
          appliesTo: [PinApp, PinJob]
          container: {image: "registry.internal/agent:1.0"}
        """, [
        ('5:11', 'invalid-enum',
         "spec.inject: 'optin' is not one of: always, opt-in"),
        ('6:23', 'invalid-enum',
         "spec.appliesTo[1]: 'PinJob' is not one of: PinPod, PinApp, PinterestService, "
         'PinterestJobSet, PinterestTrainingJob, PinterestCronJob, PinterestDaemon')],
        hint="did you mean 'opt-in'?"),
    Case('port-name', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers:
            - name: main
              image: registry.internal/app:1.0
              ports: [{name: http_port, containerPort: 8080}]
        """, [
        ('8:22', 'invalid-value',
         "spec.containers[0].ports[0].name: 'http_port' is not a valid port name: at "
         "most 15 lowercase letters, digits and '-', with at least one letter and no "
         "'--'")],
        hint=None),
    Case('port-number', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers:
            - name: main
              image: registry.internal/app:1.0
              ports: [{name: http, containerPort: 80800}]
        """, [
        ('8:43', 'invalid-value',
         'spec.containers[0].ports[0].containerPort: 80800: input should be less than or '
         'equal to 65535')],
        hint=None),
    Case('container-name-dns', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers:
            - name: Main
              image: registry.internal/app:1.0
        """, [
        ('6:13', 'invalid-value',
         "spec.containers[0].name: 'Main' is not a DNS-1123 label: lowercase letters, "
         "digits and '-', starting and ending with a letter or digit")],
        hint=None),
    Case('env-source', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers:
            - name: main
              image: registry.internal/app:1.0
              env:
                - {name: TOKEN}
        """, [
        ('9:11', 'invalid-value',
         "spec.containers[0].env[0]: env 'TOKEN' needs exactly one of 'value' or "
         "'secretRef'")],
        hint=None),
    Case('env-number', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers:
            - name: main
              image: registry.internal/app:1.0
              env:
                - {name: PORT, value: 8080}
        """, [
        ('9:31', 'invalid-type',
         'spec.containers[0].env[0].value: expected a string, got 8080 (quote it)')],
        hint=None),
    Case('env-value-key', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers:
            - name: main
              image: registry.internal/app:1.0
              env:
                - name: SEP
                  value: =
        """, [
        ('10:18', 'invalid-type',
         "spec.containers[0].env[0].value: expected a string, got '=' (quote it)")],
        hint=None),
    Case('probe-path', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers:
            - name: main
              image: registry.internal/app:1.0
              probes:
                readiness: {http: ready, port: 8080}
        """, [
        ('9:20', 'invalid-value',
         "spec.containers[0].probes.readiness: http probe path 'ready' must start with "
         "'/'")],
        hint=None),
    Case('probe-port-missing', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers:
            - name: main
              image: registry.internal/app:1.0
              probes:
                liveness: {tcp: true}
        """, [
        ('9:19', 'invalid-value',
         'spec.containers[0].probes.liveness: a tcp probe needs a port')],
        hint=None),
    Case('volume-type-enum', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers: [{name: main, image: "registry.internal/app:1.0"}]
          volumes:
            - {name: scratch, type: emptydir, mountPath: /scratch}
        """, [
        ('7:29', 'invalid-enum',
         "spec.volumes[0].type: 'emptydir' is not one of: emptyDir, ebs, efs, secret, "
         'hostPath')],
        hint="did you mean 'emptyDir'?"),
    Case('volume-mount-relative', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers: [{name: main, image: "registry.internal/app:1.0"}]
          volumes:
            - {name: scratch, type: emptyDir, mountPath: scratch}
        """, [
        ('7:50', 'invalid-value',
         "spec.volumes[0].mountPath: mountPath 'scratch' must be absolute")],
        hint=None),
    Case('volume-ebs-size', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers: [{name: main, image: "registry.internal/app:1.0"}]
          volumes:
            - {name: data, type: ebs, mountPath: /data}
        """, [
        ('7:7', 'invalid-value',
         "spec.volumes[0]: ebs volume 'data' needs a size")],
        hint=None),
    Case('containers-empty', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers: []
        """, [
        ('5:15', 'invalid-value',
         'spec.containers: needs at least one item')],
        hint=None),
    Case('k8s-version-number', """
        apiVersion: pincompute.io/v1
        kind: Cluster
        metadata: {name: bad}
        spec:
          region: us-east-1
          zone: us-east-1a
          kubernetesVersion: 1.30
        """, [
        ('7:22', 'invalid-value',
         'spec.kubernetesVersion: 1.3 was read as a number; quote the version, e.g. '
         '"1.30" (a bare 1.30 reads as 1.3)')],
        hint=None),
    Case('capacity-key', """
        apiVersion: pincompute.io/v1
        kind: Cluster
        metadata: {name: bad}
        spec:
          region: us-east-1
          zone: us-east-1a
          capacity: {cpu: "64", gpu: "8"}
        """, [
        ('7:25', 'invalid-enum',
         "spec.capacity key 'gpu': 'gpu' is not one of: cpu, memory, nvidia.com/gpu, "
         'ephemeral-storage, storage, pods, vpc.amazonaws.com/pod-eni')],
        hint="did you mean 'nvidia.com/gpu'?"),
    Case('arch-enum', """
        apiVersion: pincompute.io/v1
        kind: Cluster
        metadata: {name: bad}
        spec:
          region: us-east-1
          zone: us-east-1a
          arch: [x86_64]
        """, [
        ('7:10', 'invalid-enum',
         "spec.arch[0]: 'x86_64' is not one of: amd64, arm64")],
        hint=None),
    Case('project-policy-field', """
        apiVersion: pincompute.io/v1
        kind: Project
        metadata: {name: bad}
        spec:
          policy:
            allowHostNetworking: true
        """, [
        ('6:5', 'unknown-field',
         "unknown field 'allowHostNetworking' in spec.policy")],
        hint="did you mean 'allowHostNetwork'?"),
    Case('project-namespace', """
        apiVersion: pincompute.io/v1
        kind: Project
        metadata: {name: bad}
        spec:
          namespace: Bad.Namespace
        """, [
        ('5:14', 'invalid-value',
         "spec.namespace: 'Bad.Namespace' is not a DNS-1123 label: lowercase letters, "
         "digits and '-', starting and ending with a letter or digit")],
        hint=None),
    Case('quota-quantity', """
        apiVersion: pincompute.io/v1
        kind: Project
        metadata: {name: bad}
        spec:
          quota:
            reserved: {cpu: lots}
        """, [
        ('6:21', 'invalid-value',
         "spec.quota.reserved.cpu: 'lots' is not a Kubernetes quantity (examples: 500m, "
         '2, 4Gi, 100Mi)')],
        hint=None),
    Case('runtime-volume-source', """
        apiVersion: pincompute.io/v1
        kind: RuntimeProfile
        metadata: {name: bad}
        spec:
          volumes:
            - {name: logs}
        """, [
        ('6:7', 'invalid-value',
         "spec.volumes[0]: volume 'logs' needs exactly one source such as emptyDir: {}")],
        hint=None),
    Case('metric-type-enum', """
        apiVersion: pincompute.io/v1
        kind: PinScaler
        metadata: {name: bad, project: shop}
        spec:
          target: web
          maxReplicas: 10
          metrics:
            - {type: cpuu, targetUtilization: 60}
        """, [
        ('8:14', 'invalid-enum',
         "spec.metrics[0].type: 'cpuu' is not one of: cpu, memory, custom")],
        hint="did you mean 'cpu'?"),
    Case('custom-metric-missing', """
        apiVersion: pincompute.io/v1
        kind: PinScaler
        metadata: {name: bad, project: shop}
        spec:
          target: web
          maxReplicas: 10
          metrics:
            - {type: custom, query: "sum(rate(x[1m]))"}
        """, [
        ('8:7', 'missing-field',
         "missing required field 'targetPerReplica' in spec.metrics[0]")],
        hint=None),
    Case('cron', """
        apiVersion: pincompute.io/v1
        kind: PinScaler
        metadata: {name: bad, project: shop}
        spec:
          target: web
          maxReplicas: 10
          schedules:
            - {cron: "0 8 * * 1-8", duration: 10h, minReplicas: 4}
        """, [
        ('8:14', 'invalid-value',
         "spec.schedules[0].cron: '0 8 * * 1-8' is not a valid cron expression: five "
         "fields (minute hour day-of-month month day-of-week), e.g. '*/15 * * * *'")],
        hint=None),
    Case('timezone', """
        apiVersion: pincompute.io/v1
        kind: PinScaler
        metadata: {name: bad, project: shop}
        spec:
          target: web
          maxReplicas: 10
          schedules:
            - {cron: "0 8 * * 1-5", duration: 10h, timezone: America/Los_Angles, minReplicas: 4}
        """, [
        ('8:54', 'invalid-value',
         "spec.schedules[0].timezone: 'America/Los_Angles' is not an IANA time zone; did "
         "you mean 'America/Los_Angeles'?")],
        hint=None),
    Case('max-below-min', """
        apiVersion: pincompute.io/v1
        kind: PinScaler
        metadata: {name: bad, project: shop}
        spec:
          target: web
          minReplicas: 10
          maxReplicas: 5
        """, [
        ('7:16', 'invalid-value',
         'spec.maxReplicas: maxReplicas (5) is below minReplicas (10)')],
        hint=None),
    Case('schedule-above-max', """
        apiVersion: pincompute.io/v1
        kind: PinScaler
        metadata: {name: bad, project: shop}
        spec:
          target: web
          maxReplicas: 10
          schedules:
            - {cron: "0 8 * * 1-5", duration: 10h, minReplicas: 40}
        """, [
        ('8:57', 'invalid-value',
         'spec.schedules[0].minReplicas: schedule minReplicas (40) exceeds maxReplicas '
         '(10)')],
        hint=None),
    Case('completions', """
        apiVersion: pincompute.io/v1
        kind: PinterestJobSet
        metadata: {name: bad, project: shop}
        spec:
          completions: 0
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('5:16', 'invalid-value',
         'spec.completions: 0: input should be greater than or equal to 1')],
        hint=None),
    Case('whole-number', """
        apiVersion: pincompute.io/v1
        kind: PinterestJobSet
        metadata: {name: bad, project: shop}
        spec:
          completions: 10
          parallelism: ten
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('6:16', 'invalid-type',
         "spec.parallelism: expected a whole number, got 'ten'")],
        hint=None),
    Case('framework-enum', """
        apiVersion: pincompute.io/v1
        kind: PinterestTrainingJob
        metadata: {name: bad, project: shop}
        spec:
          framework: pytorh
          replicas: {master: 1}
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('5:14', 'invalid-enum',
         "spec.framework: 'pytorh' is not one of: pytorch, tensorflow")],
        hint="did you mean 'pytorch'?"),
    Case('training-role', """
        apiVersion: pincompute.io/v1
        kind: PinterestTrainingJob
        metadata: {name: bad, project: shop}
        spec:
          framework: pytorch
          replicas:
            master: 1
            chief: 1
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('8:12', 'invalid-value',
         "spec.replicas.chief: replica role 'chief' is not a pytorch role; use master, "
         'worker')],
        hint=None),
    Case('training-no-replicas', """
        apiVersion: pincompute.io/v1
        kind: PinterestTrainingJob
        metadata: {name: bad, project: shop}
        spec:
          framework: tensorflow
          replicas: {chief: 0, worker: 0}
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('6:13', 'invalid-value',
         'spec.replicas: replicas needs at least one replica')],
        hint=None),
    Case('cron-schedule', """
        apiVersion: pincompute.io/v1
        kind: PinterestCronJob
        metadata: {name: bad, project: shop}
        spec:
          schedule: "*/15 * * *"
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('5:13', 'invalid-value',
         "spec.schedule: '*/15 * * *' is not a valid cron expression: five fields "
         "(minute hour day-of-month month day-of-week), e.g. '*/15 * * * *'")],
        hint=None),
    Case('cron-macro', """
        apiVersion: pincompute.io/v1
        kind: PinterestCronJob
        metadata: {name: bad, project: shop}
        spec:
          schedule: "@fortnightly"
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('5:13', 'invalid-value',
         "spec.schedule: '@fortnightly' is not a known cron macro (@hourly, @daily, ...)")],
        hint=None),
    Case('concurrency-enum', """
        apiVersion: pincompute.io/v1
        kind: PinterestCronJob
        metadata: {name: bad, project: shop}
        spec:
          schedule: "0 * * * *"
          concurrencyPolicy: forbid
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('6:22', 'invalid-enum',
         "spec.concurrencyPolicy: 'forbid' is not one of: Allow, Forbid, Replace")],
        hint="did you mean 'Forbid'?"),
    Case('cron-timezone', """
        apiVersion: pincompute.io/v1
        kind: PinterestCronJob
        metadata: {name: bad, project: shop}
        spec:
          schedule: "0 * * * *"
          timezone: Europe/Berln
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('6:13', 'invalid-value',
         "spec.timezone: 'Europe/Berln' is not an IANA time zone; did you mean "
         "'Europe/Berlin'?")],
        hint=None),
    Case('tolerations', """
        apiVersion: pincompute.io/v1
        kind: PinterestDaemon
        metadata: {name: bad, project: infra}
        spec:
          tolerations: some
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('5:16', 'invalid-value',
         "spec.tolerations: 'some' is not one of: all, none or expected a list, got "
         "'some'")],
        hint=None),
    Case('toleration-operator', """
        apiVersion: pincompute.io/v1
        kind: PinterestDaemon
        metadata: {name: bad, project: infra}
        spec:
          tolerations:
            - {key: dedicated, operator: exists}
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('6:34', 'invalid-enum',
         "spec.tolerations[0].operator: 'exists' is not one of: Exists, Equal")],
        hint="did you mean 'Exists'?"),
    Case('daemon-clusters', """
        apiVersion: pincompute.io/v1
        kind: PinterestDaemon
        metadata: {name: bad, project: infra}
        spec:
          placement: {clusters: al}
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('5:25', 'invalid-value',
         "spec.placement.clusters: expected a list, got 'al' or 'al' is not one of: all")],
        hint="did you mean 'all'?"),
    Case('spread-enum', """
        apiVersion: pincompute.io/v1
        kind: PinterestService
        metadata: {name: bad, project: shop}
        spec:
          placement: {spread: zones}
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('5:23', 'invalid-enum',
         "spec.placement.spread: 'zones' is not one of: zone, cluster, none")],
        hint="did you mean 'zone'?"),
    Case('strategy-enum', """
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {name: bad, project: shop}
        spec:
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
          rollout: {strategy: zone-by-zon}
        """, [
        ('7:23', 'invalid-enum',
         "spec.rollout.strategy: 'zone-by-zon' is not one of: zone-by-zone, all-at-once")],
        hint="did you mean 'zone-by-zone'?"),
    Case('disruption-budget', """
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {name: bad, project: shop}
        spec:
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
          disruptionBudget: {maxUnavailable: 1, minAvailable: 2}
        """, [
        ('7:21', 'invalid-value',
         'spec.disruptionBudget: disruptionBudget needs exactly one of maxUnavailable, '
         'minAvailable')],
        hint=None),
    Case('service-ports-empty', """
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {name: bad, project: shop}
        spec:
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
          service:
            ports: []
        """, [
        ('8:12', 'invalid-value',
         'spec.service.ports: needs at least one item')],
        hint=None),
    Case('target-port-zero', """
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {name: bad, project: shop}
        spec:
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
          service:
            ports: [{name: http, port: 80, targetPort: 0}]
        """, [
        ('8:48', 'invalid-value',
         'spec.service.ports[0].targetPort: 0: input should be greater than or equal to '
         '1')],
        hint=None),
    Case('placement-list', """
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {name: bad, project: shop}
        spec:
          placement: {regions: us-east-1}
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('5:24', 'invalid-type',
         "spec.placement.regions: expected a list, got 'us-east-1'")],
        hint=None),
    Case('restart-policy-enum', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          restartPolicy: always
          containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('5:18', 'invalid-enum',
         "spec.restartPolicy: 'always' is not one of: Always, OnFailure, Never")],
        hint="did you mean 'Always'?"),
    Case('bool', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          failover: sometimes
          containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('5:13', 'invalid-type',
         "spec.failover: expected true or false, got 'sometimes'")],
        hint=None),
    Case('date-as-string', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata:
          name: bad
          project: shop
          annotations: {released: 2024-10-01}
        spec:
          containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('6:27', 'invalid-type',
         'metadata.annotations.released: expected a string, got 2024-10-01 (quote it)')],
        hint=None),
    Case('spec-not-mapping', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec: [a, b]
        """, [
        ('4:7', 'invalid-type',
         'spec: expected a mapping, got a list')],
        hint=None),
    Case('yaml-tag', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers: [{name: main, image: !!python/object:os.system "registry.internal/app:1.0"}]
        """, [
        ('5:36', 'yaml-tag',
         "YAML tag '!!python/object:os.system' is not supported in specs")],
        hint='remove the tag: specs use plain YAML values (quote a string)'),
    Case('label-key-number', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata:
          name: bad
          project: shop
          labels: {8080: http}
        spec:
          containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('6:12', 'invalid-type',
         "metadata.labels key '8080': expected a string, got 8080 (quote it)")],
        hint=None),
    Case('field-key-number', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:
          containers: [{name: main, image: "registry.internal/app:1.0"}]
          1: one
        """, [
        ('6:3', 'invalid-type',
         'spec: key 1 is not a string')],
        hint='write keys as plain names (quote them if they look like numbers)'),
]


@pytest.mark.parametrize("case", SCHEMA_CASES, ids=lambda c: c.id)
def test_schema_rule(case: Case) -> None:
    diagnostics = validate(files({BAD: doc(case.text)}))
    assert triples(diagnostics) == [(f"{BAD}:{loc}", code, message)
                                    for loc, code, message in case.expected]
    assert diagnostics[0].hint == case.hint


def test_every_kind_has_an_invalid_case() -> None:
    from pincompile.models import KINDS

    kinds = {line.split("kind:")[1].strip() for c in SCHEMA_CASES
             for line in doc(c.text).splitlines() if line.startswith("kind:")}
    assert set(KINDS) <= kinds | {"PinAppp"}


def test_all_errors_of_a_document_are_reported_in_order() -> None:
    text = doc("""
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {name: bad, project: shop}
        spec:
          tier: reservd
          template:
            containers:
              - name: main
                image: registry.internal/app:latest
                lifecycle: sidcar
            netwrk: routable
        """)
    diagnostics = validate(files({BAD: text}))
    assert [(d.line, d.column, d.code, d.hint) for d in diagnostics] == [
        (5, 9, "invalid-enum", "did you mean 'reserved'?"),
        (9, 16, "invalid-value", None),
        (10, 20, "invalid-enum", "did you mean 'sidecar'?"),
        (11, 5, "unknown-field", "did you mean 'network'?"),
    ]


def test_errors_in_several_files_are_sorted_by_file_and_line() -> None:
    pod = doc("""
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: NAME, project: shop}
        spec:
          containers: [{name: main, image: "registry.internal/app:latest"}]
        """)
    contents = files({
        "apps/zeta.yaml": pod.replace("NAME", "zeta"),
        "apps/alpha.yaml": pod.replace("NAME", "Alpha"),
    })
    assert [d.location() for d in validate(contents)] == [
        "apps/alpha.yaml:3:18", "apps/alpha.yaml:5:36", "apps/zeta.yaml:5:36"]
