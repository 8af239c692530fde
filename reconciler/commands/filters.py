"""The filters ``status`` and ``get apps|pods`` share: -p, -k, --phase, --cluster (each
repeatable: an app matches one of its values) and -l; a kind or phase named in any case
(``-k pinapp``), one that does not exist a usage error with what was meant; and, when no
app matches, a line on stderr saying which filter left nothing, or (a project or cluster
that no app has) exit 2 with the names that exist."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from pincompile.commands.common import EXIT_USAGE, fail
from pincompile.crds.status_schema import WORKLOAD_PHASES
from reconciler.api.models import AppSummary
from reconciler.commands.common import _selector

F = TypeVar("F", bound=Callable[..., Any])
APP_KIND_NAMES = ("PinApp", "PinPod", "PinScaler", "PinterestCronJob", "PinterestDaemon",
                  "PinterestJobSet", "PinterestService", "PinterestTrainingJob")
"""Every kind that has an app status (``reconciler.status.document.APP_KINDS``)."""


def did_you_mean(value: str, known: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the closest of ``known``, or ``""``."""
    close = difflib.get_close_matches(value.lower(), {k.lower(): k for k in known}, n=1,
                                      cutoff=0.6)
    by_lower = {k.lower(): k for k in known}
    return f" (did you mean {by_lower[close[0]]}?)" if close else ""


def _one_of(known: Sequence[str], what: str) -> Callable[..., tuple[str, ...]]:
    """A click callback: each value as ``known`` spells it (any case), else a usage error
    naming the closest."""
    by_lower = {k.lower(): k for k in known}

    def convert(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
                ) -> tuple[str, ...]:
        out = []
        for value in values:
            if value.lower() not in by_lower:
                raise click.BadParameter(f"no {what} {value!r}{did_you_mean(value, known)}; "
                                         f"one of {', '.join(known)}")
            out.append(by_lower[value.lower()])
        return tuple(out)
    return convert


def filter_options(func: F) -> F:
    """-p/--project, -k/--kind, --phase and --cluster (each repeatable) and -l/--selector,
    passed on as ``projects``, ``kinds``, ``phases``, ``clusters`` and ``selector``."""
    func = click.option("--cluster", "clusters", multiple=True, metavar="NAME",
                        help="Only apps placed in this member cluster (repeatable).")(func)
    func = click.option("--phase", "phases", multiple=True, metavar="PHASE",
                        callback=_one_of(WORKLOAD_PHASES, "phase"),
                        help="Only apps in this phase: Healthy, Progressing, Degraded, "
                             "Failed, ... (repeatable; any case).")(func)
    func = click.option("-k", "--kind", "kinds", multiple=True, metavar="KIND",
                        callback=_one_of(APP_KIND_NAMES, "app kind"),
                        help="Only apps of this kind: PinApp, PinterestService, ... "
                             "(repeatable; any case).")(func)
    func = click.option("-l", "--selector", metavar="SELECTOR", callback=_selector,
                        help="Only apps whose spec's metadata.labels match this label "
                             "selector (team=search,env!=prod,tier in (a,b),!legacy).")(func)
    return click.option("-p", "--project", "projects", multiple=True, metavar="PROJECT",
                        help="Only this project's apps (repeatable).")(func)


@dataclass(frozen=True)
class AppFilter:
    """What -p, -k, --phase, --cluster and -l ask for (the selector is matched where the
    labels are: the API, or the host's resources)."""

    projects: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    phases: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()
    selector: str | None = None

    @property
    def given(self) -> bool:
        return bool(self.projects or self.kinds or self.phases or self.clusters
                    or self.selector)

    def matches(self, doc: AppSummary) -> bool:
        """Every filter but the selector holds for ``doc``."""
        return ((not self.projects or doc.project in self.projects)
                and (not self.kinds or doc.kind in self.kinds)
                and (not self.phases or doc.phase in self.phases)
                and (not self.clusters or any(c.name in self.clusters for c in doc.clusters)))

    def __str__(self) -> str:
        return " ".join([*(f"-p {p}" for p in self.projects), *(f"-k {k}" for k in self.kinds),
                         *(f"--phase {p}" for p in self.phases),
                         *(f"--cluster {c}" for c in self.clusters),
                         *([f"-l '{self.selector}'"] if self.selector else [])])


def explain_empty(wanted: AppFilter, every: Sequence[AppSummary]) -> str:
    """Why no app matched ``wanted``, ``every`` being the apps there are: exit 2 with the
    names there are when a project or cluster is none of theirs; else the line to print on
    stderr."""
    projects = sorted({d.project for d in every})
    clusters = sorted({c.name for d in every for c in d.clusters})
    for values, known, what in ((wanted.projects, projects, "project"),
                                (wanted.clusters, clusters, "cluster")):
        unknown = [v for v in values if v not in known]
        if unknown:
            fail(f"no app has {what} {unknown[0]!r}{did_you_mean(unknown[0], known)}; "
                 f"{what}s: {_listed(known)}", EXIT_USAGE)
    if not every:
        return "no apps on the host (has `pincompile apply` or `serve` run?)"
    phases = sorted({d.phase for d in every if AppFilter(wanted.projects, wanted.kinds,
                                                         (), wanted.clusters).matches(d)})
    hint = f"; phases there: {_listed(phases)}" if wanted.phases and phases else ""
    return f"no apps match {wanted}{hint}"


def _listed(names: Sequence[str], most: int = 12) -> str:
    more = f", … ({len(names) - most} more)" if len(names) > most else ""
    return ", ".join(names[:most]) + more if names else "none"
