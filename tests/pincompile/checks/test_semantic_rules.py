"""Semantic rules across documents: references, duplicates, policy, pod consistency.

Each case adds (or replaces, or deletes) one file of the valid fixture and asserts the
exact diagnostics — ``file:line:column``, code and message — and the first one's hint.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.support.specs import doc, files, triples, validate


@dataclass
class Case:
    id: str
    file: str
    text: str | None
    """New content of ``file``; None deletes it from the fixture."""
    expected: list[tuple[str, str, str]]
    hint: str | None = None


SEMANTIC_CASES = [
    Case('duplicate-name', 'apps/shop/reindex-copy.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinterestJobSet
        metadata: {name: reindex, project: shop}
        spec:
          completions: 1
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('apps/shop/reindex-copy.yaml:3:18', 'duplicate-name',
         "PinterestJobSet 'reindex' in project 'shop' is already defined at "
         'apps/shop/jobs.yaml:4')],
        hint='rename one of them or delete the copy'),
    Case('duplicate-name-other-project-ok', 'apps/infra/reindex.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinterestJobSet
        metadata: {name: reindex, project: infra}
        spec:
          completions: 1
          tier: reserved
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
],
        hint=None),
    Case('duplicate-name-app-and-service', 'apps/shop/website.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinterestService
        metadata: {name: web, project: shop}
        spec:
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('apps/shop/website.yaml:3:18', 'duplicate-name',
         "PinterestService 'web' in project 'shop' has the same name as PinApp 'web' at "
         'apps/shop/web.yaml:4; both would generate the same Deployment and Service')],
        hint='rename one of them or delete the copy'),
    Case('duplicate-cluster', 'platform/clusters/more.yaml', """
        apiVersion: pincompute.io/v1
        kind: Cluster
        metadata: {name: east-b-01}
        spec: {region: us-east-1, zone: us-east-1b, context: east-b-01-new}
        """, [
        ('platform/clusters/more.yaml:3:18', 'duplicate-name',
         "Cluster 'east-b-01' is already defined at platform/clusters/fleet.yaml:16")],
        hint='rename one of them or delete the copy'),
    Case('duplicate-runtime-profile', 'platform/runtime2.yaml', """
        apiVersion: pincompute.io/v1
        kind: RuntimeProfile
        metadata: {name: extra}
        """, [
        ('platform/runtime2.yaml:3:18', 'duplicate-runtime-profile',
         "more than one RuntimeProfile: 'extra' here and 'default' at "
         'platform/runtime.yaml:4; a platform has exactly one')],
        hint='merge them into one RuntimeProfile'),
    Case('duplicate-namespace', 'platform/projects/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: Project
        metadata: {name: bad}
        spec: {namespace: infra-system}
        """, [
        ('platform/projects/infra.yaml:6:14', 'duplicate-namespace',
         "namespace 'infra-system' is already used by project 'bad' at "
         'platform/projects/bad.yaml:3')],
        hint='every project needs a namespace of its own'),
    Case('duplicate-namespace-default', 'platform/projects/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: Project
        metadata: {name: infra-system}
        """, [
        ('platform/projects/infra.yaml:6:14', 'duplicate-namespace',
         "namespace 'infra-system' is already used by project 'infra-system' at "
         'platform/projects/bad.yaml:3')],
        hint='every project needs a namespace of its own'),
    Case('reserved-namespace', 'platform/projects/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: Project
        metadata: {name: bad}
        spec: {namespace: kube-system}
        """, [
        ('platform/projects/bad.yaml:4:19', 'reserved-namespace',
         "namespace 'kube-system' is reserved for Kubernetes; a project needs its own "
         'namespace')],
        hint="set spec.namespace to the project's own name"),
    Case('duplicate-context', 'platform/clusters/more.yaml', """
        apiVersion: pincompute.io/v1
        kind: Cluster
        metadata: {name: east-d-01}
        spec: {region: us-east-1, zone: us-east-1d, context: east-a-01}
        """, [
        ('platform/clusters/more.yaml:4:54', 'duplicate-context',
         "context 'east-a-01' is already used by cluster 'east-a-01' at "
         'platform/clusters/fleet.yaml:4')],
        hint='each member cluster needs its own kubeconfig context'),
    Case('reserved-label', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata:
          name: bad
          project: shop
          labels: {pincompute.io/project: infra}
        spec:
          containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('apps/shop/bad.yaml:6:12', 'reserved-label',
         "label 'pincompute.io/project' is set by pincompile on every generated object")],
        hint='choose a label outside pincompute.io/ and app.kubernetes.io/managed-by'),
    Case('unknown-project', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shoop}
        spec:
          containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('apps/shop/bad.yaml:3:32', 'unknown-project',
         "project 'shoop' does not exist")],
        hint="did you mean 'shop'?"),
    Case('unknown-project-no-close', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinScaler
        metadata: {name: bad, project: payments}
        spec: {target: web, maxReplicas: 3}
        """, [
        ('apps/shop/bad.yaml:3:32', 'unknown-project',
         "project 'payments' does not exist")],
        hint='projects: infra, shop'),
    Case('unknown-target', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinScaler
        metadata: {name: bad, project: shop}
        spec: {target: chekout, maxReplicas: 3}
        """, [
        ('apps/shop/bad.yaml:4:16', 'unknown-target',
         "target 'chekout' is not a PinApp or PinterestService in project 'shop'")],
        hint="did you mean 'checkout'?"),
    Case('target-in-other-project', 'apps/infra/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinScaler
        metadata: {name: bad, project: infra}
        spec: {target: checkout, maxReplicas: 3}
        """, [
        ('apps/infra/bad.yaml:4:16', 'unknown-target',
         "target 'checkout' is not a PinApp or PinterestService in project 'infra'")],
        hint="'checkout' is in project 'shop'; a PinScaler must be in the project of its target"),
    Case('invalid-target', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinScaler
        metadata: {name: bad, project: shop}
        spec: {target: reindex, maxReplicas: 3}
        """, [
        ('apps/shop/bad.yaml:4:16', 'invalid-target',
         "target 'reindex' is a PinterestJobSet; a PinScaler scales a PinApp or "
         'PinterestService')],
        hint=None),
    Case('duplicate-scaler', 'apps/shop/web2.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinScaler
        metadata: {name: web-second, project: shop}
        spec: {target: web, maxReplicas: 3}
        """, [
        ('apps/shop/web2.yaml:4:16', 'duplicate-scaler',
         "PinApp 'web' is already scaled by PinScaler 'web' at apps/shop/web.yaml:37")],
        hint='a workload has at most one PinScaler; merge their metrics'),
    Case('replicas-outside-scaler', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {name: cart, project: shop}
        spec:
          replicas: 10
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        ---
        apiVersion: pincompute.io/v1
        kind: PinScaler
        metadata: {name: cart, project: shop}
        spec: {target: cart, maxReplicas: 3}
        """, [
        ('apps/shop/bad.yaml:5:13', 'replicas-outside-scaler',
         "replicas 10 is outside the bounds of PinScaler 'cart' at apps/shop/bad.yaml:11 "
         '(minReplicas 1, maxReplicas 3)')],
        hint='the autoscaler owns the replica count: set replicas within the bounds or leave '
             'it out'),
    Case('scaler-for-service-ok', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinScaler
        metadata: {name: checkout, project: shop}
        spec: {target: checkout, maxReplicas: 3}
        """, [
],
        hint=None),
    Case('unknown-sidecar', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers: [{name: main, image: "registry.internal/app:1.0"}]
          sidecars: [loging]
        """, [
        ('apps/shop/bad.yaml:7:14', 'unknown-sidecar',
         "sidecar 'loging' does not exist")],
        hint="did you mean 'logging'?"),
    Case('daemon-sidecar', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers: [{name: main, image: "registry.internal/app:1.0"}]
          sidecars: [node-agent]
        """, [
        ('apps/shop/bad.yaml:7:14', 'invalid-sidecar',
         "sidecar 'node-agent' has mode: daemon (one per node, defined at "
         'platform/sidecars/traffic.yaml:17); only mode: sidecar can be added to a pod')],
        hint='daemon sidecars run on every node without being listed'),
    Case('sidecar-not-for-kind', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinterestJobSet
        metadata: {name: bad, project: shop}
        spec:
          completions: 2
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
            sidecars: [logging]
        """, [
        ('apps/shop/bad.yaml:8:16', 'invalid-sidecar',
         "sidecar 'logging' does not apply to PinterestJobSet (appliesTo: PinApp, "
         'PinPod, PinterestService, PinterestCronJob)')],
        hint=None),
    Case('duplicate-sidecar', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers: [{name: main, image: "registry.internal/app:1.0"}]
          sidecars: [logging, logging]
        """, [
        ('apps/shop/bad.yaml:7:23', 'duplicate-sidecar',
         "sidecar 'logging' is listed twice")],
        hint=None),
    Case('unknown-cluster', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers: [{name: main, image: "registry.internal/app:1.0"}]
          placement: {clusters: [east-a-1]}
        """, [
        ('apps/shop/bad.yaml:7:26', 'unknown-cluster',
         "cluster 'east-a-1' does not exist")],
        hint="did you mean 'east-a-01'?"),
    Case('unknown-cluster-project', 'platform/projects/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: Project
        metadata: {name: bad}
        spec:
          placement:
            clusters: [east-a-01, west-a-01]
        """, [
        ('platform/projects/bad.yaml:6:27', 'unknown-cluster',
         "cluster 'west-a-01' does not exist")],
        hint="did you mean 'east-a-01'?"),
    Case('cluster-all-not-daemon', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers: [{name: main, image: "registry.internal/app:1.0"}]
          placement: {clusters: [all]}
        """, [
        ('apps/shop/bad.yaml:7:26', 'unknown-cluster',
         "cluster 'all' does not exist")],
        hint="only a PinterestDaemon accepts 'clusters: all' (written without a list)"),
    Case('unknown-region-zone', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers: [{name: main, image: "registry.internal/app:1.0"}]
          placement:
            regions: [us-east-2]
            zones: [us-east-1e, useast-1a]
        """, [
        ('apps/shop/bad.yaml:8:15', 'unknown-region',
         "no cluster is in region 'us-east-2'"),
        ('apps/shop/bad.yaml:9:13', 'unknown-zone',
         "no cluster is in zone 'us-east-1e'"),
        ('apps/shop/bad.yaml:9:25', 'unknown-zone',
         "no cluster is in zone 'useast-1a'")],
        hint="did you mean 'us-east-1'?"),
    Case('unknown-gpu-type', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers: [{name: main, image: "registry.internal/app:1.0", resources: {gpu: 1}}]
          gpuType: A10
        """, [
        ('apps/shop/bad.yaml:7:12', 'unknown-gpu-type',
         "no cluster offers GPU type 'A10'")],
        hint="did you mean 'A10G'?"),
    Case('duplicate-container', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers:
            - {name: main, image: "registry.internal/app:1.0"}
            - {name: main, image: "registry.internal/helper:1.0"}
        """, [
        ('apps/shop/bad.yaml:8:14', 'duplicate-container',
         "container name 'main' is already used by spec.containers[0]")],
        hint='container names must be unique within a pod'),
    Case('container-vs-init', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers:
            - {name: config-sync, image: "registry.internal/app:1.0"}
        """, [
        ('apps/shop/bad.yaml:7:14', 'duplicate-container',
         "container name 'config-sync' is already used by the RuntimeProfile's init "
         'container at platform/runtime.yaml:4')],
        hint='container names must be unique within a pod'),
    Case('container-vs-sidecar', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {name: bad, project: shop}
        spec:
          template:
            containers:
              - {name: traffic, image: "registry.internal/app:1.0"}
        """, [
        ('apps/shop/bad.yaml:7:16', 'duplicate-container',
         "container name 'traffic' is already used by managed sidecar 'traffic' at "
         'platform/sidecars/traffic.yaml:4')],
        hint='container names must be unique within a pod'),
    Case('duplicate-port-name', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers:
            - name: main
              image: registry.internal/app:1.0
              ports: [{name: http, containerPort: 8080}]
            - name: helper
              image: registry.internal/helper:1.0
              ports: [{name: http, containerPort: 9090}]
        """, [
        ('apps/shop/bad.yaml:12:22', 'duplicate-port-name',
         "port name 'http' is already used by container 'main'")],
        hint='port names must be unique within a pod'),
    Case('port-vs-sidecar', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {name: bad, project: shop}
        spec:
          template:
            containers:
              - name: main
                image: registry.internal/app:1.0
                ports: [{name: proxy, containerPort: 9000}]
        """, [
        ('apps/shop/bad.yaml:9:24', 'duplicate-port-name',
         "port name 'proxy' is already used by managed sidecar 'traffic'"),
        ('apps/shop/bad.yaml:9:46', 'duplicate-port',
         "port 9000/TCP is already used by managed sidecar 'traffic'")],
        hint='port names must be unique within a pod'),
    Case('duplicate-port-number', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers:
            - name: main
              image: registry.internal/app:1.0
              ports: [{name: http, containerPort: 8080}, {name: alt, containerPort: 8080}]
        """, [
        ('apps/shop/bad.yaml:9:77', 'duplicate-port',
         "port 8080/TCP is already used by container 'main'")],
        hint='containers of a pod share one network'),
    Case('duplicate-volume', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers: [{name: main, image: "registry.internal/app:1.0"}]
          volumes:
            - {name: data, type: emptyDir, mountPath: /a}
            - {name: data, type: emptyDir, mountPath: /b}
        """, [
        ('apps/shop/bad.yaml:9:14', 'duplicate-volume',
         "volume name 'data' is already used by spec.volumes[0]")],
        hint='volume names must be unique within a pod'),
    Case('volume-vs-runtime', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers: [{name: main, image: "registry.internal/app:1.0"}]
          volumes:
            - {name: logs, type: emptyDir, mountPath: /var/log/app/}
        """, [
        ('apps/shop/bad.yaml:8:14', 'duplicate-volume',
         "volume name 'logs' is already used by the RuntimeProfile at "
         'platform/runtime.yaml:4'),
        ('apps/shop/bad.yaml:8:47', 'duplicate-mount-path',
         "mountPath '/var/log/app' is already used by the RuntimeProfile's mount 'logs'")],
        hint='volume names must be unique within a pod'),
    Case('mount-vs-config', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers: [{name: main, image: "registry.internal/app:1.0"}]
          config: {app.conf: "x=1"}
          volumes:
            - {name: conf, type: secret, secretName: conf, mountPath: /etc/pincompute/config}
        """, [
        ('apps/shop/bad.yaml:9:63', 'duplicate-mount-path',
         "mountPath '/etc/pincompute/config' is already used by the config files")],
        hint='mount each volume at a path of its own'),
    Case('jobset-claim-vs-volume', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinterestJobSet
        metadata: {name: bad, project: shop}
        spec:
          completions: 2
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
            volumes: [{name: work, type: emptyDir, mountPath: /scratch}]
          volumeClaimTemplates: [{name: work, size: 1Gi, mountPath: /scratch}]
        """, [
        ('apps/shop/bad.yaml:9:33', 'duplicate-volume',
         "volume name 'work' is already used by spec.template.volumes[0]"),
        ('apps/shop/bad.yaml:9:61', 'duplicate-mount-path',
         "mountPath '/scratch' is already used by spec.template.volumes[0]")],
        hint='volume names must be unique within a pod'),
    Case('env', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers:
            - name: main
              image: registry.internal/app:1.0
              env:
                - {name: MODE, value: fast}
                - {name: MODE, value: slow}
                - {name: PINCOMPUTE_PROJECT, value: infra}
        """, [
        ('apps/shop/bad.yaml:11:18', 'duplicate-env',
         "env 'MODE' is already set in container 'main'"),
        ('apps/shop/bad.yaml:12:18', 'reserved-env',
         "env 'PINCOMPUTE_PROJECT' is set by the platform (PINCOMPUTE_* variables "
         'identify the workload)')],
        hint=None),
    Case('limits', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers:
            - name: main
              image: registry.internal/app:1.0
              resources: {cpu: "2", memory: 4Gi, limits: {cpu: 1500m, memory: 4Gi}}
        """, [
        ('apps/shop/bad.yaml:9:56', 'invalid-limits',
         'limits.cpu (1500m) is below the cpu request (2)')],
        hint='raise limits.cpu to at least 2'),
    Case('probe-port', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers:
            - name: main
              image: registry.internal/app:1.0
              ports: [{name: http, containerPort: 8080}]
              probes:
                readiness: {http: /ready, port: htp}
        """, [
        ('apps/shop/bad.yaml:11:41', 'unknown-port',
         "readiness probe port 'htp' is not a port of container 'main'")],
        hint="did you mean 'http'?"),
    Case('config-key', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers: [{name: main, image: "registry.internal/app:1.0"}]
          config:
            conf/app.yaml: "a: 1"
        """, [
        ('apps/shop/bad.yaml:8:5', 'invalid-config-key',
         "config key 'conf/app.yaml' is not a valid file name: letters, digits, '-', '_' "
         "and '.', at most 253 characters")],
        hint='files are mounted flat in /etc/pincompute/config'),
    Case('config-key-collision', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinterestJobSet
        metadata: {name: bad, project: shop}
        spec:
          completions: 2
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
            config: {job.conf: "static"}
          configTemplates:
            job.conf: "shards={{ job.completions }}"
        """, [
        ('apps/shop/bad.yaml:10:5', 'duplicate-config-key',
         "config key 'job.conf' is also in config; both would be the same file")],
        hint=None),
    Case('service-ports', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {name: bad, project: shop}
        spec:
          template:
            containers:
              - name: main
                image: registry.internal/app:1.0
                ports: [{name: http, containerPort: 8080}]
          service:
            ports:
              - {name: http, port: 80, targetPort: htp}
              - {name: http, port: 80, targetPort: proxy}
            ingress: {host: bad.shop.internal, port: https}
        """, [
        ('apps/shop/bad.yaml:12:44', 'unknown-port',
         "targetPort 'htp' is not a port name of any container"),
        ('apps/shop/bad.yaml:13:16', 'duplicate-service-port',
         "service port name 'http' is already used by ports[0]"),
        ('apps/shop/bad.yaml:13:28', 'duplicate-service-port',
         'service port 80/TCP is already used by ports[0]'),
        ('apps/shop/bad.yaml:14:46', 'unknown-port',
         "ingress port 'https' is not a service port")],
        hint="did you mean 'http'?"),
    Case('duplicate-ingress', 'apps/shop/web2.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {name: bad, project: shop}
        spec:
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
          service:
            ports: [{name: http, port: 80, targetPort: 8080}]
            ingress: {host: WEB.shop.internal}
        """, [
        ('apps/shop/web2.yaml:9:21', 'duplicate-ingress',
         "ingress host 'WEB.shop.internal' path '/' is already routed to PinApp 'web' at "
         'apps/shop/web.yaml:4')],
        hint=None),
    Case('policy', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: bad, project: shop}
        spec:

          containers:
            - {name: main, image: "registry.internal/app:1.0", privileged: true}
          network: host
          volumes:
            - {name: proc, type: hostPath, path: /proc, mountPath: /host/proc}
        """, [
        ('apps/shop/bad.yaml:7:68', 'policy-privileged',
         "privileged containers are not allowed in project 'shop' "
         '(policy.allowPrivileged is false)'),
        ('apps/shop/bad.yaml:8:12', 'policy-host-network',
         "network: host is not allowed in project 'shop' (policy.allowHostNetwork is "
         'false)'),
        ('apps/shop/bad.yaml:10:26', 'policy-host-path',
         "hostPath volumes are not allowed in project 'shop' (policy.allowHostPath is "
         'false)')],
        hint="the platform team decides this in the Project's spec.policy"),
    Case('policy-daemons', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinterestDaemon
        metadata: {name: bad, project: shop}
        spec:
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
        """, [
        ('apps/shop/bad.yaml:2:7', 'policy-daemons',
         "PinterestDaemon is not allowed in project 'shop' (policy.allowDaemons is "
         'false)')],
        hint="the platform team decides this in the Project's spec.policy"),
    Case('rollout', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinApp
        metadata: {name: bad, project: shop}
        spec:
          template:
            containers: [{name: main, image: "registry.internal/app:1.0"}]
          rollout: {maxSurge: 0%, maxUnavailable: 0}
        """, [
        ('apps/shop/bad.yaml:7:43', 'invalid-rollout',
         'rollout.maxSurge and rollout.maxUnavailable are both 0: no pod could ever be '
         'replaced')],
        hint='allow a surge (e.g. maxSurge: 1 or 25%) or some unavailability'),
    Case('training-master', 'apps/shop/bad.yaml', """
        apiVersion: pincompute.io/v1
        kind: PinterestTrainingJob
        metadata: {name: bad, project: shop}
        spec:
          framework: pytorch
          replicas: {master: 2, worker: 4}
          template:
            containers: [{name: pytorch, image: "registry.internal/app:1.0"}]
        """, [
        ('apps/shop/bad.yaml:6:22', 'invalid-replicas',
         'a pytorch job has at most one master; got 2')],
        hint='set replicas.master: 1 and add workers instead'),
    Case('no-runtime-profile-ok', 'platform/runtime.yaml', None, [
],
        hint=None),
]


@pytest.mark.parametrize("case", SEMANTIC_CASES, ids=lambda c: c.id)
def test_semantic_rule(case: Case) -> None:
    text = None if case.text is None else doc(case.text)
    diagnostics = validate(files({case.file: text}))
    assert triples(diagnostics) == case.expected
    if diagnostics:
        assert diagnostics[0].hint == case.hint
