"""``pincompile version`` (and ``pincompile --version``): what is installed."""

from __future__ import annotations

import json
import platform
import sys
from importlib import metadata
from pathlib import Path

import click

from pincompile.commands.common import EXIT_OK, output_option


def version_info() -> dict[str, str]:
    """The package version, the git commit it was installed from when that is a git
    checkout of pincompile (``<sha>[-dirty]``, else ``unknown``), and Python's version."""
    from pincompile.source.gitsource import git_revision

    try:
        version = metadata.version("pincompile")
    except metadata.PackageNotFoundError:
        version = "unknown"
    package = Path(__file__).resolve().parent.parent
    checkout = (package.parent / "pyproject.toml").is_file() and (
        package.parent / ".git").exists()
    return {"version": version, "commit": git_revision(package) if checkout else "unknown",
            "python": f"{platform.python_version()} ({sys.implementation.name})"}


def render(info: dict[str, str], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(info, indent=2)
    return (f"pincompile {info['version']}\ncommit: {info['commit']}\n"
            f"python: {info['python']}")


@click.command("version")
@output_option("text", "json")
def version(fmt: str) -> None:
    """Print pincompile's version, the git commit it was installed from (when known) and
    the Python it runs on.

    \b
    Examples:
      pincompile version
      pincompile version -o json | jq -r .version
    """
    click.echo(render(version_info(), fmt))
    sys.exit(EXIT_OK)


def print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``pincompile --version``: the same as ``pincompile version``."""
    if value and not ctx.resilient_parsing:
        click.echo(render(version_info(), "text"))
        ctx.exit(EXIT_OK)
