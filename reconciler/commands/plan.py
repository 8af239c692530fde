"""``pincompile plan``: what ``apply`` would do, per cluster, with a diff of each change."""

from __future__ import annotations

import json
import sys
from datetime import datetime

import click

from pincompile.commands.common import (
    EXIT_CLUSTER,
    EXIT_INVALID,
    EXIT_OK,
    complete_app_ref,
    output_option,
)
from reconciler.clients.read import key_of
from reconciler.commands.common import (
    check_clusters,
    check_targets,
    clock_of,
    cluster_errors,
    cluster_options,
    compile_or_exit,
    target_options,
    targets_of,
    usable_kubeconfig,
)
from reconciler.commands.held import Held, held_changes, held_summary, rollouts_on_host
from reconciler.engine import MemberState, Reconciler
from reconciler.plan.change import Action, Change
from reconciler.plan.cluster_plan import Options
from reconciler.plan.narrow import touches

SHOWN = (Action.CREATE, Action.UPDATE, Action.REPLACE, Action.PRUNE, Action.CONFLICT,
         Action.INVALID, Action.SKIPPED)


@click.command("plan")
@click.argument("args", nargs=-1, metavar="[ROOT] [KIND/PROJECT/NAME]...",
                shell_complete=complete_app_ref)
@target_options
@cluster_options
@output_option("text", "markdown", "json")
@click.option("--exit-code", is_flag=True, help="Exit 1 when anything would change.")
@click.option("--adopt", is_flag=True, help="Plan to take over unmanaged objects.")
@click.option("--max-prune", default="20%", show_default=True,
              help="Most objects a pass may prune per cluster (count or percent).")
@click.option("--prune-data", is_flag=True, help="Plan to prune Namespaces and PVCs too.")
def plan(args: tuple[str, ...], project: str | None, selector: str | None,
         kubeconfig: str | None, host_context: str, clusters: tuple[str, ...],
         at: datetime | None, fmt: str, exit_code: bool, adopt: bool, max_prune: str,
         prune_data: bool) -> None:
    """Show what `apply` would change in every member cluster, without changing anything.

    ROOT (default: .) is the spec tree; with KIND/PROJECT/NAME, -p PROJECT or -l
    SELECTOR only the changes to those apps' objects are shown (the whole tree is still
    compiled and checked).

    Each desired object is sent to its cluster as a server-side dry-run apply and the
    answer is compared with the live object, so defaults the API server adds never show
    as drift, and a commit that changes nothing for an object shows nothing — except an
    object pincompile applied itself that provably did not change since (its record of
    what was applied matches and every value it sets is live): no request for that one.
    Objects that pincompile manages but no longer compiles are listed as prunes.

    \b
    Actions: create, update (with a diff), replace (an immutable field changed: delete
    and recreate), prune, conflict (an object pincompile does not manage holds the name:
    its field managers and the immutable field that differs; see --adopt), invalid (the
    API server rejects the object), held (a zone-by-zone rollout keeps this Deployment's
    live template until its zone's turn: "us-east-1b: 2 changes held until us-east-1a is
    healthy"; where each rollout stands is read from the host when it answers).

    \b
    Exit codes: 0 ok (with --exit-code: nothing to change or held), 1 invalid specs (or,
    with --exit-code, changes pending or held), 2 usage (also: the kubeconfig is missing
    or unreadable), 3 a cluster could not be read (also: its context is not in the
    kubeconfig).
    \b
    Examples:
      pincompile plan examples
      pincompile plan examples --cluster use1a-general-01 -o markdown > plan.md
      pincompile plan examples PinApp/search/search-api
      pincompile plan examples -p search -l team=search
      pincompile plan . --exit-code || echo "drift or changes pending"
    """
    root, wanted = targets_of(args, project, selector)
    result = compile_or_exit(root)
    check_clusters(result, clusters)
    check_targets(result, wanted)
    path = usable_kubeconfig(kubeconfig)
    reconciler = Reconciler(path, host_context, clusters=clusters or None,
                            options=Options(adopt=adopt, max_prune=max_prune,
                                            prune_data=prune_data), clock=clock_of(at))
    try:
        with cluster_errors("a member cluster"):
            members = reconciler.plan(result, rollouts_on_host(path, host_context))
    finally:
        reconciler.close()
    held = held_changes(reconciler.rollouts, members,
                        lambda obj: wanted.everything or touches(
                            Change(Action.UNCHANGED, key_of(obj), desired=obj), wanted))
    if not wanted.everything:
        for member in members.values():
            if member.plan is not None:
                member.plan.changes = [c for c in member.plan.changes if touches(c, wanted)]
    if fmt == "json":
        click.echo(json.dumps(_as_json(members, held), indent=2))
    else:
        click.echo(_as_text(members, held, markdown=fmt == "markdown"), nl=False)
    failed = any(m.error for m in members.values())
    pending = any(m.plan and (m.plan.pending or m.plan.of(Action.CONFLICT, Action.INVALID))
                  for m in members.values()) or any(held.values())
    if failed:
        sys.exit(EXIT_CLUSTER)
    sys.exit(EXIT_INVALID if exit_code and pending else EXIT_OK)


def _as_json(members: dict[str, MemberState], held: dict[str, list[Held]]
             ) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for member in members.values():
        entry: dict[str, object] = {"cluster": member.name, "error": member.error}
        if member.plan is not None:
            entry["held"] = [h.to_json() for h in held.get(member.name, [])]
            entry["blocked"] = member.plan.blocked
            entry["changes"] = [{"action": str(c.action), "object": c.name,
                                 "reason": c.reason, "diff": c.diff()}
                                for c in member.plan.changes if c.action in SHOWN]
            entry["unchanged"] = len(member.plan.of(Action.UNCHANGED))
        out.append(entry)
    return out


def _as_text(members: dict[str, MemberState], held: dict[str, list[Held]], *,
             markdown: bool) -> str:
    lines: list[str] = []
    total = 0
    for member in members.values():
        head = f"## {member.name}" if markdown else f"=== {member.name}"
        if member.error is not None:
            lines += [head, f"unreachable: {member.error}", ""]
            continue
        assert member.plan is not None
        shown = [c for c in member.plan.changes if c.action in SHOWN]
        total += len(member.plan.pending)
        unchanged = len(member.plan.of(Action.UNCHANGED))
        gated = held.get(member.name, [])
        held_note = f", {len(gated)} held" if gated else ""
        lines.append(f"{head} ({len(member.plan.pending)} to change{held_note}, "
                     f"{unchanged} unchanged)")
        if member.plan.blocked:
            lines.append(f"prune refused: {member.plan.blocked}")
        lines += [f"{'- ' if markdown else '  '}{'held':<9} {h.object}  (until {h.until})"
                  for h in gated]
        for change in shown:
            reason = f"  ({change.reason})" if change.reason else ""
            lines.append(f"{'- ' if markdown else '  '}{change.action:<9} {change.name}{reason}")
            if change.action is Action.UPDATE:
                text = change.diff()
                lines.append("```diff\n" + text + "```" if markdown else _indent(text))
        lines.append("")
    lines += held_summary(held)
    unreachable = sum(member.error is not None for member in members.values())
    summary = f"{total} change(s) pending" if total else "no changes"
    waiting = sum(len(items) for items in held.values())
    if waiting:
        summary += f" now; {waiting} held by rollout gates until their zone's turn"
    if unreachable:
        summary += (f" in the {len(members) - unreachable} reachable cluster(s); "
                    f"{unreachable} unreachable, not planned")
    lines.append(summary)
    return "\n".join(lines) + "\n"


def _indent(text: str) -> str:
    return "".join("      " + line for line in text.splitlines(keepends=True))
