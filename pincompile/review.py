"""The review aid of ``pincompile diff``: which projects (and owners) a change touches, and
every change that widens what a tenant may do, so a reviewer sees it first.

Widening: a Project's ``allow*`` policy turned on or a capability added to it (or a new
Project with one), a project namespace's Pod Security level lowered, a RuntimeProfile
security default relaxed, a quota raised (a tier or resource that had none counts as 0),
and a ``PinterestSideCar`` with ``inject: always`` added, switched to it or changed (it goes
into every pod of every project its ``appliesTo`` names).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pincompile.catalog import Catalog
from pincompile.models import PinScaler, Project, Workload
from pincompile.models.platform import ProjectPolicy
from pincompile.models.security import SecurityDefaults
from pincompile.models.types import parse_quantity
from pincompile.podsecurity import LEVELS, Level, namespace_level, security_defaults
from pincompile.repoconfig import repo_config

TIERS = ("reserved", "ondemand", "preemptible")


@dataclass
class Review:
    """What a reviewer of a change needs to know first."""

    projects: dict[str, list[str]] = field(default_factory=dict)
    """Project touched (its specs or its objects) → its owners."""
    platform: list[str] | None = None
    """The platform's owners (``platformOwners``) when platform specs changed, else None."""
    widens: list[str] = field(default_factory=list)
    """One sentence per change that widens a tenant's rights."""

    @property
    def empty(self) -> bool:
        return not self.projects and self.platform is None and not self.widens

    def to_dict(self) -> dict[str, Any]:
        return {"projects": [{"name": p, "owners": o} for p, o in self.projects.items()],
                "platform": None if self.platform is None else {"owners": self.platform},
                "widens": list(self.widens)}

    def touches(self, code: bool = False) -> str:
        """``project search (owners: a, b); the platform (owners: c)``; ``code``: names as
        Markdown code (an ``@org/team`` owner would otherwise be notified by every update
        of the comment)."""
        def name(text: str) -> str:
            return f"`{text.replace('`', '')}`" if code else text

        def who(owners: list[str]) -> str:
            return (f" (owners: {', '.join(name(o) for o in owners)})" if owners
                    else " (no owners)")

        parts = [f"project {name(p)}{who(owners)}" for p, owners in self.projects.items()]
        if self.platform is not None:
            parts.append(f"the platform{who(self.platform)}")
        return "; ".join(parts)

    def text(self) -> str:
        """The lines the text format starts with (none when there is nothing to say)."""
        lines = [f"touches: {self.touches()}"] if self.projects or self.platform is not None \
            else []
        lines += [f"WIDENS: {w}" for w in self.widens]
        return "".join(line + "\n" for line in lines) + ("\n" if lines else "")

    def markdown(self) -> str:
        """The block a pull-request comment starts with (after its title)."""
        out = []
        if self.widens:
            out.append("> [!WARNING]\n> **This change widens what tenants may do:**\n"
                       + "".join(f"> - {_md(w)}\n" for w in self.widens))
        if self.projects or self.platform is not None:
            out.append(f"**Touches** {self.touches(code=True)}\n")
        return "\n".join(out)


def _md(text: str) -> str:
    """Plain text in Markdown: no markup, no HTML, no @-mention."""
    for char in "\\`*_[]<>|#~":
        text = text.replace(char, "\\" + char)
    return text.replace("@", "@\u200b")


def review(old: Catalog, new: Catalog, sources: dict[str, str],
           changed_namespaces: Iterable[str]) -> Review:
    """The review of the change from ``old`` to ``new`` (``sources``: the new tree's files,
    for its ``pincompile.yaml``; ``changed_namespaces``: namespaces of changed objects)."""
    result = Review()
    touched: set[str] = set()
    before, after = _specs(old), _specs(new)
    for key in sorted(set(before) | set(after)):
        if before.get(key) == after.get(key):
            continue
        kind, project, name = key
        if kind == Project.KIND:
            touched.add(name)
        elif project:
            touched.add(project)
        else:
            result.platform = list(repo_config(sources)[0].platform_owners)
    by_namespace = {e.resource.namespace: n for c in (old, new) for n, e in c.projects.items()}
    touched.update(by_namespace[ns] for ns in changed_namespaces if ns in by_namespace)
    for name in sorted(touched):
        entry = new.projects.get(name) or old.projects.get(name)
        result.projects[name] = list(entry.resource.spec.owners) if entry is not None else []
    result.widens = [*_policies(old, new), *_levels(old, new), *_relaxed(old, new),
                     *_quotas(old, new), *_sidecars(old, new)]
    return result


def _specs(catalog: Catalog) -> dict[tuple[str, str, str], Any]:
    """Every spec's document as written (key order, comments and style aside), by key."""
    return {e.resource.key: e.doc.data for e in catalog.entries
            if isinstance(e.resource, Workload | PinScaler) or not e.resource.key[1]}


def _policies(old: Catalog, new: Catalog) -> Iterable[str]:
    for name, entry in new.projects.items():
        was = old.projects.get(name)
        policy = entry.resource.spec.policy
        for field_name, info in ProjectPolicy.model_fields.items():
            flag = info.alias or field_name
            if getattr(policy, field_name) is True and (
                    was is None or getattr(was.resource.spec.policy, field_name) is not True):
                yield (f"new Project '{name}' has {flag}: true" if was is None else
                       f"Project '{name}' turns on {flag}")
        before = set(was.resource.spec.policy.allow_capabilities) if was is not None else set()
        added = [c for c in policy.allow_capabilities if c not in before]
        if added:
            yield (f"{'new ' if was is None else ''}Project '{name}' allows containers "
                   f"the capabilities {', '.join(added)} (allowCapabilities)")


def _levels(old: Catalog, new: Catalog) -> Iterable[str]:
    """Project namespaces whose Pod Security level goes down, one line per change."""
    lowered: dict[tuple[str, str], list[str]] = {}
    profile = _profile(new)
    for name, entry in new.projects.items():
        was = old.projects.get(name)
        then: Level = "restricted"
        if was is not None:
            then = namespace_level(was.resource.spec.policy, _profile(old))
        now = namespace_level(entry.resource.spec.policy, profile)
        if LEVELS.index(now) > LEVELS.index(then):
            lowered.setdefault((then, now), []).append(f"'{name}'")
    for (was_level, level), names in sorted(lowered.items()):
        which = f"project {names[0]}" if len(names) == 1 else f"projects {', '.join(names)}"
        yield f"Pod Security enforce {was_level} → {level} in the namespaces of {which}"


#: RuntimeProfile security defaults: (field, its secure value, what relaxing it lets pods do)
_DEFAULTS = (("run_as_non_root", True, "containers may run as root"),
             ("allow_privilege_escalation", False, "processes may gain privileges"),
             ("drop_all_capabilities", True, "containers keep the runtime's capabilities"),
             ("seccomp_profile", "RuntimeDefault", "containers run without a syscall filter"))


def _relaxed(old: Catalog, new: Catalog) -> Iterable[str]:
    then, now = security_defaults(_profile(old)), security_defaults(_profile(new))
    for field_name, secure, means in _DEFAULTS:
        value = getattr(now, field_name)
        if value != secure and getattr(then, field_name) == secure:
            flag = SecurityDefaults.model_fields[field_name].alias or field_name
            yield (f"RuntimeProfile sets security.{flag}: {_yaml(value)}: in every pod of "
                   f"every project {means}")


def _yaml(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _profile(catalog: Catalog) -> Any:
    runtime = catalog.runtime
    return runtime.resource if runtime is not None else None


def _quotas(old: Catalog, new: Catalog) -> Iterable[str]:
    for name, entry in new.projects.items():
        was = old.projects.get(name)
        for tier in TIERS:
            now = getattr(entry.resource.spec.quota, tier) or {}
            then = (getattr(was.resource.spec.quota, tier) or {}) if was is not None else {}
            for resource, amount in sorted(now.items()):
                if _amount(amount) > _amount(then.get(resource, "0")):
                    prior = then.get(resource, "none")
                    yield (f"{'new ' if was is None else ''}Project '{name}' quota {tier} "
                           f"{resource}: {prior} → {amount}")


def _sidecars(old: Catalog, new: Catalog) -> Iterable[str]:
    for name, entry in new.sidecars.items():
        spec = entry.resource.spec
        if spec.inject != "always" or spec.mode != "sidecar":
            continue  # a daemon-mode sidecar runs on nodes, in no tenant's pod
        was = old.sidecars.get(name)
        kinds = ", ".join(spec.applies_to)
        into = f"it goes into every pod ({kinds}) of every project"
        if was is None:
            yield f"PinterestSideCar '{name}' is added with inject: always: {into}"
        elif was.resource.spec.inject != "always":
            yield f"PinterestSideCar '{name}' changes to inject: always: {into}"
        elif was.resource.model_dump(mode="json") != entry.resource.model_dump(mode="json"):
            yield f"PinterestSideCar '{name}' (inject: always) changes: {into}"


def _amount(value: str) -> Decimal:
    try:
        return parse_quantity(value)
    except (ValueError, ArithmeticError):
        return Decimal(0)
