"""The ``pincompile`` command line."""

from __future__ import annotations

import os
import sys

import click

from pincompile.commands.validate import validate


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="pincompile")
def cli() -> None:
    """pincompile — compile short app specs into Kubernetes manifests for every member
    cluster, and reconcile the clusters to match.

    \b
    Typical use:
      pincompile validate .                     # pre-commit: are my specs valid?
      pincompile compile . -o out/              # write every cluster's manifests
      pincompile diff --base origin/main        # pull request: what changes where?
      pincompile explain PinApp/search/search-api
      pincompile set image PinApp/search/search-api main=registry.internal/search/api:2.1

    Every error names file:line:column. Exit codes: 0 ok, 1 invalid or differences found,
    2 usage error, 3 cluster/API failure.
    """


cli.add_command(validate)


def _register_optional() -> None:
    """Commands built in their own modules; each registers itself when present."""
    import importlib

    for module, attr in (
        ("pincompile.commands.schema", "schema"),
        ("pincompile.commands.compile", "compile_cmd"),
        ("pincompile.commands.explain", "explain"),
        ("pincompile.commands.diff", "diff"),
        ("pincompile.commands.crds", "crds"),
        ("reconciler.commands.plan", "plan"),
        ("reconciler.commands.apply", "apply"),
        ("reconciler.commands.status", "status"),
        ("pincompile.commands.set", "set_group"),
        ("reconciler.fleet.cli", "fleet"),
        ("reconciler.commands.serve", "serve"),
    ):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and module.startswith(exc.name):
                continue
            raise
        cli.add_command(getattr(mod, attr))


_register_optional()


def main() -> None:
    """Entry point: never shows a traceback unless PINCOMPILE_DEBUG is set."""
    try:
        cli.main(standalone_mode=True)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as exc:
        if os.environ.get("PINCOMPILE_DEBUG"):
            raise
        click.echo(f"internal error: {type(exc).__name__}: {exc}\n"
                   "(set PINCOMPILE_DEBUG=1 for a traceback, and please report it)", err=True)
        sys.exit(70)


if __name__ == "__main__":
    main()
