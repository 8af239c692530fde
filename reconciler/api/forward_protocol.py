"""What the server (reconciler/api/forward.py) and the client (reconciler/api/client.py,
``pincompile port-forward``) of a forwarded connection share: its channels, its
subprotocol, its limits and which pod it reaches."""

from __future__ import annotations

from dataclasses import dataclass

from .exec_protocol import ExecQuery, ExecTarget, NotFound, pick_target
from .models import PodList

DATA, ERROR = 0, 1
SUBPROTOCOL = "v1.portforward.pincompute.io"
MEMBER_PROTOCOL = "v4.channel.k8s.io"
PORT_PATTERN = r"^([0-9]{1,5}|[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?)$"
"""A port number, or a port's name as Kubernetes allows it (an IANA service name: at
most 15 lowercase letters, digits and inner hyphens)."""


@dataclass(frozen=True)
class ForwardLimits:
    connections_per_user: int = 32
    """Forwarded connections a user may have open at once (every client's)."""
    idle_seconds: float = 900.0
    """No byte either way for this long ends a connection."""
    seconds: float = 12 * 3600.0
    message_bytes: int = 64 * 1024
    """The largest message a client may send."""
    connect_seconds: float = 10.0
    """How long the member API server has to accept the port-forward."""


def pick_pod(pods: PodList, cluster: str | None, pod: str | None) -> ExecTarget:
    """The pod ``exec`` would run in (:func:`~.exec_protocol.pick_target`: the app's
    first Running pod, ready ones first, in ``cluster``; ``pod`` if named); NotFound,
    NoRunningPod otherwise."""
    return pick_target(pods, ExecQuery((), None, cluster, pod))


def port_number(pods: PodList, target: ExecTarget, port: str) -> int:
    """``port`` as a number: itself, or the TCP port its name names among the ports the
    target pod's containers declare (as kubectl resolves ``http``); ValueError for a
    number out of range, NotFound for a name no container declares."""
    if port.isdigit():
        if not 1 <= int(port) <= 65535:
            raise ValueError(f"port {port}: give 1 to 65535 or a port's name")
        return int(port)
    pod = next(p for p in pods.items if (p.cluster, p.name) == (target.cluster, target.pod))
    declared = [(c.name, q) for c in pod.containers for q in c.ports]
    for _, declared_port in declared:
        if declared_port.name == port and declared_port.protocol == "TCP":
            return declared_port.containerPort
    named = ", ".join(sorted(f"{q.name} ({c} {q.containerPort})" for c, q in declared
                             if q.name)) or "none"
    raise NotFound(f"pod {target.pod} has no TCP port named {port} (its named ports: "
                   f"{named})")
