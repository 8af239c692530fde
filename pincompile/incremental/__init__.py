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
its :class:`Delta` against the stored snapshot (see :func:`pincompile.emit.folder.compile_to_dir`).

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
the diagnostics) of a cold compile (``tests/pincompile/incremental/test_incremental.py`` checks
this over random edit sequences).
"""

from __future__ import annotations

from pincompile.incremental.fragments import placement_text
from pincompile.incremental.snapshots import (
    Delta,
    Invalid,
    Outcome,
    Snapshot,
    apply_delta,
    complete,
    snapshot,
)
from pincompile.incremental.units import Unit
from pincompile.incremental.update import snapshot_key, update

__all__ = ["Delta", "Invalid", "Outcome", "Snapshot", "Unit", "apply_delta", "complete",
           "placement_text", "snapshot", "snapshot_key", "update"]
