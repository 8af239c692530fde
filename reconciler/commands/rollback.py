"""``pincompile rollback KIND/PROJECT/NAME --to REVISION``: GitOps rollback. The app's spec
document goes back to what it was at REVISION in the working tree (its comments with it;
every other document, file and comment stays as it is), the whole tree is validated with
it, and the diff to commit is printed (``--commit`` commits it). Nothing touches a
cluster: the commit, once pushed, is what `serve` (or `apply`) rolls out."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pincompile.appref import AppRef
from pincompile.commands.common import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    complete_app_ref,
    fail,
    report,
    write_atomically,
)
from pincompile.compiler import Compiler
from pincompile.source import gitsource
from pincompile.source.loader import read_tree
from reconciler.commands.remote import app_ref, short_revision
from reconciler.commands.spec_documents import at_revision, in_tree, put_back, unified


@click.command("rollback")
@click.argument("app", metavar="KIND/PROJECT/NAME", callback=app_ref,
                shell_complete=complete_app_ref)
@click.option("--to", "revision", required=True, metavar="REVISION",
              help="The commit to go back to (a sha as `pincompile history` shows it, a "
                   "tag, HEAD~2, ...).")
@click.option("-C", "--root", "root", default=".", show_default=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The spec tree (inside the git work tree of the spec repository).")
@click.option("--commit", is_flag=True,
              help="Commit the change (only that file) as well: 'rollback KIND/PROJECT/NAME "
                   "to REVISION'.")
def rollback(app: AppRef, revision: str, root: Path, commit: bool) -> None:
    """Put an app's spec back as it was at REVISION, in the working tree, as a change to
    commit: desired state changes only through git.

    The app's YAML document is replaced by its text at REVISION (comments inside it
    kept); other documents in the same file (its PinScaler, say), other files and
    comments stay as they are. An app deleted since is added back. The whole tree is
    validated with the change first: a rollback that would not validate (a quota, a
    cluster or a sidecar changed since) is refused with located errors and nothing is
    written. Then the diff is printed; commit and push it (or pass --commit) and the
    reconciler rolls it out like any change, zone by zone.

    \b
    Examples:
      pincompile history PinApp/search/search-api          # the revisions applied
      pincompile rollback PinApp/search/search-api --to 4f2c9e1a0b7d
      pincompile rollback PinApp/search/search-api --to HEAD~1 --commit
    \b
    Exit codes: 0 written (or nothing to roll back), 1 the tree would not validate, or
    the app was not in the specs at REVISION, 2 usage (not a git work tree, no such
    revision).
    """
    try:
        sha, old = at_revision(root, revision, app)
    except gitsource.GitError as exc:
        fail(str(exc), EXIT_USAGE)
        return
    if old is None:
        fail(f"{app} is not in the specs at {short_revision(sha)}", EXIT_INVALID)
        return
    files, found = in_tree(root, app)
    name = found.file if found is not None else old.file
    current = dict(files)[name].decode("utf-8") if name in dict(files) else None
    text = put_back(current, found, old)
    if text == current:
        click.echo(f"{app} is as it was at {short_revision(sha)}: nothing to roll back",
                   err=True)
        sys.exit(EXIT_OK)
    _validate(root, files, name, text)
    write_atomically(root / name, text)
    click.echo(unified(name, current or "", text), nl=False)
    message = f"rollback {app} to {short_revision(sha)}"
    if commit:
        where = gitsource.spec_root(root / name)
        gitsource.git(where.toplevel, "add", "--", where.prefix)
        gitsource.git(where.toplevel, "commit", "-q", "-m", message, "--", where.prefix)
        click.echo(f"committed: {message}", err=True)
    else:
        click.echo(f"to roll it out: git commit -m '{message}' -- {root / name} && git push",
                   err=True)
    sys.exit(EXIT_OK)


def _validate(root: Path, files: list[tuple[str, bytes]], name: str, text: str) -> None:
    """Compile the tree with ``name`` holding ``text``; refuse (exit 1) when it does not
    validate."""
    changed = [(n, text.encode() if n == name else raw) for n, raw in files]
    if name not in dict(files):
        changed.append((name, text.encode()))
    result = Compiler(remember=False).compile(changed, revision="rollback", expand=False,
                                              loaded=read_tree(root)[1])
    if result.diagnostics:
        report(result.diagnostics, result.sources, "human")
        click.echo("refused: the specs would not validate with the app as it was; nothing "
                   "written", err=True)
        sys.exit(EXIT_INVALID)
