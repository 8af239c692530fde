"""``pincompile diff``: which native objects change in which clusters between two revisions."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pincompile.commands.common import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    deprecated,
    fail,
    output_option,
)
from pincompile.commands.common import report as report_diagnostics
from pincompile.diagnostics import render_human
from pincompile.emit.compare import (
    DiffReport,
    code_fence,
    diff_manifests,
    render_json,
    render_markdown,
    render_text,
)
from pincompile.pipeline import Result, run
from pincompile.review import Review, review
from pincompile.source.gitsource import (
    GitError,
    SpecRoot,
    load_revision,
    path_exists,
    resolve_ref,
    short,
    spec_root,
)
from pincompile.source.loader import LoadResult, load_tree

if TYPE_CHECKING:
    from pincompile.capacity import Survival

#: Both sides are compiled with this revision label, so the revision annotation every
#: generated object carries never makes it differ.
DIFF_REVISION = "diff"


@dataclass
class Side:
    """One side of the comparison: what it is called, and what it compiled to."""

    role: str
    ref: str | None
    sha: str | None
    result: Result
    exists: bool

    @property
    def label(self) -> str:
        if self.ref is None:
            return "working tree"
        return self.ref if self.sha is None or self.sha.startswith(self.ref) else (
            f"{self.ref} @ {short(self.sha)}")

    def to_dict(self) -> dict[str, object]:
        return {"ref": self.ref, "sha": self.sha, "worktree": self.ref is None}


def _compile_sides(root: SpecRoot, path: Path, refs: list[tuple[str, str | None]]
                   ) -> list[Side]:
    """Resolve every ref first (an unknown one fails fast), then compile each side once."""
    shas = {ref: resolve_ref(root.toplevel, ref) for _, ref in refs if ref is not None}
    compiled: dict[str, tuple[Result, bool]] = {}
    sides = []
    for role, ref in refs:
        if ref is None:  # the working tree, untracked files included
            exists = path.exists()
            loaded = load_tree(path) if exists else LoadResult()
            sides.append(Side(role, None, None, run(loaded, revision=DIFF_REVISION), exists))
            continue
        sha = shas[ref]
        if sha not in compiled:
            compiled[sha] = (run(load_revision(root, sha), revision=DIFF_REVISION),
                             path_exists(root, sha))
        result, exists = compiled[sha]
        sides.append(Side(role, ref, sha, result, exists))
    return sides


def _report_failures(failed: list[Side], base: Side, head: Side, fmt: str) -> None:
    """Print why the diff cannot be made, naming the side(s) that do not compile."""
    def why(side: Side) -> str:
        n = len(side.result.diagnostics)
        extra = (" — the diff needs both sides to compile; fix the base branch or choose "
                 "another --base" if side.role == "base" else "")
        return (f"{side.role} ({side.label}) does not compile: {n} error"
                f"{'s' if n != 1 else ''}{extra}")

    if fmt == "json":
        click.echo(json.dumps({
            "base": base.to_dict(), "head": head.to_dict(), "different": None,
            "failed": [s.role for s in failed],
            "diagnostics": {s.role: [d.to_dict() for d in s.result.diagnostics]
                            for s in failed},
        }, indent=2))
    elif fmt == "markdown":
        parts = ["### pincompile diff", "", f"`{base.label}` → `{head.label}`", ""]
        for side in failed:
            text = render_human(side.result.diagnostics, side.result.sources)
            fence = code_fence(text)
            parts += [f"**❌ {why(side)}**", "", f"{fence}text", text, fence, ""]
        click.echo("\n".join(parts))
    for side in failed:
        click.echo(f"error: {why(side)}", err=True)
        if fmt == "text":
            report_diagnostics(side.result.diagnostics, side.result.sources, "human")


@click.command()
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--base", required=True, metavar="REF",
              help="Revision to compare against: a branch, tag or commit (origin/main, HEAD~1).")
@click.option("--head", default=None, metavar="REF",
              help="Revision to compare. Default: the working tree as it is now, uncommitted "
              "and untracked files included.")
@output_option("text", "markdown", "json",
               note="text: per-cluster summary and unified diffs (colored on a terminal).")
@click.option("--format", "legacy_format", type=click.Choice(["text", "markdown", "json"]),
              default=None, hidden=True, help="Deprecated: -o.")
@click.option("--exit-code", is_flag=True,
              help="Exit 1 when anything differs (like git diff --exit-code).")
@click.option("--cluster", "clusters", multiple=True, metavar="NAME",
              help="Only this member cluster (repeatable).")
@click.option("-q", "--quiet", is_flag=True,
              help="Print nothing (errors aside); implies --exit-code.")
@click.option("--stat", is_flag=True, help="Only the per-cluster summary, no diffs.")
@click.option("-U", "--unified", "context", type=click.IntRange(0), default=3,
              show_default=True, help="Lines of context around each change.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto",
              show_default=True, help="Color the text format (auto: when stdout is a terminal).")
def diff(path: Path, base: str, head: str | None, fmt: str, legacy_format: str | None,
         exit_code: bool, clusters: tuple[str, ...], quiet: bool, stat: bool, context: int,
         color: str) -> None:
    """Show which generated objects change in which clusters between two revisions.

    Compiles the specs under PATH (default: the current directory; a folder inside a git
    repository) at --base and at --head straight from git objects — nothing is checked out,
    so it works in a dirty tree — and compares the native objects per cluster. Objects are
    compared as canonical YAML: reformatting, reordering keys or adding comments in the
    specs shows nothing; only what would really be applied does.

    \b
    Examples:
      pincompile diff --base origin/main                 # this branch + local edits
      pincompile diff --base HEAD~1 --head HEAD examples # the last commit only
      pincompile diff --base origin/main --stat --cluster use1a-general-01
      pincompile diff --base origin/main -o markdown > comment.md   # PR comment
      pincompile diff --base origin/main -q || echo "generated objects change"

    \b
    Review aid: every format starts with the projects the change touches (their specs
    or their objects) with their owners, and calls out each change that widens what
    tenants may do: a Project's allow* turned on, a quota raised, a PinterestSideCar
    with inject: always added or changed (it goes into every pod of every project).

    \b
    Loss check: with `survive` in pincompile.yaml (`pincompile capacity`), what the head
    breaks that the base did not is an error at the change that breaks it.

    \b
    Exit codes: 0 compared (or no differences with --exit-code), 1 differences found
    with --exit-code, a side does not compile, or the head breaks the loss check, 2 usage
    error (unknown revision, not a git repository, unknown cluster).
    """
    if legacy_format is not None:
        deprecated(f"--format {legacy_format}", f"-o {legacy_format}")
        fmt = legacy_format
    try:
        root = spec_root(path)
        sides = _compile_sides(root, path, [("base", base), ("head", head)])
    except GitError as exc:
        fail(str(exc), EXIT_USAGE)
        return
    old, new = sides
    if not old.exists and not new.exists:
        fail(f"{path} exists neither in base ({old.label}) nor in head ({new.label})",
             EXIT_USAGE)
    for side in sides:
        if not side.exists:
            click.echo(f"note: {root.describe()} does not exist in {side.role} ({side.label}); "
                       "treating it as empty", err=True)

    failed = [s for s in sides if s.result.diagnostics]
    if failed:
        _report_failures(failed, old, new, fmt)
        sys.exit(EXIT_INVALID)

    known = set(old.result.catalog.clusters) | set(new.result.catalog.clusters) | {
        m.cluster for s in sides for m in s.result.manifests}
    unknown = sorted(set(clusters) - known)
    if unknown:
        fail(f"unknown cluster{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
             f"clusters: {', '.join(sorted(known)) or 'none'}", EXIT_USAGE)

    differences = diff_manifests(old.result.manifests, new.result.manifests,
                             clusters=set(clusters) if clusters else None, context=context)
    from pincompile.capacity import diff_check
    from pincompile.capacity.render import report_survival

    survival = diff_check(old.result, new.result)
    if not quiet:
        aid = review(old.result.catalog, new.result.catalog, new.result.sources,
                     {c.key.namespace for c in differences.changes})
        _print(differences, old, new, fmt, stat=stat, color=color,
               command=_command(path, base, head), review=aid, survival=survival)
    if survival is not None and fmt != "json":
        report_survival(survival, new.result.sources, markdown=fmt == "markdown" and not quiet)
    differs = (exit_code or quiet) and not differences.empty
    sys.exit(EXIT_INVALID if differs or (survival and survival.errors) else EXIT_OK)


def _command(path: Path, base: str, head: str | None) -> str:
    parts = ["pincompile diff", f"--base {base}"]
    if head is not None:
        parts.append(f"--head {head}")
    if str(path) != ".":
        parts.append(str(path))
    return " ".join(parts)


def _print(result: DiffReport, old: Side, new: Side, fmt: str, *, stat: bool, color: str,
           command: str, review: Review, survival: Survival | None) -> None:
    if fmt == "json":
        text = render_json(result, base=old.to_dict(), head=new.to_dict(), review=review)
        if survival is not None:
            text = json.dumps({**json.loads(text), "lossCheck": survival.to_json()}, indent=2,
                              ensure_ascii=False)
        click.echo(text)
    elif fmt == "markdown":
        click.echo(render_markdown(result, base=old.label, head=new.label, command=command,
                                   review=review), nl=False)
    else:
        use_color = color == "always" or (
            color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
        click.echo(render_text(result, color=use_color, stat=stat, review=review), nl=False,
                   color=use_color)
