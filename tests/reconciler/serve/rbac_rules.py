"""The RBAC manifests in ``contrib/serve/`` as data: which requests they allow, the way the
API server's RBAC authorizer matches them (verbs, API groups, resources incl.
``resource/subresource``, resource names; a ClusterRole bound cluster-wide applies in every
namespace, a Role only in its own)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from reconciler.clients.record import AccessRequest

CONTRIB = Path(__file__).resolve().parents[3] / "contrib" / "serve"
SERVICE_ACCOUNT = ("pincompile-serve", "pincompile-serve")
"""(namespace, name) of the ServiceAccount the shipped roles are bound to."""
#: Verbs the authorizer checks while handling another request, never requested themselves.
CHECK_ONLY_VERBS = frozenset({"bind", "escalate", "impersonate"})


@dataclass(frozen=True)
class Grant:
    """One rule of a bound role; ``namespace`` None: cluster-wide."""

    role: str
    index: int
    rule: dict[str, Any]
    namespace: str | None

    def allows(self, request: AccessRequest) -> bool:
        rule = self.rule
        if not request.resource:
            return False
        if self.namespace is not None and request.namespace != self.namespace:
            return False
        resource = request.resource + (f"/{request.subresource}" if request.subresource else "")
        return (_match(rule.get("verbs"), request.verb)
                and _match(rule.get("apiGroups"), request.group)
                and _match(rule.get("resources"), resource)
                and (not rule.get("resourceNames") or request.name in rule["resourceNames"]))

    def pairs(self) -> list[tuple[str, str, str]]:
        """(verb, group, resource) combinations the rule grants."""
        return [(v, g, r) for v in self.rule["verbs"] for g in self.rule["apiGroups"]
                for r in self.rule["resources"]]


def _match(allowed: list[str] | None, value: str) -> bool:
    return bool(allowed) and ("*" in allowed or value in allowed)  # type: ignore[operator]


def documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((CONTRIB / name).read_text()) if d]


def grants(name: str) -> list[Grant]:
    """The rules of ``contrib/serve/<name>`` bound to serve's ServiceAccount."""
    docs = documents(name)
    roles = {(d["kind"], (d["metadata"].get("namespace")), d["metadata"]["name"]): d
             for d in docs if d["kind"] in ("Role", "ClusterRole")}
    out: list[Grant] = []
    for binding in docs:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(s["kind"] == "ServiceAccount"
                   and (s["namespace"], s["name"]) == SERVICE_ACCOUNT
                   for s in binding["subjects"]):
            continue
        namespace = binding["metadata"].get("namespace")
        ref = binding["roleRef"]
        role = roles[(ref["kind"], namespace if ref["kind"] == "Role" else None, ref["name"])]
        for index, rule in enumerate(role["rules"]):
            out.append(Grant(ref["name"], index, rule, namespace))
    return out


def allowed(rules: list[Grant], request: AccessRequest) -> bool:
    """Whether the rules allow ``request``; non-resource requests (discovery, /version) are
    what the built-in ``system:discovery`` role gives every authenticated user."""
    if not request.resource:
        return request.verb == "get" and (request.path in ("/api", "/apis", "/version")
                                          or request.path.startswith(("/api/", "/apis/")))
    return any(g.allows(request) for g in rules)
