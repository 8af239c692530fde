"""The canary's probe workload, compiled as any spec is: a small PinApp of the canary's
platform project, pinned to one member cluster and tier, checked, placed (the project's
quota for that tier, the cluster's tiers, cordons), injected and expanded with the
platform's specs and the project's own workloads of the revision being served.

Only the probe's own objects come out, and the project's quotas in the probe's cluster
as the probe's placement sizes them: the project's namespace and other workloads are the
reconcile pass's to apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pincompile.diagnostics import Diagnostic
from pincompile.manifest import Manifest
from pincompile.repoconfig import CONFIG_FILE, repo_config
from pincompile.verification import CanaryPolicy

PROBE_CONTAINER = "probe"
READY_LINE = "pincompile canary probe started"
"""What the probe's container prints first (the logs check looks for it)."""


@dataclass
class CompiledProbe:
    """The probe's objects for its cluster (in the compiler's order), or why there are
    none (each problem as ``file:line:column: code: message``)."""

    manifests: list[Manifest] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    quotas: list[Manifest] = field(default_factory=list)
    """The project's ResourceQuotas in the probe's cluster as the compile sizes them with
    the probe placed there (a cluster's share of the project's quota follows what is
    placed in it)."""


def probe_spec(policy: CanaryPolicy, name: str, cluster: str, tier: str) -> str:
    """The probe's spec (YAML) for one cluster and tier."""
    import json

    command = ["sh", "-c", f"echo {READY_LINE}; exec sleep 86400"]
    return "\n".join([
        "apiVersion: pincompute.io/v1",
        "kind: PinApp",
        f"metadata: {{name: {name}, project: {policy.project}}}",
        "spec:",
        f"  replicas: {policy.replicas}",
        f"  tier: {tier}",
        f"  placement: {{clusters: [{cluster}], spread: none, maxClusters: 1}}",
        "  template:",
        "    containers:",
        f"      - name: {PROBE_CONTAINER}",
        f"        image: {json.dumps(policy.image)}",
        f"        command: {json.dumps(command)}",
        f"        resources: {{cpu: {json.dumps(policy.cpu)}, memory: "
        f"{json.dumps(policy.memory)}}}",
        "",
    ])


def compile_probe(sources: Mapping[str, str], policy: CanaryPolicy, name: str, cluster: str,
                  tier: str, *, revision: str) -> CompiledProbe:
    """Compile the probe against ``sources`` (a compiled revision's file texts): its
    settings, its platform folder and the canary project's folder, plus the probe."""
    from pincompile.compiler import Compiler

    config, _ = repo_config(sources)
    platform = config.platform_folder.rstrip("/") + "/"
    project = f"{config.apps_folder.rstrip('/')}/{policy.project}/"
    probe_file = f"{project}{name}.yaml"
    files = [(path, text.encode()) for path, text in sorted(sources.items())
             if path == CONFIG_FILE or path.startswith((platform, project))]
    files.append((probe_file, probe_spec(policy, name, cluster, tier).encode()))
    result = Compiler(remember=False).compile(files, revision=revision)
    if not result.ok:
        return CompiledProbe(problems=[_line(d) for d in result.diagnostics])
    own = [m for m in result.manifests
           if m.source is not None and m.source.resource.metadata.name == name
           and m.source.resource.kind == "PinApp"]
    if not own or any(m.cluster != cluster for m in own):
        placed = sorted({m.cluster for m in own}) or ["no cluster"]
        return CompiledProbe(problems=[f"{probe_file}: the probe was placed in "
                                       f"{', '.join(placed)}, not {cluster}"])
    quotas = [m for m in result.manifests if m.cluster == cluster
              and m.kind == "ResourceQuota" and m.namespace == own[0].namespace]
    return CompiledProbe(manifests=own, quotas=quotas)


def _line(d: Diagnostic) -> str:
    return f"{d.file}:{d.line}:{d.column}: {d.code}: {d.message}"
