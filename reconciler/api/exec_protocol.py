"""The frames of ``.../exec`` (a WebSocket) and which container a session runs in.

Every message is binary; its first byte is the channel, as in Kubernetes'
``v5.channel.k8s.io``: 0 stdin, 1 stdout, 2 stderr, 3 status (JSON), 4 resize (JSON
``{"Width": W, "Height": H}``), 255 close (``[255, 0]``: stdin ended). The server's first
message is a status ``{"type": "target", ...}`` naming the pod; its last is a status
``{"type": "exit", "exitCode": N}`` or ``{"type": "error", "message": ...}``. Shared by the
server (reconciler/api/exec.py) and the client (reconciler/api/client.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .models import PodList

STDIN, STDOUT, STDERR, STATUS, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
SUBPROTOCOL = "v1.exec.pincompute.io"


@dataclass(frozen=True)
class ExecLimits:
    sessions_per_user: int = 4
    idle_seconds: float = 900.0
    """No byte either way for this long ends a session."""
    seconds: float = 3600.0
    message_bytes: int = 64 * 1024
    """The largest message a client may send."""
    command_bytes: int = 16 * 1024
    connect_seconds: float = 10.0
    """How long the member API server has to accept the exec."""


@dataclass(frozen=True)
class ExecQuery:
    command: tuple[str, ...]
    container: str | None = None
    cluster: str | None = None
    pod: str | None = None
    stdin: bool = False
    tty: bool = False


@dataclass(frozen=True)
class ExecTarget:
    cluster: str
    namespace: str
    pod: str
    container: str

    def document(self) -> dict[str, str]:
        return {"cluster": self.cluster, "namespace": self.namespace, "pod": self.pod,
                "container": self.container}


class NotFound(LookupError):
    """No pod or container of that name (404)."""


class NoRunningPod(LookupError):
    """The app has pods matching, none of them Running (409)."""


def pick_target(pods: PodList, query: ExecQuery) -> ExecTarget:
    """The container ``query`` names (a sidecar or an init container too), or the first of
    the spec's containers, in the app's first Running pod (ready pods first, then by
    cluster and name) in ``query``'s cluster."""
    matching = [p for p in pods.items if (query.cluster is None or p.cluster == query.cluster)
                and (query.pod is None or p.name == query.pod)]
    if not matching:
        where = f" named {query.pod}" if query.pod else ""
        where += f" in cluster {query.cluster}" if query.cluster else ""
        raise NotFound(f"no pod{where}")
    running = [p for p in matching if p.phase == "Running"]
    if not running:
        phases = ", ".join(sorted({f"{p.phase}" for p in matching}))
        raise NoRunningPod(f"no Running pod: {len(matching)} pod(s), {phases}")
    running.sort(key=lambda p: (p.ready.split("/")[0] != p.ready.split("/")[-1], p.cluster,
                                p.name))
    ended = None
    for pod in running:
        if query.container is None:
            own = [c.name for c in pod.containers if c.type == "container"]
            if own:
                return ExecTarget(pod.cluster, pod.namespace, pod.name, own[0])
            continue
        found = next((c for c in pod.containers if c.name == query.container), None)
        if found is not None and (found.type != "init" or found.state == "Running"):
            return ExecTarget(pod.cluster, pod.namespace, pod.name, found.name)
        ended = ended or found
    if ended is not None:
        raise NotFound(f"container {ended.name} is an init container that has ended "
                       f"({ended.reason or ended.state}): nothing runs in it to exec into")
    known = sorted({c.name for p in running for c in p.containers})
    raise NotFound(f"no container {query.container} in the Running pods (they have: "
                   f"{', '.join(known)})")


def check_command(command: tuple[str, ...], limits: ExecLimits) -> None:
    """ValueError for an empty command or one over ``limits.command_bytes``."""
    if not command or not command[0]:
        raise ValueError("command: give the command to run, e.g. command=sh&command=-c&...")
    if sum(len(arg.encode()) + 1 for arg in command) > limits.command_bytes:
        raise ValueError(f"command: over {limits.command_bytes} bytes")


def frame(channel: int, payload: bytes) -> bytes:
    return bytes([channel]) + payload


def status_frame(document: dict[str, Any]) -> bytes:
    return frame(STATUS, json.dumps(document).encode())


def split(message: bytes) -> tuple[int, bytes]:
    """A message's channel and payload; ValueError for an empty message."""
    if not message:
        raise ValueError("an empty message has no channel")
    return message[0], message[1:]


def exit_status(status: bytes) -> tuple[int | None, str]:
    """The exit code and message of the Kubernetes Status the API server sends on channel
    3 when the command ends (None: it did not run to an exit code)."""
    try:
        document = json.loads(status)
    except ValueError:
        return None, status.decode(errors="replace")[:500]
    if not isinstance(document, dict):
        return None, str(document)[:500]
    if document.get("status") == "Success":
        return 0, ""
    message = str(document.get("message") or "the command failed")[:500]
    for cause in (document.get("details") or {}).get("causes") or []:
        if isinstance(cause, dict) and cause.get("reason") == "ExitCode":
            try:
                return int(str(cause.get("message"))), message
            except (TypeError, ValueError):
                break
    ended = _GO_EXIT.search(message)  # a runtime that reports Go's error text, no cause
    return (int(ended[1]), message) if ended else (None, message)


_GO_EXIT = re.compile(r"\bexit status (\d{1,3})\s*$")
