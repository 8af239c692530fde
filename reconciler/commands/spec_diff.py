"""``pincompile history KIND/PROJECT/NAME --diff FROM[..TO]``: what changed in an app's
spec between two revisions of the spec repository (or a revision and the working tree),
as a unified diff of its YAML document."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pincompile.appref import AppRef
from pincompile.commands.common import EXIT_OK, EXIT_USAGE, fail
from pincompile.source import gitsource
from reconciler.commands.spec_documents import Found, at_revision, in_tree, unified


def print_spec_diff(app: AppRef, between: str, root: Path) -> None:
    """Print the diff of ``app``'s document from FROM to TO (the working tree when
    ``between`` names one revision); exit 0 (2: no such revision, not a git tree)."""
    start, _, end = between.partition("..")
    try:
        old_sha, old = at_revision(root, start, app)
        if end:
            new_sha, new = at_revision(root, end, app)
            new_label = gitsource.short(new_sha)
        else:
            new, new_label = in_tree(root, app)[1], "working tree"
    except gitsource.GitError as exc:
        fail(str(exc), EXIT_USAGE)
        return
    either = new or old
    name = either.file if either is not None else str(app)
    text = unified(name, _text(old), _text(new), gitsource.short(old_sha), new_label)
    if text:
        click.echo(text, nl=False)
    else:
        click.echo(f"{app}: no change between {gitsource.short(old_sha)} and {new_label}",
                   err=True)
    sys.exit(EXIT_OK)


def _text(found: Found | None) -> str:
    return found.text if found is not None else ""
