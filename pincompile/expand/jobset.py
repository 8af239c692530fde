"""PinterestJobSet → one Indexed Job per cluster shard (+ its ConfigMap, PVCs).

A JobSet the plan keeps in one cluster becomes the Job ``<name>``; one divided across
clusters becomes ``<name>-<first index>`` per cluster (``search-indexer-0``,
``search-indexer-500``), each running its contiguous range of completion indexes.

Every pod's environment has ``PINCOMPUTE_SHARD_INDEX`` (the completion index of the pod in
its Job), ``PINCOMPUTE_SHARD_OFFSET`` (the first global index of that Job; 0 unless divided)
and ``PINCOMPUTE_SHARD_COUNT`` (the JobSet's total completions): the global shard is
OFFSET + INDEX. Kubernetes cannot add numbers in the environment, and an Indexed Job always
counts from 0, so a divided JobSet's program must add the offset (configTemplates can also
use ``job.indexOffset``).

``configTemplates`` are rendered per Job into its ConfigMap; ``volumeClaimTemplates`` become
generic ephemeral volumes, i.e. one PersistentVolumeClaim per pod, deleted with it.
"""

from __future__ import annotations

from pincompile.expand.context import Obj, WorkloadTarget, child_name, kube_version
from pincompile.expand.pod import claims, config_map, config_name, pod_template
from pincompile.models import PinterestJobSet
from pincompile.models.types import duration_seconds

COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
BACKOFF_PER_INDEX_SINCE = (1, 29)
"""backoffLimitPerIndex is on by default (beta) from 1.29."""
_INT32_MAX = 2**31 - 1


def job_name(t: WorkloadTarget[PinterestJobSet]) -> str:
    if len(t.decision.shards) <= 1 and t.shard.index_offset == 0:
        return t.name
    return child_name(t.name, str(t.shard.index_offset))


def expand(t: WorkloadTarget[PinterestJobSet]) -> list[Obj]:
    spec = t.resource.spec
    shard = t.shard
    name = job_name(t)
    completions = shard.replicas
    parallelism = shard.parallelism or min(spec.parallelism or completions, completions)
    files = _config(t, name, completions, parallelism)
    cm = config_name(name)
    env = [
        {"name": "PINCOMPUTE_SHARD_INDEX",
         "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX}}},
        {"name": "PINCOMPUTE_SHARD_OFFSET", "value": str(shard.index_offset)},
        {"name": "PINCOMPUTE_SHARD_COUNT", "value": str(spec.completions)},
    ]
    pod = pod_template(t, restart_policy="Never", env=env, config_name=cm, config=files,
                       claim_templates=spec.volume_claim_templates)
    job: Obj = {"completionMode": "Indexed", "completions": completions,
                "parallelism": parallelism, "template": pod}
    if kube_version(t.cluster.resource) >= BACKOFF_PER_INDEX_SINCE:
        job["backoffLimitPerIndex"] = spec.backoff_limit_per_shard
    else:
        job["backoffLimit"] = min(spec.backoff_limit_per_shard * completions, _INT32_MAX)
    if spec.ttl_after_finished is not None:
        job["ttlSecondsAfterFinished"] = int(duration_seconds(spec.ttl_after_finished))
    return [t.obj("batch/v1", "Job", name, job), *claims(t), *config_map(t, cm, files)]


def _config(t: WorkloadTarget[PinterestJobSet], name: str, completions: int,
            parallelism: int) -> dict[str, str]:
    """The Job's config files: the template's ``config`` plus rendered ``configTemplates``."""
    spec = t.resource.spec
    files = dict(spec.template.config)
    values = t.template_values(job={
        "name": name, "completions": spec.completions,
        "parallelism": spec.parallelism or spec.completions,
        "shardCompletions": completions, "shardParallelism": parallelism,
        "indexOffset": t.shard.index_offset,
    })
    render = t.run.renderer.render
    for key, text in spec.config_templates.items():
        if key in files:
            t.error((t.entry, ("spec", "configTemplates", key)), "duplicate-config",
                    f"config file '{key}' is also in spec.template.config",
                    "give one of them another name")
            continue
        files[key] = render(text, values, t.entry, ("spec", "configTemplates", key))
    return files
