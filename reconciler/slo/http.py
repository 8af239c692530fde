"""The API's availability and latency SLI, measured in front of the ASGI app: each HTTP call
under ``/api/v1`` counted by route group and status class, timed to the start of its
answer (a stream's first byte). A call that fails without an answer counts as a 500.
WebSocket sessions (exec) are not counted."""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reconciler.slo.sli import SLIs, route_group


class MeasuredAPI:
    """ASGI middleware recording :meth:`SLIs.api` for every API call."""

    def __init__(self, app: ASGIApp, slis: SLIs) -> None:
        self.app, self.slis = app, slis

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        group = route_group(scope.get("path", "")) if scope["type"] == "http" else None
        if group is None:
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        answered = False

        async def sending(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.start" and not answered:
                answered = True
                self.slis.api(group, int(message["status"]), time.perf_counter() - start)
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except BaseException:
            if not answered:
                self.slis.api(group, 500, time.perf_counter() - start)
            raise
