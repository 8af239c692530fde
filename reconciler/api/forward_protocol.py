"""What the server (reconciler/api/forward.py) and the client (reconciler/api/client.py,
``pincompile port-forward``) of a forwarded connection share: its channels, its
subprotocol, its limits and which pod it reaches."""

from __future__ import annotations

from dataclasses import dataclass

from .exec_protocol import ExecQuery, ExecTarget, pick_target
from .models import PodList

DATA, ERROR = 0, 1
SUBPROTOCOL = "v1.portforward.pincompute.io"
MEMBER_PROTOCOL = "v4.channel.k8s.io"


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


