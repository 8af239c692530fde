"""A small typed client of the PinCompute API, built from the API's own pydantic models
(what ``pincompile get|logs|events|history`` use). HTTP through urllib3; the bearer token
goes in a header and nowhere else (never in an error message)."""

from __future__ import annotations

import json
import ssl
from collections.abc import Generator, Iterator, Sequence
from contextlib import ExitStack
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import urllib3
from pydantic import BaseModel, TypeAdapter, ValidationError
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Subprotocol

from reconciler.api.exec_protocol import (
    CLOSE,
    RESIZE,
    STATUS,
    STDIN,
    SUBPROTOCOL,
    frame,
    split,
)
from reconciler.api.forward_protocol import SUBPROTOCOL as FORWARD_SUBPROTOCOL
from reconciler.api.models import (
    ActionAnswer,
    AppDetail,
    AppEvent,
    AppList,
    AppRevision,
    AppSummary,
    ObjectList,
    PodList,
    UsageList,
)
from reconciler.api.rotation_models import RotationAnswer

PREFIX = "/api/v1"
M = TypeVar("M")


class ApiError(Exception):
    """The server answered with an error: ``status`` and its ``detail``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ServerUnreachable(Exception):
    """No answer from the server (refused, timed out, not HTTP)."""


class ApiClient:
    """Calls of one server (``https://host:port`` or ``http://...``) with one token."""

    def __init__(self, server: str, token: str | None, *, timeout: float = 15.0,
                 ca_file: str | None = None, insecure: bool = False,
                 in_process: bool = False) -> None:
        self.server = server.rstrip("/")
        self.in_process = in_process
        """The API runs in this process (a command without --server): its failures are
        the clusters', never a server's the user did not start."""
        self._headers = {"Accept": "application/json"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self.timeout, self.ca_file, self.insecure = timeout, ca_file, insecure
        options: dict[str, Any] = {"retries": False}
        if insecure:
            options["cert_reqs"] = "CERT_NONE"
        elif ca_file:
            options["ca_certs"] = ca_file
        self._http = urllib3.PoolManager(**options)

    # -- calls ------------------------------------------------------------------------------
    def apps(self, *, project: str | Sequence[str] | None = None,
             kind: str | Sequence[str] | None = None, phase: str | Sequence[str] | None = None,
             cluster: str | Sequence[str] | None = None, selector: str | None = None,
             most: int = 10_000) -> list[AppSummary]:
        """Every app the caller may list (each page followed), at most ``most``;
        ``selector``: a label selector on the labels of the apps' specs; several values of
        a filter: an app matches one of them."""
        items: list[AppSummary] = []
        params: dict[str, Any] = {"project": project, "kind": kind, "phase": phase,
                                  "cluster": cluster, "selector": selector, "limit": 500}
        while len(items) < most:
            page: AppList = self._get("/apps", AppList, params)
            items += page.items
            if not page.continue_:
                break
            params["continue"] = page.continue_
        return items[:most]

    def app(self, kind: str, project: str, name: str) -> AppDetail:
        return self._get(_app_path(kind, project, name), AppDetail)

    def pods(self, kind: str, project: str, name: str) -> PodList:
        return self._get(_app_path(kind, project, name, "pods"), PodList)

    def objects(self, kind: str, project: str, name: str) -> ObjectList:
        return self._get(_app_path(kind, project, name, "objects"), ObjectList)

    def top(self, kind: str, project: str, name: str) -> UsageList:
        return self._get(_app_path(kind, project, name, "top"), UsageList)

    def events(self, kind: str, project: str, name: str, limit: int = 1000
               ) -> list[AppEvent]:
        return self._get(_app_path(kind, project, name, "events"), list[AppEvent],
                         {"limit": limit})

    def history(self, kind: str, project: str, name: str, limit: int = 1000
                ) -> list[AppRevision]:
        return self._get(_app_path(kind, project, name, "history"), list[AppRevision],
                         {"limit": limit})

    def document(self, path: str, model: type[M], **params: Any) -> M:
        """Another document of the API, read as ``model`` (``/clusters``, ``/projects``)."""
        return self._get(path, model, params)

    def logs(self, kind: str, project: str, name: str, **query: Any
             ) -> Generator[bytes, None, None]:
        """The merged log lines as they come (``follow=True`` keeps them coming)."""
        params = {_camel(k): v for k, v in query.items()}
        response = self._request(_app_path(kind, project, name, "logs"), params,
                                 stream=True)
        try:
            pending = b""
            for chunk in response.stream(4096):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    yield line + b"\n"
            if pending:
                yield pending
        except urllib3.exceptions.HTTPError as exc:
            raise ServerUnreachable(f"{self.server}: the log stream broke "
                                    f"({type(exc).__name__})") from None
        finally:
            response.release_conn()
            response.close()

    def act(self, kind: str, project: str, name: str, action: str) -> ActionAnswer:
        """POST an action (``restart``, ``rollout/pause``, ``rollout/resume``, ``rerun``)."""
        response = self._request(_app_path(kind, project, name, action), {}, method="POST")
        return self._parse(response, ActionAnswer)

    def rotation(self, cluster: str, action: str = "", **params: Any) -> RotationAnswer:
        """A member cluster's rotation: GET it (no ``action``), or POST ``start`` (with
        ``pool``, ``batch``, ``pause``), ``pause`` or ``resume``."""
        path = f"/clusters/{quote(cluster, safe='')}/rotation"
        if action in ("pause", "resume"):
            path += f"/{action}"
        response = self._request(path, params, method="POST" if action else "GET")
        return self._parse(response, RotationAnswer)

    def exec(self, kind: str, project: str, name: str, command: list[str], *,
             container: str | None = None, cluster: str | None = None,
             pod: str | None = None, stdin: bool = False, tty: bool = False) -> ExecSession:
        """Start ``command`` in a container of the app (a WebSocket: docs/api/README.md)."""
        params: dict[str, Any] = {"container": container, "cluster": cluster, "pod": pod,
                                  "stdin": stdin, "tty": tty}
        url = self._ws_url(_app_path(kind, project, name, "exec"), params,
                           [("command", arg) for arg in command])
        try:
            conn = ExitStack().enter_context(connect(  # entered: the non-legacy way
                url, additional_headers=self._ws_headers(),
                subprotocols=[Subprotocol(SUBPROTOCOL)], open_timeout=self.timeout,
                ssl=self._ws_ssl(url), max_size=2**24, user_agent_header="pincompile",
                compression=None))
        except (InvalidStatus, OSError, TimeoutError, WebSocketException) as exc:
            raise self._ws_failure(exc) from None
        return ExecSession(conn)

    def forward_target(self, kind: str, project: str, name: str, port: int | str, *,
                       cluster: str | None = None, pod: str | None = None) -> dict[str, Any]:
        """The pod a port-forward of ``port`` reaches: ``cluster``, ``namespace``, ``pod``
        (chosen as exec chooses) and ``port``, its number (a name looked up in the pod)."""
        pairs = [(k, str(v)) for k, v in (("port", port), ("cluster", cluster), ("pod", pod))
                 if v is not None]
        found = self.call_json(_app_path(kind, project, name, "portforward"), pairs)
        if not isinstance(found, dict) or not {"cluster", "namespace", "pod"} <= set(found) \
                or not isinstance(found.get("port"), int):
            raise ApiError(502, f"{self.server} answered something that is not a target")
        return found

    async def forward(self, kind: str, project: str, name: str, port: int, *,
                      cluster: str, pod: str) -> Any:
        """One connection to ``port`` of the app's pod: an open asyncio WebSocket
        (``websockets.asyncio.client.ClientConnection``; frames: reconciler/api/forward.py)."""
        from websockets.asyncio.client import connect as connect_async

        url = self._ws_url(_app_path(kind, project, name, "portforward"),
                           {"port": port, "cluster": cluster, "pod": pod})
        try:
            return await connect_async(
                url, additional_headers=self._ws_headers(),
                subprotocols=[Subprotocol(FORWARD_SUBPROTOCOL)], open_timeout=self.timeout,
                ssl=self._ws_ssl(url), max_size=2**20, user_agent_header="pincompile",
                compression=None, ping_interval=None)
        except (InvalidStatus, OSError, TimeoutError, WebSocketException) as exc:
            raise self._ws_failure(exc) from None

    def _ws_url(self, path: str, params: dict[str, Any],
                more: Sequence[tuple[str, str]] = ()) -> str:
        query = urlencode([(k, _text(v)) for k, v in params.items() if v is not None]
                          + list(more))
        return "ws" + self.server.removeprefix("http") + PREFIX + path + f"?{query}"

    def _ws_headers(self) -> dict[str, str]:
        return {k: v for k, v in self._headers.items() if k == "Authorization"}

    def _ws_ssl(self, url: str) -> ssl.SSLContext | None:
        if not url.startswith("wss://"):
            return None
        context = ssl.create_default_context(cafile=self.ca_file)
        if self.insecure:
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        return context

    def _ws_failure(self, exc: BaseException) -> ApiError | ServerUnreachable:
        """What a refused or failed WebSocket handshake raises."""
        if isinstance(exc, InvalidStatus):
            return ApiError(exc.response.status_code, _detail(_Answer(exc.response)))
        return ServerUnreachable(f"{self.server}: {_reason(exc)}")

    def call_json(self, path: str, pairs: Sequence[tuple[str, str]] = (), *,
                  method: str = "GET") -> Any:
        """The JSON document a call answers (``pairs``: its query, keys may repeat)."""
        query = urlencode(list(pairs))
        response = self._request(path + (f"?{query}" if query else ""), {}, method=method)
        try:
            return json.loads(response.data)
        except ValueError:
            raise ApiError(502, f"{self.server} answered something that is not JSON") from None

    # -- plumbing ---------------------------------------------------------------------------
    def _get(self, path: str, model: type[M] | Any, params: dict[str, Any] | None = None
             ) -> M:
        return self._parse(self._request(path, params or {}), model)

    def _parse(self, response: Any, model: type[M] | Any) -> M:
        try:
            if isinstance(model, type) and issubclass(model, BaseModel):
                return model.model_validate_json(response.data)  # type: ignore[return-value]
            return TypeAdapter(model).validate_json(response.data)  # type: ignore[no-any-return]
        except ValidationError as exc:
            raise ApiError(502, f"{self.server} answered something that is not the "
                                f"PinCompute API's document: {exc.errors()[0]['msg']}"
                           ) from None

    def _request(self, path: str, params: dict[str, Any], *, stream: bool = False,
                 method: str = "GET") -> Any:
        query = urlencode([(k, _text(item)) for k, v in params.items() if v is not None
                           for item in (v if isinstance(v, list | tuple) else [v])])
        url = f"{self.server}{PREFIX}{path}" + (f"?{query}" if query else "")
        timeout = urllib3.Timeout(connect=min(5.0, self.timeout),
                                  read=None if stream else self.timeout)
        try:
            response = self._http.request(method, url, headers=self._headers, timeout=timeout,
                                          preload_content=not stream, redirect=False)
        except urllib3.exceptions.HTTPError as exc:
            raise ServerUnreachable(f"{self.server}: {_reason(exc)}") from None
        if response.status >= 400:
            raise ApiError(response.status, _detail(response))
        return response


class ExecSession:
    """One exec: :meth:`output` yields stdout and stderr as they come (the pod it runs in
    is :attr:`target` once the first message came); :attr:`exit_code` is the command's
    once it ends (None with :attr:`error` when it did not run to an exit)."""

    def __init__(self, conn: ClientConnection) -> None:
        self.conn = conn
        self.target: dict[str, Any] = {}
        self.exit_code: int | None = None
        self.error = ""

    def output(self) -> Iterator[tuple[int, bytes]]:
        """(channel, bytes) of stdout (1) and stderr (2) until the session ends."""
        try:
            for message in self.conn:
                channel, payload = split(message if isinstance(message, bytes)
                                         else message.encode())
                if channel != STATUS:
                    yield channel, payload
                    continue
                status = json.loads(payload)
                if status.get("type") == "target":
                    self.target = status
                elif status.get("type") == "exit":
                    self.exit_code = int(status["exitCode"])
                else:
                    self.error = f"{status.get('reason')}: {status.get('message')}"
        except (ConnectionClosed, ValueError, KeyError, TypeError) as exc:
            self.error = self.error or f"the session broke: {exc}"
        if self.exit_code is None and not self.error:
            self.error = "the session ended without an exit status"

    def send_stdin(self, data: bytes) -> None:
        self.conn.send(frame(STDIN, data))

    def close_stdin(self) -> None:
        self.conn.send(bytes([CLOSE, STDIN]))

    def resize(self, width: int, height: int) -> None:
        self.conn.send(frame(RESIZE, json.dumps({"Width": width, "Height": height}).encode()))

    def close(self) -> None:
        self.conn.close()


class _Answer:
    """A refused WebSocket handshake's answer, read as :func:`_detail` reads a response."""

    def __init__(self, response: Any) -> None:
        self.data, self.reason = bytes(response.body or b""), response.reason_phrase


def _app_path(kind: str, project: str, name: str, tail: str = "") -> str:
    path = "/apps/" + "/".join(quote(part, safe="") for part in (kind, project, name))
    return f"{path}/{tail}" if tail else path


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(word.capitalize() for word in rest)


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _detail(response: Any) -> str:
    body = response.data if response.data is not None else b""
    try:
        detail = json.loads(body).get("detail")
    except (ValueError, AttributeError):
        detail = None
    if isinstance(detail, list):  # a validation error: where and why
        detail = "; ".join(f"{'.'.join(str(p) for p in d.get('loc', [])[1:])}: {d.get('msg')}"
                           for d in detail if isinstance(d, dict))
    return str(detail or body[:200].decode(errors="replace") or response.reason)


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    return str(reason).split(": ", 1)[-1][:300]
