"""Read a revision's specs straight from git objects: no checkout, works in a dirty tree.

``git ls-tree -r -z`` lists the files under the spec root and a single ``git cat-file
--batch`` process streams their blobs into :func:`pincompile.source.loader.load_text`. The
result is the same :class:`~pincompile.source.loader.LoadResult` that
:func:`~pincompile.source.loader.load_tree` gives for a working tree: names relative to
the spec root, hidden files and folders skipped, symlinks followed only while they stay
inside the spec root (``symlink-outside-root`` otherwise), files over the loader's size
limit refused without being read into memory.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import subprocess
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pincompile.diagnostics import Diagnostic
from pincompile.source.loader import (
    MAX_FILE_BYTES,
    UNREAD_TARGET_HINT,
    YAML_SUFFIXES,
    LoadResult,
    folder_link_problem,
    load_text,
    unread_target,
)

GIT_TIMEOUT = 120
_MODE_SYMLINK = "120000"
_MAX_LINK_HOPS = 40
_CHUNK = 1 << 20


class GitError(Exception):
    """A git operation failed; the message is meant for the user as it is."""


@dataclass(frozen=True)
class SpecRoot:
    """Where the specs live: the repository's work tree and the spec folder inside it."""

    toplevel: Path
    prefix: str
    """Spec root relative to ``toplevel`` in POSIX form; ``""`` for the repository root."""

    def describe(self) -> str:
        return f"{self.prefix}/" if self.prefix else "the repository root"


@dataclass(frozen=True)
class TreeEntry:
    """One ``git ls-tree`` row."""

    mode: str
    type: str
    oid: str
    path: str


def git(toplevel: Path | str, *args: str, input: bytes | None = None) -> bytes:
    """Run git in ``toplevel``; return stdout or raise :class:`GitError` with git's words."""
    try:
        proc = subprocess.run(["git", *args], cwd=toplevel, input=input, capture_output=True,
                              timeout=GIT_TIMEOUT, check=False)
    except FileNotFoundError as exc:
        raise GitError("git is not installed (or not on PATH)") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {args[0]} took longer than {GIT_TIMEOUT}s") from exc
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {args[0]} failed: {message[-1] if message else proc.returncode}")
    return proc.stdout


def spec_root(path: Path) -> SpecRoot:
    """Find the git work tree containing ``path`` and ``path``'s place inside it.

    ``path`` need not exist in the work tree (it may exist only in an older revision); its
    nearest existing ancestor must be inside a git work tree.
    """
    absolute = Path(os.path.abspath(path))
    anchor = absolute
    while not anchor.is_dir():
        if anchor.parent == anchor:
            break
        anchor = anchor.parent
    try:
        top = git(anchor, "rev-parse", "--show-toplevel").decode().strip()
    except GitError as exc:
        if "not a git repository" in str(exc):
            raise GitError(f"{path} is not inside a git work tree") from None
        raise  # e.g. "dubious ownership": git's own words say what to do
    if not top:
        raise GitError(f"{path} is not inside a git work tree")
    toplevel = Path(os.path.realpath(top))
    real = Path(os.path.realpath(absolute))
    if real != toplevel and not real.is_relative_to(toplevel):
        raise GitError(f"{path} is outside the git work tree {toplevel}")
    prefix = real.relative_to(toplevel).as_posix()
    return SpecRoot(toplevel, "" if prefix == "." else prefix)


def resolve_ref(toplevel: Path, ref: str) -> str:
    """The full commit sha ``ref`` names (a branch, tag, sha, ``HEAD~2``, ...)."""
    if not ref or ref.startswith("-") or "\n" in ref:
        raise GitError(f"'{ref}' is not a valid revision")
    try:
        out = git(toplevel, "rev-parse", "--verify", "--quiet", "--end-of-options",
                   f"{ref}^{{commit}}")
    except GitError:
        hint = ""
        if "/" in ref and not ref.startswith("refs/"):
            remote, _, branch = ref.partition("/")
            hint = (f"; if it is a remote branch, fetch it first "
                    f"(git fetch {remote} {branch}) — CI checkouts are often shallow")
        raise GitError(f"unknown revision '{ref}': not a branch, tag or commit of "
                       f"{toplevel}{hint}") from None
    return out.decode().strip()


def short(sha: str) -> str:
    """The usual 12-character abbreviation of a sha."""
    return sha[:12]


def list_tree(toplevel: Path, sha: str, prefix: str) -> list[TreeEntry]:
    """Every entry below ``prefix`` (or ``prefix`` itself when it is a file) at ``sha``."""
    args = ["ls-tree", "-r", "-z", "--full-tree", sha]
    if prefix:
        args += ["--", prefix]
    entries: list[TreeEntry] = []
    for record in git(toplevel, *args).split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, otype, oid = meta.decode().split(" ")
        path = raw_path.decode("utf-8", "surrogateescape")
        if not prefix or path == prefix or path.startswith(prefix + "/"):
            entries.append(TreeEntry(mode, otype, oid, path))
    return entries


def _write_lines(stream: IO[bytes], oids: Sequence[str]) -> None:
    with contextlib.suppress(BrokenPipeError, ValueError, OSError):
        try:
            for oid in oids:
                stream.write(oid.encode() + b"\n")
        finally:
            stream.close()


def _read_exact(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise GitError("git cat-file ended early")
    return data


def read_blobs(toplevel: Path, oids: Sequence[str], *, limit: int = MAX_FILE_BYTES
               ) -> Iterator[tuple[str, bytes | int]]:
    """Yield ``(oid, content)`` in order through one ``git cat-file --batch`` process.

    A blob larger than ``limit`` is skipped over unread and yields its size instead.
    """
    if not oids:
        return
    proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=toplevel,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    writer = threading.Thread(target=_write_lines, args=(proc.stdin, oids), daemon=True)
    writer.start()
    try:
        for oid in oids:
            header = proc.stdout.readline().decode().split()
            if len(header) != 3:
                raise GitError(f"git cat-file cannot read object {oid}: {' '.join(header)}")
            size = int(header[2])
            if size > limit:
                left = size
                while left:
                    left -= len(_read_exact(proc.stdout, min(left, _CHUNK)))
                content: bytes | int = size
            else:
                content = _read_exact(proc.stdout, size)
            _read_exact(proc.stdout, 1)  # the newline after every object
            yield oid, content
    finally:
        proc.stdout.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        writer.join(timeout=5)


def load_revision(root: SpecRoot, sha: str) -> LoadResult:
    """Load the specs under ``root`` as they are at commit ``sha``, like ``load_tree``."""
    files, result = read_revision(root, sha)
    for name, content in files:
        result.extend(load_text(name, content))
    return result


def read_revision(root: SpecRoot, sha: str) -> tuple[list[tuple[str, bytes]], LoadResult]:
    """The spec files under ``root`` at commit ``sha`` as (name, content) in load order, and
    what reading them found (unfollowable symlinks, files over the size limit; symlinked
    folders skipped as warnings)."""
    entries = list_tree(root.toplevel, sha, root.prefix)
    single = len(entries) == 1 and entries[0].path == root.prefix and bool(root.prefix)
    base = "" if single or not root.prefix else root.prefix + "/"
    tree = {e.path[len(base):] if not single else posixpath.basename(e.path): e
            for e in entries if e.type == "blob"}  # submodules (commits) are not read
    dirs = {posixpath.dirname(rel) for rel in tree}
    dirs |= {d.rsplit("/", i)[0] for d in list(dirs) for i in range(1, d.count("/") + 1)}

    result = LoadResult()
    links = {rel: e for rel, e in tree.items() if e.mode == _MODE_SYMLINK}
    link_targets = dict(zip(
        links, (c for _, c in read_blobs(root.toplevel, [e.oid for e in links.values()])),
        strict=True)) if links else {}
    wanted: list[tuple[str, str]] = []  # (name, oid) in load order
    if single:
        for rel, entry in tree.items():
            if entry.mode != _MODE_SYMLINK:
                wanted.append((rel, entry.oid))
                continue
            result.diagnostics.append(Diagnostic(
                rel, 1, 1, "unreadable", f"is a symlink at {short(sha)}; not followed",
                "pass the path of the file it points to"))
    else:
        walk = _RevisionWalk(tree, link_targets, dirs, result)
        walk.folder("", "", ("",))
        wanted = walk.wanted
    names = [name for name, _ in wanted]
    blobs = read_blobs(root.toplevel, [o for _, o in wanted], limit=MAX_FILE_BYTES)
    files: list[tuple[str, bytes]] = []
    for name, (_, content) in zip(names, blobs, strict=True):
        if isinstance(content, int):
            result.diagnostics.append(Diagnostic(
                name, 1, 1, "file-too-large",
                f"file is {content} bytes; the limit is {MAX_FILE_BYTES}"))
            continue
        files.append((name, content))
    return files, result


class _RevisionWalk:
    """The working-tree walk of :func:`pincompile.source.loader.iter_yaml_files` over a commit's
    tree: the same names in the same order, symlinked folders inside the root followed
    under the same rules."""

    def __init__(self, tree: dict[str, TreeEntry], targets: dict[str, bytes | int],
                 dirs: set[str], result: LoadResult) -> None:
        self.tree, self.targets, self.dirs, self.result = tree, targets, dirs, result
        self.children: dict[str, set[str]] = {}
        for path in (*tree, *dirs):
            if path:
                parent, _, name = path.rpartition("/")
                self.children.setdefault(parent, set()).add(name)
        self.linked: set[str] = set()
        self.wanted: list[tuple[str, str]] = []  # (name, oid) in load order

    def folder(self, real: str, prefix: str, parents: tuple[str, ...]) -> None:
        """Walk folder ``real`` of the tree under the name ``prefix``."""
        subfolders: list[tuple[str, str]] = []
        for name in sorted(self.children.get(real, ())):
            if name.startswith("."):
                continue
            path, rel = f"{real}/{name}" if real else name, prefix + name
            if path in self.dirs:
                subfolders.append((rel, path))
                continue
            entry = self.tree[path]
            if entry.mode != _MODE_SYMLINK:
                if name.endswith(YAML_SUFFIXES):
                    self.wanted.append((rel, entry.oid))
                continue
            oid, target, problem = _follow(rel, path, self.tree, self.targets, self.dirs)
            if target is not None:
                problem = folder_link_problem(rel, target, target, parents, self.linked)
                if problem is None:
                    self.linked.add(target)
                    subfolders.append((rel, target))
                else:
                    self.result.warnings.append(problem)
                continue
            if not name.endswith(YAML_SUFFIXES):
                continue
            if problem is not None:
                self.result.diagnostics.append(problem)
            elif oid is not None:
                self.wanted.append((rel, oid))
        for rel, path in subfolders:
            self.folder(path, rel + "/", (*parents, path))


def _follow(rel: str, path: str, tree: dict[str, TreeEntry], targets: dict[str, bytes | int],
            dirs: set[str]) -> tuple[str | None, str | None, Diagnostic | None]:
    """Where the symlink ``path`` inside the spec root leads, as the working-tree loader
    would: (blob, None, None), (None, folder, None) or (None, None, why not)."""
    current = path
    for _ in range(_MAX_LINK_HOPS):
        raw = targets.get(current)
        target = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else ""
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(current), target))
        if not target or target.startswith("/") or joined == ".." or joined.startswith("../"):
            return None, None, Diagnostic(
                rel, 1, 1, "symlink-outside-root",
                "symlink points outside the repository; not followed",
                "copy the file into the repository instead")
        if joined in dirs or joined == ".":
            return None, "" if joined == "." else joined, None
        entry = tree.get(joined)
        if entry is None:
            return None, None, Diagnostic(
                rel, 1, 1, "unreadable", f"cannot read: symlink target '{target}' does not exist")
        if entry.mode != _MODE_SYMLINK:
            if unread_target(joined):
                return None, None, Diagnostic(
                    rel, 1, 1, "symlink-unread-target",
                    f"symlink leads to {joined}, a file the walk does not read; not followed",
                    UNREAD_TARGET_HINT)
            return entry.oid, None, None
        if joined not in targets:
            return None, None, Diagnostic(rel, 1, 1, "unreadable", "cannot read: symlink loop")
        current = joined
    return None, None, Diagnostic(rel, 1, 1, "unreadable",
                                  "cannot read: too many levels of symlinks")


def path_exists(root: SpecRoot, sha: str) -> bool:
    """Whether the spec root exists at ``sha``."""
    if not root.prefix:
        return True
    try:
        proc = subprocess.run(["git", "cat-file", "-e", f"{sha}:{root.prefix}"],
                              cwd=root.toplevel, capture_output=True, timeout=GIT_TIMEOUT,
                              check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise GitError(f"git cat-file failed: {exc}") from exc
    return proc.returncode == 0


def git_revision(root: Path) -> str:
    """The git commit of ``root`` (``<sha>`` or ``<sha>-dirty``), or ``unknown``."""
    import subprocess

    try:
        cwd = root if root.is_dir() else root.parent
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=cwd,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return f"{sha}-dirty" if dirty else sha
    except (OSError, subprocess.SubprocessError):
        return "unknown"
