"""``pincompile codeowners``: write (or check) the CODEOWNERS file that binds each project's
folder to its owners and the platform folder to the platform's."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pincompile.commands.common import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    fail,
    moved_output_option,
    report,
)

if TYPE_CHECKING:
    from pincompile.diagnostics import Diagnostic
    from pincompile.repoconfig import RepoConfig


@click.command()
@click.argument("root", default=".", type=click.Path(exists=True, file_okay=False,
                                                      path_type=Path))
@click.option("--out-file", "output", default=None, metavar="FILE",
              help="Where to write ('-': standard output). Default: the CODEOWNERS file the "
              "repository already has (CODEOWNERS, .github/, .gitlab/, .gitea/ or docs/), "
              "else CODEOWNERS at the repository root.")
@moved_output_option("--out-file")
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 (showing the difference) when the file is not what "
              "it would write.")
def codeowners(root: Path, output: str | None, moved: str | None, check: bool) -> None:
    """Write CODEOWNERS from each Project's owners (for its folder apps/<project>/) and
    pincompile.yaml's platformOwners (for platform/, pincompile.yaml and CODEOWNERS).

    ROOT is the spec root (default: the current directory); paths in the file are relative
    to the git repository that holds it. One file serves GitHub, GitLab and Gitea: every
    rule is written as a path and as a regular expression. An owner name becomes a handle
    by pincompile.yaml's ownerHandles, else as it is when it holds an '@' (@user,
    @org/team, an email), else by ownerHandle (default '@{owner}'); see docs/spec.md.

    \b
    Exit codes: 0 written (or current, with --check), 1 stale (--check) or the specs
    it reads are invalid, 2 usage error.
    \b
    Examples:
      pincompile codeowners                     # write the repository's CODEOWNERS
      pincompile codeowners examples --out-file -   # print it
      pincompile codeowners --check             # in CI or pre-commit: is it current?
    """
    output = output or moved
    from pincompile.codeowners import LOCATIONS, SAFE_PATH, render
    from pincompile.source.gitsource import GitError, spec_root

    try:
        found = spec_root(root)
        top, prefix = found.toplevel, found.prefix
    except GitError:
        top, prefix = root.resolve(), ""
    if not SAFE_PATH.match(prefix):
        fail(f"the spec root's path {prefix!r} has characters a CODEOWNERS rule cannot "
             "hold; use letters, digits, '.', '-', '_' and '/'", EXIT_USAGE)
    projects, config = _read(root)
    if output == "-":
        target = None
        own = next((name for name in LOCATIONS if (top / name).is_file()), LOCATIONS[0])
    else:
        target = Path(output) if output else next(
            (top / name for name in LOCATIONS if (top / name).is_file()), top / LOCATIONS[0])
        try:
            own = target.resolve().relative_to(top).as_posix()
        except ValueError:
            own = LOCATIONS[0]
        if not SAFE_PATH.match(own):
            fail(f"{target} has characters a CODEOWNERS rule cannot hold", EXIT_USAGE)
    command = "pincompile codeowners" + (f" {root}" if str(root) != "." else "")
    text = render(projects, config, prefix=prefix, own_path=own, command=command)
    if check:
        _check(target, text, command)
    elif target is None:
        click.echo(text, nl=False)
    else:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        except OSError as exc:
            fail(f"cannot write {target}: {exc.strerror or exc}", EXIT_USAGE)
        click.echo(f"wrote {target}: {len(projects)} project folder"
                   f"{'s' if len(projects) != 1 else ''} and the platform's")
    sys.exit(EXIT_OK)


def _read(root: Path) -> tuple[dict[str, list[str]], RepoConfig]:
    """Projects (name → owners) and the settings of the tree at ``root``; exits 1 with the
    errors when what it needs is invalid."""
    from pincompile.parse import parse
    from pincompile.repoconfig import CONFIG_FILE, valid_handle
    from pincompile.repoconfig import repo_config as read_config
    from pincompile.source.loader import load_tree

    loaded = load_tree(root)
    catalog, diagnostics = parse(loaded)
    config, problems = read_config(loaded.sources)
    diagnostics += problems
    projects: dict[str, list[str]] = {}
    for name, entry in catalog.projects.items():
        owners = entry.resource.spec.owners
        for i, owner in enumerate(owners):
            if not valid_handle(config.handle(owner)):
                diagnostics.append(entry.at("spec", "owners", i).error(
                    "owner-handle", f"owner '{owner}' becomes '{config.handle(owner)}', "
                    "which is not a code-host handle (@user, @org/team or an email)",
                    f"map it with ownerHandles in {CONFIG_FILE}"))
        projects[name] = list(owners)
    if not diagnostics and not config.platform_owners:
        diagnostics.append(_no_platform_owners(loaded.sources.get(CONFIG_FILE)))
    if diagnostics:
        report(sorted(set(diagnostics)), loaded.sources, "human")
        click.echo("error: CODEOWNERS is written from valid specs; fix the errors above",
                   err=True)
        sys.exit(EXIT_INVALID)
    return projects, config


def _no_platform_owners(text: str | None) -> Diagnostic:
    from pincompile.diagnostics import Diagnostic
    from pincompile.repoconfig import CONFIG_FILE

    return Diagnostic(CONFIG_FILE, 1, 1, "repo-config",
                      "no platformOwners: the platform folder would have no code owners"
                      + ("" if text is not None else f" (there is no {CONFIG_FILE})"),
                      f"add platformOwners: ['@your-org/platform-team'] to {CONFIG_FILE}")


def _check(target: Path | None, text: str, command: str) -> None:
    if target is None:
        fail("--check compares with a file: leave out -o - (or name the file with -o)",
             EXIT_USAGE)
        return
    try:
        current = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = None
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {target}: {exc}", EXIT_USAGE)
        return
    if current == text:
        click.echo(f"ok: {target} is current")
        sys.exit(EXIT_OK)
    if current is None:
        click.echo(f"error: {target} does not exist; run `{command}`", err=True)
    else:
        click.echo("".join(difflib.unified_diff(
            current.splitlines(keepends=True), text.splitlines(keepends=True),
            f"{target} (now)", f"{target} (from the specs)")), nl=False)
        click.echo(f"error: {target} is stale; run `{command}`", err=True)
    sys.exit(EXIT_INVALID)
