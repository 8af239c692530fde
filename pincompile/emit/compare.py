"""Compare two compiles object by object, and render what changes for people and tools.

Pure: two lists of :class:`~pincompile.pipeline.Manifest` in, a :class:`DiffReport` out.
Objects are matched by (cluster, API group, kind, namespace, name) — the identity Kubernetes
uses — so an apiVersion bump of the same object shows as a change, not a remove plus an add.
Objects are compared as data and shown as canonical YAML (``pincompile.emit.output``: sorted
keys, block strings), so reformatting, reordering keys or adding comments in the specs never
shows as a difference.
"""

from __future__ import annotations

import difflib
import html
import json
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from deepdiff import DeepDiff

from pincompile.emit.output import to_yaml as canonical_yaml
from pincompile.manifest import Manifest
from pincompile.review import Review

Action = Literal["added", "changed", "removed"]
ACTIONS: tuple[Action, ...] = ("added", "changed", "removed")

#: Annotations that differ between any two revisions by design; never a difference.
VOLATILE_ANNOTATIONS: frozenset[str] = frozenset({"pincompute.io/revision"})
#: GitHub refuses comments over 65,536 characters; leave room for a bot's own header.
MARKDOWN_LIMIT = 60_000
_CONTEXT_LINES = 3
_MAX_PATHS = 20


@dataclass(frozen=True, order=True)
class ObjectKey:
    """The identity of one object in one cluster."""

    cluster: str
    namespace: str
    kind: str
    name: str
    group: str

    @property
    def display(self) -> str:
        """``Kind namespace/name`` (``Kind name`` when cluster-scoped)."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"


@dataclass
class Change:
    """One object that is added, changed or removed in one cluster."""

    key: ObjectKey
    action: Action
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    path: str
    """``<cluster>/<namespace or _cluster>/<kind>-<name>.yaml``, as ``compile`` writes it."""
    diff: str
    """Unified diff of the canonical YAML (``/dev/null`` on the missing side)."""
    paths: list[str] = field(default_factory=list)
    """For a change: every changed field, e.g. ``spec.replicas: 3 → 4``."""

    @property
    def api_version(self) -> str:
        obj = self.after if self.after is not None else self.before
        return str((obj or {}).get("apiVersion", ""))

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action, "cluster": self.key.cluster, "apiVersion": self.api_version,
            "kind": self.key.kind, "namespace": self.key.namespace or None,
            "name": self.key.name, "path": self.path, "changedPaths": self.paths,
            "diff": self.diff,
        }


@dataclass
class DiffReport:
    """Everything that differs between two compiles, in a stable order."""

    changes: list[Change]
    unchanged: int
    clusters: list[str]
    """Every cluster that has objects on either side, sorted."""

    @property
    def empty(self) -> bool:
        return not self.changes

    def counts(self, cluster: str | None = None) -> dict[Action, int]:
        counts: dict[Action, int] = dict.fromkeys(ACTIONS, 0)
        for c in self.changes:
            if cluster is None or c.key.cluster == cluster:
                counts[c.action] += 1
        return counts

    def by_cluster(self) -> dict[str, list[Change]]:
        grouped: dict[str, list[Change]] = {}
        for c in self.changes:
            grouped.setdefault(c.key.cluster, []).append(c)
        return grouped


# --- comparing ----------------------------------------------------------------------------------

def object_key(manifest: Manifest) -> ObjectKey:
    api = str(manifest.obj.get("apiVersion", ""))
    group = api.rpartition("/")[0]
    return ObjectKey(manifest.cluster, manifest.namespace or "", manifest.kind, manifest.name,
                     group)


def without_volatile(obj: Mapping[str, Any],
                     ignore_annotations: Collection[str] = VOLATILE_ANNOTATIONS
                     ) -> dict[str, Any]:
    """A deep copy of ``obj`` as it is compared and shown: without volatile annotations (at
    any ``metadata`` level)."""

    def annotations(values: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in values.items():
            if key in ignore_annotations:
                continue
            out[str(key)] = walk(value)
        return out

    def walk(node: Any, in_metadata: bool = False) -> Any:
        if isinstance(node, Mapping):
            out: dict[str, Any] = {}
            for k, v in node.items():
                if in_metadata and k == "annotations" and isinstance(v, Mapping):
                    kept = annotations(v)
                    if kept:
                        out[k] = kept
                    continue
                out[str(k)] = walk(v, in_metadata=(k == "metadata"))
            return out
        if isinstance(node, list | tuple):
            return [walk(v) for v in node]
        return node

    return walk(dict(obj))  # type: ignore[no-any-return]


def diff_manifests(
    base: Iterable[Manifest], head: Iterable[Manifest], *,
    ignore_annotations: Collection[str] = VOLATILE_ANNOTATIONS,
    clusters: Collection[str] | None = None, context: int = _CONTEXT_LINES,
) -> DiffReport:
    """Match objects of two compiles and describe every difference.

    ``clusters`` limits the comparison to those clusters. Should one side hold the same
    object twice (which the compiler never produces), the later one wins.
    """
    def index(items: Iterable[Manifest]) -> dict[ObjectKey, Manifest]:
        out: dict[ObjectKey, Manifest] = {}
        for m in items:
            if clusters is None or m.cluster in clusters:
                out[object_key(m)] = m
        return out

    old, new = index(base), index(head)
    changes: list[Change] = []
    unchanged = 0
    for key in sorted(old.keys() | new.keys()):
        a, b = old.get(key), new.get(key)
        before = after = None
        if a is not None:
            before = without_volatile(a.obj, ignore_annotations)
        if b is not None:
            after = without_volatile(b.obj, ignore_annotations)
        if before is not None and after is not None and _same(before, after):
            unchanged += 1
            continue
        text_a = to_yaml(before) if before is not None else ""
        text_b = to_yaml(after) if after is not None else ""
        if text_a == text_b:  # e.g. equal once serialized (a tuple and a list)
            unchanged += 1
            continue
        path = (b or a).relpath  # type: ignore[union-attr]
        action: Action = "added" if a is None else "removed" if b is None else "changed"
        diff = unified_diff(text_a, text_b, path, action, context=context)
        paths = changed_paths(before, after) if action == "changed" else []
        changes.append(Change(key, action, before, after, path, diff, paths))
    seen = {k.cluster for k in old} | {k.cluster for k in new}
    return DiffReport(changes, unchanged, sorted(seen))


def _same(a: Any, b: Any) -> bool:
    """Equal as data: key order does not matter, but 1, 1.0 and true differ (unlike ==)."""
    dump = json.dumps
    return bool(dump(a, sort_keys=True, default=str) == dump(b, sort_keys=True, default=str))


def unified_diff(text_a: str, text_b: str, path: str, action: Action, *,
                 context: int = _CONTEXT_LINES) -> str:
    """A ``git diff``-style unified diff of two YAML texts."""
    lines = difflib.unified_diff(
        text_a.splitlines(keepends=True), text_b.splitlines(keepends=True),
        fromfile="/dev/null" if action == "added" else f"a/{path}",
        tofile="/dev/null" if action == "removed" else f"b/{path}", n=context)
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def changed_paths(before: Any, after: Any, limit: int = _MAX_PATHS) -> list[str]:
    """What changed, one field per line: ``spec.replicas: 3 → 4``, ``...labels.team: added``."""
    # threshold 0: always name the fields, never "the whole mapping changed"
    tree = DeepDiff(before, after, view="tree", verbose_level=2, threshold_to_diff_deeper=0)
    found: list[tuple[str, str]] = []
    for report, levels in tree.items():
        for level in levels:
            parts = level.path(output_format="list")
            where = _dotted(parts, after if "removed" not in report else before)
            if report in ("values_changed", "type_changes"):
                found.append((where, f"{where}: {_short(level.t1)} → {_short(level.t2)}"))
            elif "added" in report:
                found.append((where, f"{where}: added {_short(level.t2)}"))
            elif "removed" in report:
                found.append((where, f"{where}: removed (was {_short(level.t1)})"))
            else:  # pragma: no cover - other report types do not occur for plain data
                found.append((where, f"{where}: changed"))
    found.sort()
    lines = [text for _, text in found]
    if len(lines) > limit:
        lines = [*lines[:limit], f"… and {len(lines) - limit} more"]
    return lines


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def _dotted(parts: list[Any], root: Any) -> str:
    """``spec.template.spec.containers[name=main].image`` for a path into ``root``."""
    out = ""
    node = root
    for part in parts:
        if isinstance(part, int):
            item = node[part] if isinstance(node, list) and part < len(node) else None
            name = item.get("name") if isinstance(item, dict) else None
            out += f"[name={name}]" if isinstance(name, str) else f"[{part}]"
            node = item
        else:
            out += (f".{part}" if out else str(part)) if _IDENT.match(str(part)) else (
                f'["{part}"]')
            node = node.get(part) if isinstance(node, dict) else None
    return out


def _short(value: Any, width: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"


# --- canonical YAML -----------------------------------------------------------------------------

def to_yaml(obj: Any) -> str:
    """Canonical YAML of one object (the project's serializer): what is compared and shown."""
    return canonical_yaml(obj)


# --- rendering ----------------------------------------------------------------------------------

_SIGN: dict[Action, str] = {"added": "+", "changed": "~", "removed": "-"}
_ANSI = {"bold": "\x1b[1m", "red": "\x1b[31m", "green": "\x1b[32m", "yellow": "\x1b[33m",
         "cyan": "\x1b[36m", "reset": "\x1b[0m"}
_ACTION_COLOR: dict[Action, str] = {"added": "green", "changed": "yellow", "removed": "red"}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _counts_text(counts: Mapping[Action, int]) -> str:
    return ", ".join(f"{counts[a]} {a}" for a in ACTIONS)


def summary_line(report: DiffReport) -> str:
    """One sentence: how much differs, where."""
    if report.empty:
        return (f"no differences: {_plural(report.unchanged, 'object')} in "
                f"{_plural(len(report.clusters), 'cluster')} unchanged")
    touched = len(report.by_cluster())
    n = len(report.changes)
    return (f"{_plural(n, 'object')} {'differs' if n == 1 else 'differ'} in {touched} of "
            f"{_plural(len(report.clusters), 'cluster')}: {_counts_text(report.counts())}"
            f" ({report.unchanged} unchanged)")


def render_text(report: DiffReport, *, color: bool = False, stat: bool = False,
                review: Review | None = None) -> str:
    """Per cluster: a summary of added/changed/removed objects, then each unified diff;
    first, the ``review`` (projects touched, what widens a tenant's rights)."""

    def paint(text: str, *styles: str) -> str:
        if not color:
            return text
        return "".join(_ANSI[s] for s in styles) + text + _ANSI["reset"]

    out: list[str] = []
    if review is not None and not review.empty:
        head = review.text().splitlines()
        out.extend(paint(line, "bold", "red") if line.startswith("WIDENS") else line
                   for line in head)
    for cluster, changes in report.by_cluster().items():
        out.append(paint(f"cluster {cluster}: {_counts_text(report.counts(cluster))}", "bold"))
        for c in changes:
            out.append(paint(f"  {_SIGN[c.action]} {c.action:<8} {c.key.display}",
                             _ACTION_COLOR[c.action]))
            out.extend(f"      {p}" for p in c.paths)
        out.append("")
        if stat:
            continue
        for c in changes:
            for line in c.diff.splitlines():
                if line.startswith(("---", "+++")):
                    out.append(paint(line, "bold"))
                elif line.startswith("@@"):
                    out.append(paint(line, "cyan"))
                elif line.startswith("+"):
                    out.append(paint(line, "green"))
                elif line.startswith("-"):
                    out.append(paint(line, "red"))
                else:
                    out.append(line)
        if changes and not stat:
            out.append("")
    out.append(summary_line(report))
    return "\n".join(out) + "\n"


def render_json(report: DiffReport, *, base: Mapping[str, Any] | None = None,
                head: Mapping[str, Any] | None = None, review: Review | None = None) -> str:
    """Machine-readable: summary, per-cluster counts and every change with its diff (and
    the ``review``: projects touched with their owners, what widens a tenant's rights)."""
    data: dict[str, Any] = {
        "base": dict(base or {}), "head": dict(head or {}),
        "different": not report.empty,
        "review": (review or Review()).to_dict(),
        "summary": {**report.counts(), "unchanged": report.unchanged},
        "clusters": {c: report.counts(c) for c in report.clusters},
        "changes": [c.to_dict() for c in report.changes],
    }
    return json.dumps(data, indent=2, ensure_ascii=False)


_MD_ICON: dict[Action, str] = {"added": "🟢 added", "changed": "🟡 changed",
                               "removed": "🔴 removed"}


def _cell(text: str) -> str:
    return html.escape(text, quote=False).replace("|", "\\|").replace("\n", " ")


def _code_cell(text: str) -> str:
    """Inline code inside a table cell: HTML, so no Markdown (``*``, ``_``, ``|``) applies."""
    return "<code>" + html.escape(text, quote=False).replace("|", "&#124;") + "</code>"


def _code(text: str) -> str:
    """Inline code that survives any backticks inside."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code_fence(text: str) -> str:
    """A Markdown code fence longer than any backtick run inside ``text``."""
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=0)
    return "`" * max(3, longest + 1)


def render_markdown(report: DiffReport, *, base: str, head: str, command: str = "",
                    limit: int = MARKDOWN_LIMIT, review: Review | None = None) -> str:
    """A pull-request comment: the ``review`` first (what widens a tenant's rights, the
    projects and owners touched), then per cluster a summary table and each diff collapsed.

    The comment stays under ``limit`` characters: table rows get at most half of it, diffs
    the rest; whatever does not fit is left out with a note saying how to see everything.
    """
    title = "### pincompile diff"
    where = f"{_code(base)} → {_code(head)}"
    if review is not None and not review.empty:
        where += "\n\n" + review.markdown().rstrip("\n")
    if report.empty:
        return (f"{title}\n\n{where}\n\n**No changes** to generated objects "
                f"({_plural(report.unchanged, 'object')} in "
                f"{_plural(len(report.clusters), 'cluster')}).\n")
    grouped = report.by_cluster()
    n = len(report.changes)
    header = (f"{title}\n\n{where}\n\n**{_plural(n, 'object')} "
              f"{'changes' if n == 1 else 'change'} in "
              f"{len(grouped)} of {_plural(len(report.clusters), 'cluster')}** — "
              f"{_counts_text(report.counts())}; {report.unchanged} unchanged.\n")
    budget = limit - len(header) - 400  # the note at the end
    used = 0
    rows: dict[str, list[str]] = {}
    rows_left_out = 0
    for cluster, changes in grouped.items():
        rows[cluster] = []
        for c in changes:
            what = "<br>".join(_code_cell(p) for p in c.paths[:5])
            if len(c.paths) > 5:
                what += f"<br>… {len(c.paths) - 5} more"
            row = (f"| {_MD_ICON[c.action]} | {_cell(c.key.kind)} | "
                   f"{_cell(c.key.namespace or '—')} | {_cell(c.key.name)} | {what} |")
            if used + len(row) + 200 > budget // 2:  # 200: the cluster's heading
                rows_left_out += 1
                continue
            rows[cluster].append(row)
            used += len(row) + 1
        used += 200
    blocks: dict[str, list[str]] = {cluster: [] for cluster in grouped}
    diffs_left_out = 0
    for c in report.changes:
        fence = code_fence(c.diff)
        block = (f"<details><summary>{_SIGN[c.action]} {_cell(c.key.display)}</summary>\n\n"
                 f"{fence}diff\n{c.diff}{fence}\n\n</details>\n")
        if used + len(block) > budget:
            diffs_left_out += 1
            continue
        blocks[c.key.cluster].append(block)
        used += len(block)
    parts = [header]
    for cluster in grouped:
        parts.append(f"#### {_code(cluster)} — {_counts_text(report.counts(cluster))}\n\n"
                     "| Change | Kind | Namespace | Name | What changes |\n"
                     "|:--|:--|:--|:--|:--|\n" + "".join(r + "\n" for r in rows[cluster]))
        parts.extend(blocks[cluster])
    if rows_left_out or diffs_left_out:
        left = " and ".join(x for x in (
            _plural(rows_left_out, "table row") if rows_left_out else "",
            _plural(diffs_left_out, "diff") if diffs_left_out else "") if x)
        how = f" Run {_code(command)} to see everything." if command else ""
        parts.append(f"> [!NOTE]\n> {left} left out to keep this comment short.{how}\n")
    return "\n".join(parts)
