"""Incremental compiles: when only app files changed, re-run check, placement and expansion
for the changed apps alone, and rewrite only the output files whose bytes changed.

A :class:`Snapshot` records what the last *clean* compile of a tree produced: per file its
content digest and the workloads and PinScalers it defines, and per such *unit* what
placement counted for it (pods, requests, surge per cluster: the inputs of quota, capacity
and sidecar daemons), the digests of its output files, its claims on fleet-wide names
(``(kind, project, name)``, ingress host and path); and the sums quota, capacity and
sidecar daemons need, in buckets of units. Unchanged workloads' ``placement.json`` entries
are kept as they are in the file written last (whose digest the snapshot holds): the changed
ones are spliced in. The output directory's file names are kept as a directory tree, checked
with one ``listdir`` per directory that changed since it was last seen. An update stores only
its :class:`Delta` against the stored snapshot (see ``pipeline.compile_to_dir``).

:func:`update` compiles a changed tree against a snapshot. It gives up (returns None, and the
caller compiles everything) whenever an edit could reach beyond the changed apps:

- a file that defines anything but workloads and PinScalers (clusters, projects, sidecars,
  the runtime profile) changed, appeared or went away; or the revision, the output format or
  pincompile itself differs (a long-running process, which keeps the objects in memory, gives
  the unchanged ones the new revision instead: the only place it appears in them);
- the tree walk reported a problem;
- a changed unit claims a name, an ingress route or an output file an unchanged unit holds.

Otherwise the *affected* units are the changed files' units plus every unit linked to them
by a PinScaler target (a scaler and its app are placed and expanded together), closed over
their files. Check, placement and expansion run over the platform specs and the affected
units only; quota, capacity and sidecar daemons run over every unit (the unchanged ones as
the snapshot's bucket sums). When the changed files do not load, parse, check or expand
cleanly, the update reports what a full compile would report (:class:`Invalid`), located in
the affected files, and writes nothing; a placement problem, or a diagnostic located
anywhere else, makes it give up instead. Whatever it reuses, the result is the bytes (or
the diagnostics) of a cold compile (``tests/spec/test_cache.py`` checks this over random
edit sequences).
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pincompile.catalog import Catalog, Entry, note_invalid
from pincompile.diagnostics import Diagnostic, add_new
from pincompile.emit.output import PLACEMENT_FILE, json_text, manifest_path, serialize
from pincompile.manifest import Manifest
from pincompile.models import PinApp, PinScaler, PinterestService, Resource, Workload
from pincompile.placement.model import Decision, Key, Plan
from pincompile.placement.plan import counts
from pincompile.repoconfig import CONFIG_FILE, repo_config
from pincompile.source.cache import FileState

SCALABLE = (PinApp.KIND, PinterestService.KIND)
Claim = tuple[str, ...]


def digest(text: str | bytes) -> bytes:
    """The digest output files are compared by (SHA-256, which CPUs compute in hardware:
    3x faster than BLAKE2 on the 19 MiB ``placement.json`` of 10,000 apps)."""
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    return hashlib.sha256(data).digest()[:16]


def tree_sig(files: Iterable[tuple[str, bytes]]) -> int:
    """An order-free signature of (output path, content digest) pairs: the XOR of their
    hashes, so an update adjusts it by the files it changes alone."""
    sig = 0
    for path, sha in files:
        sig ^= int.from_bytes(hashlib.blake2b(path.encode("utf-8", "surrogateescape") + b"\0"
                                              + sha, digest_size=16).digest(), "big")
    return sig


def tree_id(sig: int) -> str:
    """What the output directory's marker records: the same output, the same id."""
    return f"{sig:032x}"


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
        """Placed workloads: ``placement.plan.counts``, pickled (see :attr:`counted`)."""
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


@dataclass
class FileSummary:
    digest: str
    units: list[Key]
    entries: int
    warnings: list[Diagnostic]

    def __reduce__(self) -> tuple[Any, ...]:  # a plain call: unpickles 3x faster
        return (FileSummary, (self.digest, self.units, self.entries, self.warnings))


@dataclass
class Snapshot:
    """What the last clean compile of one tree produced (see the module docstring)."""

    context: tuple[str, ...]
    """(pincompile code digest, revision, output format): anything else → full compile."""
    files: dict[str, FileSummary]
    platform: dict[str, str]
    """Files that define anything but workloads and scalers: name → digest."""
    units: dict[Key, Unit]
    platform_outputs: dict[str, bytes]
    placement: bytes
    """Digest of ``placement.json``."""
    clusters: list[str]
    buckets: dict[int, Any] = field(default_factory=dict)
    """Bucket (see :func:`bucket`) → ``placement.plan.Sums`` of its placed workloads: an
    update sums again only the buckets of changed units, then adds up all buckets."""
    sig: int = 0
    """:func:`tree_sig` of every output file (``placement.json`` included)."""
    per_cluster: dict[str, int] = field(default_factory=dict)
    """Cluster → how many objects it gets (kept, so a summary needs no count)."""
    tree: dict[str, set[str]] = field(default_factory=dict)
    """Every output file as :func:`dir_tree` lists it (see :meth:`listed_in`)."""
    token: str = field(default_factory=lambda: os.urandom(16).hex())
    """Names this snapshot as the base of later :class:`Delta` s."""
    delta: Delta | None = None
    """What changed since the base named ``token`` was stored (updates store only this)."""
    dirs_seen: tuple[int, dict[str, tuple[int, int, int]]] = (0, {})
    """When (ns) and as what (mtime, ctime, inode) the output directories were last seen
    holding :attr:`tree`: an unchanged directory (not changed within the racy margin of
    that time) need not be listed again."""
    placement_stat: tuple[int, int, int, int] | None = None
    """(size, mtime, ctime, inode) of ``placement.json`` just after it was written: while
    they are the same, the file holds the bytes of digest :attr:`placement` (an update reads
    it, but need not hash 19 MiB at 10,000 apps to trust it)."""

    def has(self, path: str) -> bool:
        """Whether ``path`` is an output file of this snapshot."""
        folder, _, name = path.rpartition("/")
        return name in self.tree.get(folder, ()) and path not in self.tree

    def listed_in(self, out: Path) -> bool:
        """Whether directory ``out`` holds exactly this snapshot's files (its marker aside):
        one ``listdir`` per directory, so a stray or deleted file (or directory) sends a
        compile down the full path."""
        from pincompile.emit.output import MARKER
        from pincompile.source.treescan import RACY_MARGIN_NS

        taken, seen = self.dirs_seen
        for folder, names in self.tree.items():
            path = out / folder if folder else out
            known = seen.get(folder)
            if known is not None and max(known[0], known[1]) < taken - RACY_MARGIN_NS:
                try:
                    info = os.stat(path)
                except OSError:
                    return False
                if (info.st_mtime_ns, info.st_ctime_ns, info.st_ino) == known:
                    continue  # no name added or removed since it was seen
            try:
                found = os.listdir(path)
            except OSError:
                return False
            if not folder:
                names = names | {MARKER}
            if len(found) != len(names) or set(found) != names:
                return False
        return bool(self.tree)

    def seen_in(self, out: Path) -> None:
        """Record the output directories as they are now (``out`` was just written to
        hold :attr:`tree`); kept with the stored changes too."""
        taken = time.time_ns()
        seen: dict[str, tuple[int, int, int]] = {}
        for folder in self.tree:
            try:
                info = os.stat(out / folder if folder else out)
            except OSError:
                continue
            seen[folder] = (info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        self.dirs_seen = (taken, seen)
        self.placement_stat = _stat_of(out / PLACEMENT_FILE)
        if self.delta is not None:
            self.delta.last.dirs_seen = self.dirs_seen
            self.delta.last.placement_stat = self.placement_stat

    def placement_unchanged(self, out: Path) -> bool:
        """Whether ``out``'s ``placement.json`` is, by its stat, the file written last
        (replaced or edited since, it has another inode, ctime or size)."""
        return self.placement_stat is not None and _stat_of(out / PLACEMENT_FILE) == (
            self.placement_stat)

    @property
    def id(self) -> str:
        """Written into the output directory's marker: the tree this snapshot describes."""
        return tree_id(self.sig)


def _stat_of(path: Path) -> tuple[int, int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


@dataclass
class Delta:
    """The changes of one or more updates since a stored base snapshot: an update stores
    this alone (O(changed apps)), not the whole snapshot (O(all apps))."""

    base: str
    """The base snapshot's :attr:`Snapshot.token`."""
    files: dict[str, FileSummary | None]
    units: dict[Key, Unit | None]
    gone_paths: set[str]
    new_paths: set[str]
    buckets: dict[int, Any]
    last: Snapshot
    """The latest snapshot without files, units, paths and buckets (its small fields)."""

    def size(self) -> int:
        return len(self.files) + len(self.units)

    def then(self, later: Delta) -> Delta:
        """This delta followed by ``later`` (both against the same base)."""
        return Delta(self.base, {**self.files, **later.files}, {**self.units, **later.units},
                     self.gone_paths | later.gone_paths,
                     (self.new_paths - later.gone_paths) | later.new_paths,
                     {**self.buckets, **later.buckets}, later.last)


def complete(snap: Snapshot) -> bool:
    """Whether ``snap`` has every field of this version's :class:`Snapshot` (an older
    pincompile's pickle has not)."""
    import dataclasses

    return all(hasattr(snap, f.name) for f in dataclasses.fields(Snapshot))


def apply_delta(base: Snapshot, delta: Delta) -> Snapshot | None:
    """``base`` as ``delta`` changed it (in place); None when ``delta`` is not of it."""
    if delta.base != base.token:
        return None
    last = delta.last
    for name, summary in delta.files.items():
        if summary is None:
            base.files.pop(name, None)
        else:
            base.files[name] = summary
    for key, unit in delta.units.items():
        if unit is None:
            base.units.pop(key, None)
        else:
            base.units[key] = unit
    base.tree = tree_update(base.tree, delta.gone_paths, delta.new_paths)
    base.buckets.update(delta.buckets)
    base.context, base.platform, base.platform_outputs = (last.context, last.platform,
                                                          last.platform_outputs)
    base.placement, base.clusters, base.sig, base.per_cluster, base.dirs_seen = (
        last.placement, last.clusters, last.sig, last.per_cluster, last.dirs_seen)
    base.placement_stat = last.placement_stat
    base.delta = delta
    return base


@dataclass
class Outcome:
    """An incremental compile: the new snapshot and how the output tree changes."""

    snapshot: Snapshot
    write: dict[str, str | bytes]
    """Output path → new content (new or changed files)."""
    remove: set[str]
    specs: int
    objects: int
    clusters: int
    units: int
    """How many units were checked, placed and expanded again."""
    manifests: list[Manifest] | None = None
    plan: Plan | None = None
    warnings: list[Diagnostic] = field(default_factory=list)


@dataclass
class Invalid:
    """An update whose changed apps have errors: what a full compile reports (nothing is
    written, the snapshot stays that of the last clean compile)."""

    diagnostics: list[Diagnostic]
    warnings: list[Diagnostic]
    sources: dict[str, str]
    """The affected files' text (for the lines diagnostics show)."""


# --- the output files as directories ------------------------------------------------------

def tree_update(tree: Mapping[str, set[str]], gone: Iterable[str], new: Iterable[str]
                ) -> dict[str, set[str]]:
    """``tree`` (directory, ``""`` for OUT → the names in it: files and subdirectories)
    without the files ``gone`` and with the files ``new`` (a new dict; ``tree`` is kept).
    A directory is listed while it holds a file, as the output tree keeps it."""
    out = {folder: set(names) for folder, names in tree.items()}
    for path in gone:
        while True:
            folder, _, name = path.rpartition("/")
            names = out.get(folder)
            if names is None or name not in names:
                break
            names.discard(name)
            if names or not folder:
                break
            del out[folder]
            path = folder
    for path in new:
        while True:
            folder, _, name = path.rpartition("/")
            names = out.setdefault(folder, set())
            if name in names:
                break
            names.add(name)
            if not folder:
                break
            path = folder
    return out


# --- what a unit is ------------------------------------------------------------------------

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


def _sums(units: Iterable[Unit]) -> Any:
    from pincompile.placement.plan import Sums

    sums = Sums()
    for unit in units:
        counted = unit.counted
        if counted is not None:
            sums.add_counts(counted)
    return sums


# --- placement.json from per-workload parts ------------------------------------------------

def fragment(decision: Decision) -> str:
    """One workload's entry of ``placement.json`` as it appears there (indented)."""
    text = json_text(decision.to_json())
    return text.replace("\n", "\n    ")


_ENTRY = re.compile(r',\n(?=    ")')
_WORKLOADS = '\n  "workloads": '
_END = "\n  }\n}\n"


def fragments_of(text: str) -> dict[Key, str] | None:
    """The workloads' entries of a ``placement.json`` :func:`placement_text` wrote (None
    when it does not look like one)."""
    at = text.rfind(_WORKLOADS)
    if at < 0:
        return None
    body = text[at + len(_WORKLOADS):]
    if body == "{}\n}\n":
        return {}
    if not body.startswith("{\n") or not body.endswith("\n  }\n}\n"):
        return None
    found: dict[Key, str] = {}
    for part in _ENTRY.split(body[2:-len("\n  }\n}\n")]):
        end = part.find('": ')
        if not part.startswith('    "') or end < 0:
            return None
        key = tuple(json.loads(part[4:end + 1]).split("/"))
        if len(key) != 3:
            return None
        found[key] = part[end + 3:]  # type: ignore[index]
    return found


def placement_text(plan: Plan, fragments: Mapping[Key, str]) -> str:
    """``placement.json``: :func:`pincompile.emit.output.to_json` of ``plan.to_json()``, with
    every workload's entry taken from ``fragments`` (``workloads`` sorts last)."""
    whole = plan.to_json()
    whole.pop("workloads")
    head = json_text(whole)
    keys = sorted(fragments)
    if not keys:
        body = "{}"
    else:
        body = "{\n" + ",\n".join(
            f"    {json_text('/'.join(k))}: {fragments[k]}"
            for k in keys) + "\n  }"
    return head[:-2] + f',\n  "workloads": {body}\n}}\n'


def splice_placement(old: bytes, plan: Plan, drop: Iterable[Key],
                     fragments: Mapping[Key, str]) -> bytes | None:
    """``placement.json`` as :func:`placement_text` would write it, made from ``old`` (the
    file written last) by replacing the entries of the workloads in ``fragments`` and the
    part before ``workloads`` (``plan`` without its workloads) alone: no other entry is read.

    ``drop``: workloads whose old entries go (those of changed files). None when an entry
    would be added or removed (the caller rebuilds the whole file then)."""
    # the top-level key (no JSON string holds a line break): near the start, found at once
    at = old.find(_WORKLOADS.encode())
    if at < 0 or not old.endswith(_END.encode()):
        return None
    spans: list[tuple[int, int, bytes]] = []
    for key in {*drop, *fragments}:
        needle = f"\n    {json.dumps('/'.join(key), ensure_ascii=False)}: ".encode()
        start = old.find(needle, at)
        if (start < 0) != (key not in fragments):
            return None  # an entry comes or goes
        if start < 0:
            continue
        start += len(needle)
        end = old.find(b',\n    "', start)
        spans.append((start, end if end >= 0 else len(old) - len(_END),
                      fragments[key].encode()))
    whole = plan.to_json()
    whole.pop("workloads")
    head = json.dumps(whole, sort_keys=True, indent=2, ensure_ascii=False, default=str)
    pieces = [head[:-2].encode(), b","]
    done = at
    for start, end, text in sorted(spans):
        pieces += [old[done:start], text]
        done = end
    pieces.append(old[done:])
    return b"".join(pieces)


# --- building a snapshot from a full compile -----------------------------------------------

def _unit(resource: Resource, file: str, plan: Plan, keep: bool) -> Unit:
    """A unit as ``plan`` placed it (``keep``: with its decision and, to come, objects)."""
    unit = Unit(resource.key, file, link_of(resource), claims_of(resource), outputs={})
    placed = plan.placed.get(resource.key)
    if placed is not None:
        unit.counted = counts(placed)
        if keep:
            unit.decision = placed.decision
    unit.scaler_target = plan.scaler_targets.get(resource.key)
    if keep:
        unit.manifests = []
    return unit


def _owned(m: Manifest, path: str, sig: bytes, units: Mapping[Key, Unit]) -> bool:
    """Record an output file with the unit that generates it; False for platform objects."""
    if not _record(m.source, path, sig, units):
        return False
    owner = units[m.source.resource.key]  # type: ignore[union-attr]
    if owner.manifests is not None:
        owner.manifests.append(m)
    return True


def _record(source: Entry[Any] | None, path: str, sig: bytes, units: Mapping[Key, Unit]
            ) -> bool:
    if source is None or not is_unit(source.resource):
        return False
    owner = units.get(source.resource.key)
    if owner is None:
        return False
    owner.outputs[path] = sig
    return True


Output = tuple[str, "Entry[Any] | None", bytes]
"""A written output file: (path, the spec that generated it or None, content digest)."""


def snapshot(context: tuple[str, ...], states: Iterable[FileState], result: Any, fmt: str,
             written: Iterable[Output] | None = None, placement: bytes = b"") -> Snapshot:
    """The snapshot of a clean full compile (``result``: a ``pipeline.Result``; ``written``
    the files written for it and ``placement`` the digest of ``placement.json``). Without
    ``written`` (a long-running process that writes no files) it keeps the objects of
    ``result`` and the decisions instead of output digests."""
    keep = written is None
    plan: Plan = result.plan
    files: dict[str, FileSummary] = {}
    platform: dict[str, str] = {}
    units: dict[Key, Unit] = {}
    for state in states:
        keys: list[Key] = []
        for entry, _ in state.parsed:
            if entry is None or not is_unit(entry.resource):
                continue
            units[entry.resource.key] = _unit(entry.resource, state.name, plan, keep)
            keys.append(entry.resource.key)
        files[state.name] = FileSummary(state.digest, keys, sum(
            1 for e, _ in state.parsed if e is not None), list(state.loaded.warnings))
        if not app_file(state):
            platform[state.name] = state.digest
    platform_outputs: dict[str, bytes] = {}
    if written is None:
        for m in result.manifests:
            path = manifest_path(m, fmt)
            if not _owned(m, path, b"", units):
                platform_outputs[path] = b""
    else:
        for path, source, sig in written:
            if not _record(source, path, sig, units):
                platform_outputs[path] = sig
    snap = Snapshot(context, files, platform, units, platform_outputs, placement,
                    sorted(result.catalog.clusters))
    every = [*(p for u in units.values() for p in u.outputs), *platform_outputs]
    snap.tree = tree_update({}, (), [*every, PLACEMENT_FILE])
    snap.per_cluster = _per_cluster(set(every), {}, 1)
    if not keep:
        snap.sig = tree_sig([*((p, d) for u in units.values() for p, d in u.outputs.items()),
                             *platform_outputs.items(), (PLACEMENT_FILE, snap.placement)])
    by_bucket: dict[int, list[Unit]] = {}
    for unit in units.values():
        by_bucket.setdefault(bucket(unit.key), []).append(unit)
    snap.buckets = {b: _sums(us) for b, us in by_bucket.items()}
    return snap


# --- an incremental compile ----------------------------------------------------------------

def update(prev: Snapshot, context: tuple[str, ...], files: list[tuple[str, str]],
           state_of: Callable[[str, str], FileState | None], walked: Any, *,
           revision: str, fmt: str | None, keep: bool = False,
           read_placement: Callable[[], bytes | None] = lambda: None,
           placement_unchanged: bool = False) -> Outcome | Invalid | None:
    """Compile against ``prev``; :class:`Invalid` when the changed apps have errors; None
    when a full compile is needed (module docstring).
    ``keep``: ``prev`` was made without output files (a long-running process); the
    outcome then carries every object and the plan, and nothing to write, and ``prev`` may
    be of another revision. ``fmt`` None:
    check only (``validate``): nothing is serialized or written, no ``placement.json``.

    ``files``: (name, content digest) of every file of the tree, in load order;
    ``state_of(name, digest)``: that file loaded and parsed (from memory, the cache or the
    file itself), or None; ``read_placement()``: the ``placement.json`` written last (its
    unchanged workloads' entries are kept as they are), ``placement_unchanged``: it is
    known by its stat (else its digest is checked).
    """
    # in memory, a new revision only restamps the unchanged units' objects
    restamp = (keep and prev.context != context
               and _but_revision(prev.context) == _but_revision(context))
    if (prev.context != context and not restamp) or walked.diagnostics:
        return None
    now = dict(files)
    changed = [n for n, d in files if n not in prev.files or prev.files[n].digest != d]
    removed = [n for n in prev.files if n not in now]
    if any(n in prev.platform for n in (*changed, *removed)):
        return None
    states: dict[str, FileState] = {}
    for name in changed:
        state = state_of(name, now[name])
        if state is None or not app_file(state, problems_allowed=True):
            return None
        states[name] = state
    if not changed and not removed and not restamp:
        return None if keep else _unchanged(prev, walked)

    # the affected files: changed ones, and those linked to them through scaler targets
    old_units = {k for n in (*changed, *removed) if n in prev.files for k in prev.files[n].units}
    links = {prev.units[k].link for k in old_units}
    for state in states.values():
        links.update(link_of(e.resource) for e, _ in state.parsed if e is not None)
    affected_files = set(states)
    todo = set(links)
    seen_links = set(links)
    while todo:  # one pass over the units per step of the links (most edits: one pass)
        linked = {u.file for k, u in prev.units.items()
                  if u.link in todo and k not in old_units} - affected_files
        todo = set()
        for name in sorted(linked):
            state = state_of(name, now[name])
            if state is None:
                return None
            states[name] = state
            affected_files.add(name)
            old_units.update(prev.files[name].units)
            for e, _ in state.parsed:
                if e is not None and link_of(e.resource) not in seen_links:
                    seen_links.add(link_of(e.resource))
                    todo.add(link_of(e.resource))

    kept = {k: u for k, u in prev.units.items() if k not in old_units}
    taken: dict[Claim, Key] = {c: k for k, u in kept.items() for c in u.claims}
    new_entries: list[Entry[Any]] = []
    for name, _ in files:
        if name in affected_files:
            new_entries.extend(e for e, _ in states[name].parsed if e is not None)
    for e in new_entries:
        if e.resource.key in kept or any(c in taken for c in claims_of(e.resource)):
            return None  # a duplicate: a full compile reports it

    catalog = Catalog()
    for name, _ in files:
        if name in prev.platform:
            state = state_of(name, now[name])
            if state is None:
                return None
            for entry, _ in state.parsed:
                if entry is not None:
                    catalog.add(entry)
        elif name in affected_files:
            for entry, _ in states[name].parsed:
                if entry is not None:
                    catalog.add(entry)

    from pincompile.checks import check
    from pincompile.emit.output import too_large_all
    from pincompile.expand import expand_all
    from pincompile.placement import plan as place

    note_invalid(catalog, (d for name in affected_files for d in states[name].loaded.documents))
    diagnostics = [d for name in affected_files for d in states[name].loaded.diagnostics]
    diagnostics += [d for name in affected_files for _, ds in states[name].parsed for d in ds]
    config_state = state_of(CONFIG_FILE, now[CONFIG_FILE]) if CONFIG_FILE in now else None
    if CONFIG_FILE in now and config_state is None:
        return None  # the settings cannot be read again: a full compile reports why
    config, _ = repo_config(config_state.loaded.sources if config_state is not None else {})
    add_new(diagnostics, check(catalog, config))
    from pincompile.placement.plan import Sums

    touched = {bucket(k) for k in old_units} | {bucket(e.resource.key) for e in new_entries}
    in_touched: dict[int, list[Unit]] = {b: [] for b in touched}
    for k, u in kept.items():
        b = bucket(k)
        if b in touched:
            in_touched[b].append(u)
    base = Sums()
    for b, sums in prev.buckets.items():
        if b not in touched:
            base.merge(sums)
    for b in sorted(touched):
        base.merge(_sums(in_touched[b]))
    scalers = {k: u.scaler_target for k, u in kept.items() if u.scaler_target is not None}
    plan, problems = place(catalog, base, scalers)
    if problems:
        return None
    manifests, problems = expand_all(catalog, plan, revision=revision)
    add_new(diagnostics, problems)
    add_new(diagnostics, too_large_all(manifests))
    if diagnostics:
        return _invalid(prev, diagnostics, states, affected_files, manifests, now, walked,
                        fmt)

    units: dict[Key, Unit] = ({k: u.at_revision(revision) for k, u in kept.items()}
                              if restamp else dict(kept))
    fresh: dict[Key, Unit] = {}
    for name in affected_files:
        for e, _ in states[name].parsed:
            if e is None:
                continue
            fresh[e.resource.key] = units[e.resource.key] = _unit(e.resource, name, plan, keep)
    write: dict[str, str | bytes] = {}
    new_platform: dict[str, bytes] = {}
    platform_manifests: list[Manifest] = []
    old_paths = {p: d for k in old_units for p, d in prev.units[k].outputs.items()}
    old_paths.update(prev.platform_outputs)
    serialized = fmt is not None and not keep
    for m in manifests:
        path = _path(m, fmt)
        if path not in old_paths and prev.has(path):
            return None  # an object an unchanged unit generates: a full compile reports it
        text = serialize(m.obj, fmt) if serialized and fmt is not None else ""
        sig = digest(text) if serialized else b""
        if not _owned(m, path, sig, fresh):
            new_platform[path] = sig
            platform_manifests.append(m)
        if serialized and old_paths.get(path) != sig:
            write[path] = text
    written = {p for u in fresh.values() for p in u.outputs} | set(new_platform)
    remove = set(old_paths) - written

    sig = b""
    if serialized:
        old = read_placement()
        if old is None or (not placement_unchanged and digest(old) != prev.placement):
            return None
        changed_parts = {k: fragment(plan.placed[k].decision) for k in fresh
                         if k in plan.placed}
        placement = splice_placement(old, plan, old_units, changed_parts)
        if placement is None:  # workloads come or go: every entry read back
            fragments = fragments_of(old.decode("utf-8", "surrogateescape"))
            if fragments is None:
                return None
            for k in old_units:
                fragments.pop(k, None)
            fragments.update(changed_parts)
            placement = placement_text(plan, fragments).encode("utf-8", "surrogateescape")
        sig = digest(placement)
        if sig != prev.placement:
            write[PLACEMENT_FILE] = placement
    summaries = {n: s for n, s in prev.files.items() if n in now and n not in affected_files}
    for name in affected_files:
        st = states[name]
        summaries[name] = FileSummary(now[name], [e.resource.key for e, _ in st.parsed
                                                  if e is not None],
                                      sum(1 for e, _ in st.parsed if e is not None),
                                      list(st.loaded.warnings))
    ordered = {n: summaries[n] for n, _ in files}
    snap = Snapshot(context, ordered, dict(prev.platform), units, new_platform, sig,
                    prev.clusters, dict(prev.buckets))
    snap.tree = tree_update(prev.tree, set(old_paths) - written, written)
    snap.per_cluster = _per_cluster(old_paths, dict(prev.per_cluster), -1)
    snap.per_cluster = _per_cluster([*(p for u in fresh.values() for p in u.outputs),
                                     *new_platform], snap.per_cluster, 1)
    if not keep:
        new_paths = [*((p, d) for u in fresh.values() for p, d in u.outputs.items()),
                     *new_platform.items(), (PLACEMENT_FILE, sig)]
        snap.sig = (prev.sig ^ tree_sig([*old_paths.items(), (PLACEMENT_FILE, prev.placement)])
                    ^ tree_sig(new_paths))
    for b in touched:
        snap.buckets[b] = _sums([*in_touched[b], *(u for k, u in fresh.items()
                                                    if bucket(k) == b)])
    if not keep:  # what a stored base needs to become ``snap``
        last = Snapshot(snap.context, {}, snap.platform, {}, snap.platform_outputs,
                        snap.placement, snap.clusters, {}, snap.sig, snap.per_cluster, {},
                        token="")
        change = Delta(prev.token, {**{n: None for n in removed},
                                    **{n: summaries[n] for n in affected_files}},
                       {**{k: None for k in old_units}, **fresh}, set(old_paths) - written,
                       written, {b: snap.buckets[b] for b in touched}, last)
        snap.token = prev.token
        snap.delta = prev.delta.then(change) if prev.delta is not None else change
    outcome = Outcome(snap, write, remove, *_counts(snap), units=len(fresh),
                      warnings=_warnings(snap, walked))
    if keep:  # a long-running process: every decision, not only the new ones
        plan.decisions = dict(sorted({k: u.decision for k, u in units.items()
                                      if u.decision is not None}.items()))
        outcome.manifests = sorted(
            [*platform_manifests, *(m for u in units.values() for m in (u.manifests or []))],
            key=lambda m: m.relpath)
        outcome.plan = plan
    return outcome


def context_of(revision: str, fmt: str) -> tuple[str, ...]:
    """What a snapshot is valid for: (pincompile code digest, revision, output format)."""
    from pincompile.source.cache import code_digest

    return (code_digest(), revision, fmt)


def _but_revision(context: tuple[str, ...]) -> tuple[str, ...]:
    """:func:`context_of` without its revision."""
    return context[:1] + context[2:]


def _path(m: Manifest, fmt: str | None) -> str:
    """``m``'s output path (``fmt`` None, a check only: the YAML one, as validate lists it)."""
    return manifest_path(m, fmt or "yaml")


def _invalid(prev: Snapshot, diagnostics: list[Diagnostic], states: Mapping[str, FileState],
             affected: set[str], manifests: list[Manifest], now: Mapping[str, str],
             walked: Any, fmt: str | None) -> Invalid | None:
    """The errors of an update, as a full compile reports them; None when one is located
    outside the affected files or a changed unit generates an unchanged unit's object
    (a full compile then tells)."""
    old_paths = {p for k in prev.units if prev.units[k].file in affected
                 for p in prev.units[k].outputs} | set(prev.platform_outputs)
    if (any(d.file not in affected for d in diagnostics)
            or any(_path(m, fmt) not in old_paths and prev.has(_path(m, fmt))
                   for m in manifests)):
        return None
    sources: dict[str, str] = {}
    for name in affected:
        sources.update(states[name].loaded.sources)
    warnings = [*walked.warnings,
                *(w for n, f in prev.files.items() if n in now and n not in affected
                  for w in f.warnings),
                *(w for n in affected for w in states[n].loaded.warnings)]
    return Invalid(sorted(set(diagnostics)), sorted(warnings), sources)


def _unchanged(prev: Snapshot, walked: Any) -> Outcome:
    """Nothing changed: nothing to write (a long-running process reuses its last result)."""
    return Outcome(prev, {}, set(), *_counts(prev), units=0, warnings=_warnings(prev, walked))


def _per_cluster(paths: Iterable[str], counts: dict[str, int], step: int) -> dict[str, int]:
    """``counts`` (cluster → objects) with ``step`` added for every output path."""
    for path in paths:
        cluster = path.split("/", 1)[0]
        counts[cluster] = counts.get(cluster, 0) + step
    return {c: n for c, n in counts.items() if n}


def _counts(snap: Snapshot) -> tuple[int, int, int]:
    specs = sum(f.entries for f in snap.files.values())
    return specs, sum(snap.per_cluster.values()), len(snap.per_cluster)


def _warnings(snap: Snapshot, walked: Any) -> list[Diagnostic]:
    return sorted([*walked.warnings, *(w for f in snap.files.values() for w in f.warnings)])


__all__ = ["Delta", "Outcome", "Snapshot", "Unit", "apply_delta", "context_of", "placement_text",
           "snapshot", "update"]
