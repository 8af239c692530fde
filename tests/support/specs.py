"""Spec trees for the compiler's tests: a small valid repository and ways to break it.

``FIXTURE`` is a repository with one spec of every kind that validates cleanly. Tests add,
replace or delete files of it in memory (``files(...)``) and assert the exact diagnostics.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path

from pincompile.catalog import Catalog, note_invalid
from pincompile.checks import check
from pincompile.diagnostics import Diagnostic
from pincompile.emit.output import render_files
from pincompile.parse import parse
from pincompile.pipeline import Result, run
from pincompile.repoconfig import repo_config
from pincompile.source.loader import LoadResult, load_text

FIXTURE = Path(__file__).parent / "fixtures" / "valid"
REPO_ROOT = Path(__file__).resolve().parents[2]

Files = dict[str, str | bytes]


def fixture_files() -> Files:
    """Every YAML file of the valid fixture repository, by relative path."""
    return {p.relative_to(FIXTURE).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(FIXTURE.rglob("*.y*ml"))}


def doc(text: str) -> str:
    """A YAML snippet written indented in a test, as file content (line 1 = first line)."""
    return textwrap.dedent(text).lstrip("\n")


def files(changes: Mapping[str, str | bytes | None] | None = None) -> Files:
    """The fixture's files with ``changes`` applied (None deletes a file)."""
    out = fixture_files()
    for name, content in (changes or {}).items():
        if content is None:
            out.pop(name, None)
        else:
            out[name] = content
    return out


@functools.lru_cache(maxsize=256)
def _load_one(name: str, content: str | bytes) -> LoadResult:
    # round-trip YAML parsing is slow; the fixture's unchanged files are parsed once
    return load_text(name, content)


def load(contents: Mapping[str, str | bytes]) -> LoadResult:
    """Load in-memory files the way ``load_tree`` loads a directory (sorted by path)."""
    result = LoadResult()
    for name in sorted(contents):
        result.extend(_load_one(name, contents[name]))
    return result


def validate(contents: Mapping[str, str | bytes]) -> list[Diagnostic]:
    """Schema and semantic validation (load → parse → check): the stages under test here,
    without placement and expansion, so these tests pin down exactly their diagnostics."""
    loaded = load(contents)
    catalog, diagnostics = parse(loaded)
    note_invalid(catalog, loaded.documents)
    config, problems = repo_config(loaded.sources)
    return sorted(set(diagnostics) | set(problems) | set(check(catalog, config)))


def catalog_of(contents: Mapping[str, str | bytes]) -> Catalog:
    catalog, _ = parse(load(contents))
    return catalog


def compile_all(contents: Mapping[str, str | bytes]) -> Result:
    """Every stage, as ``pincompile validate`` runs them."""
    return run(load(contents), revision="test")


def triples(diagnostics: Iterable[Diagnostic]) -> list[tuple[str, str, str]]:
    """(``file:line:column``, code, message) of each diagnostic, for exact comparison."""
    return [(d.location(), d.code, d.message) for d in diagnostics]


def write_tree(root: Path, contents: Mapping[str, str | bytes]) -> Path:
    """Write in-memory files below ``root``; returns ``root``."""
    for name, content in contents.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def outputs(result: Result) -> tuple[dict[str, str], list[Diagnostic], list[Diagnostic]]:
    """Everything a user sees of a compile: output files, errors, warnings."""
    placement = result.plan.to_json() if result.plan is not None else None
    return (render_files(result.manifests, "yaml", placement), result.diagnostics,
            result.warnings)


def tree_files(root: Path) -> dict[str, bytes]:
    """Every file and directory of an output tree (the marker included: its id names the
    content, so a warm and a cold compile write the same one)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else b"dir"
            for p in root.rglob("*")}
