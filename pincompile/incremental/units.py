"""What a unit is: a workload or PinScaler defined in an app file, linked to its scaler
target, with its claims on fleet-wide names, summed in buckets."""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Iterable
from typing import Any

from pincompile.manifest import Manifest
from pincompile.models import PinApp, PinScaler, PinterestService, Resource, Workload
from pincompile.placement.model import Decision, Key
from pincompile.repoconfig import CONFIG_FILE
from pincompile.source.filecache import FileState

SCALABLE = (PinApp.KIND, PinterestService.KIND)
Claim = tuple[str, ...]


class Unit:
    """One workload or PinScaler as the last clean compile left it."""

    __slots__ = (
        "_outputs",
        "claims",
        "counted_blob",
        "decision",
        "file",
        "key",
        "link",
        "manifests",
        "outputs_blob",
        "scaler_target",
    )

    def __init__(self, key: Key, file: str, link: tuple[str, str], claims: tuple[Claim, ...],
                 outputs: dict[str, bytes] | None = None, counted_blob: bytes | None = None,
                 scaler_target: Key | None = None, outputs_blob: bytes | None = None) -> None:
        self.key = key
        self.file = file
        self.link = link
        """(project, name) of a workload; (project, target) of a PinScaler."""
        self.claims = claims
        self._outputs = outputs if outputs_blob is None else None
        self.outputs_blob = outputs_blob
        self.counted_blob = counted_blob
        """Placed workloads: ``placement.sums.counts``, pickled (see :attr:`counted`)."""
        self.scaler_target = scaler_target
        self.manifests: list[Manifest] | None = None
        """In memory only (a long-running process): the objects themselves."""
        self.decision: Decision | None = None
        """In memory only: the full decision."""

    @property
    def outputs(self) -> dict[str, bytes]:
        """Output path → digest of its content (kept pickled, like :attr:`counted`: only
        changed units' outputs are read in an update)."""
        if self._outputs is None:
            self._outputs = pickle.loads(self.outputs_blob) if self.outputs_blob else {}
        return self._outputs

    @property
    def counted(self) -> tuple[Any, ...] | None:
        """What quota, capacity and sidecar daemons count of this workload (kept pickled:
        a snapshot is read on every compile, and only changed apps' counts are needed)."""
        return pickle.loads(self.counted_blob) if self.counted_blob is not None else None

    @counted.setter
    def counted(self, value: tuple[Any, ...] | None) -> None:
        self.counted_blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)

    def at_revision(self, revision: str) -> Unit:
        """This unit as a compile of ``revision`` leaves it (in memory: its objects with that
        revision; nothing else depends on it)."""
        unit = Unit(self.key, self.file, self.link, self.claims, self._outputs,
                    self.counted_blob, self.scaler_target, self.outputs_blob)
        unit.decision = self.decision
        if self.manifests is not None:
            unit.manifests = [m.at_revision(revision) for m in self.manifests]
        return unit

    def __reduce__(self) -> tuple[Any, ...]:
        blob = (self.outputs_blob if self._outputs is None
                else pickle.dumps(self._outputs, protocol=pickle.HIGHEST_PROTOCOL))
        return (Unit, (self.key, self.file, self.link, self.claims, None, self.counted_blob,
                       self.scaler_target, blob))


def is_unit(resource: Resource) -> bool:
    return isinstance(resource, Workload | PinScaler)


def link_of(resource: Resource) -> tuple[str, str]:
    if isinstance(resource, PinScaler):
        return (resource.project, resource.spec.target)
    return (resource.project, resource.name)  # type: ignore[attr-defined]


def claims_of(resource: Resource) -> tuple[Claim, ...]:
    """Fleet-wide names a unit holds (``checks.duplicate_names``, ``ingress_hosts``)."""
    kind, project, name = resource.key
    out: list[Claim] = [("name", "app" if kind in SCALABLE else kind, project, name)]
    if isinstance(resource, PinApp | PinterestService) and resource.spec.service is not None:
        ingress = resource.spec.service.ingress
        if ingress is not None:
            out.append(("ingress", ingress.host.lower(), ingress.path))
    return tuple(out)


def app_file(state: FileState, *, problems_allowed: bool = False) -> bool:
    """Whether a file loaded and parsed cleanly into units only (foreign documents aside);
    ``problems_allowed``: whether every spec that parsed is a unit, whatever did not load
    or parse. The repository's ``pincompile.yaml`` is not an app file: it binds them all."""
    if state.name == CONFIG_FILE or (state.loaded.diagnostics and not problems_allowed):
        return False
    for entry, problems in state.parsed:
        if (problems and not problems_allowed) or (
                entry is not None and not is_unit(entry.resource)):
            return False
    return True


BUCKETS = 64


def bucket(key: Key) -> int:
    """A unit's group for kept sums: stable across runs and processes."""
    return zlib.crc32("/".join(key).encode()) % BUCKETS


def bucket_sums(units: Iterable[Unit]) -> Any:
    from pincompile.placement.sums import Sums

    sums = Sums()
    for unit in units:
        counted = unit.counted
        if counted is not None:
            sums.add_counts(counted)
    return sums
