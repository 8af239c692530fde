"""The ``pincompile`` command line."""

from __future__ import annotations

import gc
import os
import sys

import click

#: Command name → (module, attribute, what it does in one line). Modules are imported only
#: when their command runs: ``pincompile --help`` lists them from here, and ``pincompile
#: compile`` never imports the Kubernetes client.
COMMANDS = {
    "validate": ("pincompile.commands.validate", "validate",
                 "Check every spec: schema, references, policy, placement, quota."),
    "schema": ("pincompile.commands.schema", "schema",
               "Write one JSON Schema per kind, generated from the models."),
    "compile": ("pincompile.commands.compile", "compile_cmd",
                "Compile the specs into native Kubernetes manifests per cluster."),
    "explain": ("pincompile.commands.explain", "explain",
                "Where a workload is placed and why, and the objects it produces."),
    "diff": ("pincompile.commands.diff", "diff",
             "Which objects change in which clusters between two revisions."),
    "codeowners": ("pincompile.commands.codeowners", "codeowners",
                   "Write CODEOWNERS from the Projects' owners."),
    "crds": ("pincompile.commands.crds", "crds",
             "Print the CustomResourceDefinitions of every pincompute.io kind."),
    "capacity": ("reconciler.commands.capacity", "capacity",
                 "Can the fleet lose a zone or a cluster? Headroom per cluster and tier."),
    "cost": ("reconciler.commands.cost", "cost",
             "What each project costs per tier and app, and how much of it it uses."),
    "plan": ("reconciler.commands.plan", "plan",
             "What `apply` would change in every member cluster, and what rollouts hold."),
    "apply": ("reconciler.commands.apply", "apply",
              "One reconcile pass: make every member cluster match the specs."),
    "status": ("reconciler.commands.status", "status",
               "One row per app from the host cluster: phase, readiness, rollout."),
    "set": ("pincompile.commands.set", "set_group",
            "Change one field of a spec in its file, keeping comments."),
    "rollback": ("reconciler.commands.rollback", "rollback",
                 "Put an app's spec back as it was at a revision, as a change to commit."),
    "fleet": ("reconciler.fleet.cli", "fleet",
              "A local fleet of real Kubernetes control planes with kwok nodes."),
    "serve": ("reconciler.commands.serve", "serve",
              "Reconcile after every git push; serve the PinCompute API and console."),
    "get": ("reconciler.commands.get", "get",
            "List apps, or their pods in every member cluster."),
    "describe": ("reconciler.commands.describe", "describe",
                 "Everything about one app: placement, objects, pods, events, revisions."),
    "top": ("reconciler.commands.top", "top",
            "What apps and pods use now against their requests (metrics API)."),
    "logs": ("reconciler.commands.remote", "logs",
             "An app's container logs, merged across pods and clusters."),
    "exec": ("reconciler.commands.exec", "exec_",
             "Run a command in a container of an app."),
    "port-forward": ("reconciler.commands.port_forward", "port_forward",
                     "Forward local ports to a port of an app's Running pod."),
    "events": ("reconciler.commands.remote", "events",
               "An app's timeline: pincompile's and its objects' Kubernetes Events."),
    "history": ("reconciler.commands.remote", "history",
                "The revisions applied to an app; what changed between two."),
    "restart": ("reconciler.commands.actions", "restart",
                "Restart an app's pods in every cluster, zone by zone."),
    "rollout": ("reconciler.commands.actions", "rollout",
                "Pause or resume an app's zone-by-zone rollout."),
    "rerun": ("reconciler.commands.actions", "rerun",
              "Run a PinterestJobSet's or PinterestTrainingJob's jobs again."),
    "rotate": ("reconciler.commands.rotate", "rotate",
               "Replace every node of a cluster, batch by batch, honouring budgets."),
    "slo": ("reconciler.commands.slo", "slo",
            "Each SLO's value, error budget left and burn rates; or Prometheus rules."),
    "verify": ("reconciler.commands.slo", "verify",
               "Run the canary's probes once through serve; exit 1 when any fails."),
    "version": ("pincompile.commands.version", "version",
                "The version, the git commit it was installed from, and the Python."),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use (their one-line help comes
    from :data:`COMMANDS`); a command whose package is not installed (the reconciler,
    say) is left out."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from importlib.util import find_spec

        return sorted({*super().list_commands(ctx),
                       *(n for n, (module, _, _) in COMMANDS.items()
                         if find_spec(module.partition(".")[0]) is not None)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        known = super().get_command(ctx, cmd_name)
        if known is not None or cmd_name not in COMMANDS:
            return known
        import importlib

        module, attr, summary = COMMANDS[cmd_name]
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and module.startswith(exc.name):
                return None
            raise
        command: click.Command = getattr(mod, attr)
        command.short_help = summary
        self.add_command(command, cmd_name)
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """The command ``args`` start with; one that does not exist is a usage error
        (exit 2) naming the closest."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib

            known = self.list_commands(ctx)
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f"Did you mean '{close[0]}'?" if close else f"Commands: {', '.join(known)}."
            ctx.fail(f"No such command '{name}'. {hint}")
        return super().resolve_command(ctx, args)

    def shell_complete(self, ctx: click.Context, incomplete: str
                       ) -> list[click.shell_completion.CompletionItem]:
        """Command names (with what each does, from :data:`COMMANDS`) and options,
        importing no command."""
        from click.shell_completion import CompletionItem

        names = [CompletionItem(name, help=COMMANDS[name][2] if name in COMMANDS else None)
                 for name in self.list_commands(ctx) if name.startswith(incomplete)]
        return names + click.Command.shell_complete(self, ctx, incomplete)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and what each does, without importing any of them."""
        rows = [(name, COMMANDS[name][2] if name in COMMANDS else
                 (self.commands[name].get_short_help_str() if name in self.commands else ""))
                for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
@click.group(cls=LazyGroup,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=lambda ctx, param, value: _print_version(ctx, param, value),
              help="Show the version, git commit and Python, and exit.")
def cli() -> None:
    """pincompile — compile short app specs into Kubernetes manifests for every member
    cluster, and reconcile the clusters to match.

    \b
    Typical use:
      pincompile validate .                     # pre-commit: are my specs valid?
      pincompile compile . --out-dir out/       # write every cluster's manifests
      pincompile diff --base origin/main        # pull request: what changes where?
      pincompile explain PinApp/search/search-api
      pincompile set image PinApp/search/search-api main=registry.internal/search/api:2.1
      pincompile status -p search               # how are my apps doing?

    \b
    -o FORMAT names the output format in every command, from one set (each command
    takes those that make sense, listed in its --help): table (fits the terminal),
    wide (every column in full), text, markdown, yaml, json, name (KIND/PROJECT/NAME).

    \b
    Shell completion (bash; zsh and fish: zsh_source, fish_source):
      eval "$(_PINCOMPILE_COMPLETE=bash_source pincompile)"

    Every error names file:line:column. Exit codes: 0 ok, 1 invalid or differences found,
    2 usage error, 3 cluster/API failure.
    """
    from pincompile.template_budget import ENV, template_budget

    if any(os.environ.get(name) for name in ENV):
        try:
            template_budget()
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        from pincompile.commands.version import print_version

        print_version(ctx, param, value)


#: Commands that only read files and write their output (no threads, no clusters): when
#: one ends, the process exits at once instead of freeing its heap object by object
#: (bench/RESULTS.md, "Tuning").
EXIT_AT_ONCE = frozenset({"compile", "validate", "diff", "explain", "schema", "crds",
                          "version"})


GC_THRESHOLDS = (100_000, 50, 1000)
"""A compile allocates millions of small objects that live to the end; the default
thresholds (700) run the cyclic collector over that growing heap again and again
(bench/RESULTS.md, "Tuning"). Every command collects young objects 100 times less often."""


def main() -> None:
    """Entry point: never shows a traceback unless PINCOMPILE_DEBUG is set."""
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        cli.main(standalone_mode=True)
    except SystemExit as done:
        command = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
        if command in EXIT_AT_ONCE and isinstance(done.code, int | None):
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(done.code or 0)
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
