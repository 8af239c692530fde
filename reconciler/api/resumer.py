"""Restarts left by a server that stopped: every ``every`` seconds, each app whose restart
claim has not been renewed for :data:`~reconciler.rollout.restart.STALE_SECONDS` is taken
over by this server (:func:`reconciler.api.actions.resume_restart`). Both times are read
on the clock of the gateway's :class:`~reconciler.api.actions.Operations`."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Protocol

from fastapi import HTTPException

from reconciler.api.actions import ActionGateway, resume_restart
from reconciler.errors import CLUSTER_ERRORS, explain
from reconciler.model import AppKey
from reconciler.rollout import restart

log = logging.getLogger("pincompile.api")


class Annotated(Protocol):
    """The host's app resources' annotations (:class:`reconciler.api.sources.HostApps`)."""

    def annotated(self, key: str) -> Mapping[AppKey, Mapping[str, str]]: ...


class RestartResumer:
    """Looks for restarts to take over in a thread of its own until :meth:`close`."""

    def __init__(self, gateway: ActionGateway, apps: Annotated, every: float = 15.0) -> None:
        self.gateway, self.apps, self.every = gateway, apps, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="restart-resumer")

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self.gateway.operations.clock.wait_event(self._stop, self.every):
            try:
                self.scan()
            except Exception:  # a bug must not end the scans for good: logged, tried again
                log.exception("looking for restarts to take over failed")

    def scan(self) -> list[AppKey]:
        """Take over every stale restart claim not running here; the apps taken over."""
        taken = []
        for app, noted in self.apps.annotated(restart.CLAIM_AT).items():
            claim = restart.claim_of({"metadata": {"annotations": noted}})
            if claim is None or not restart.stale(claim, self.gateway.operations.clock()) \
                    or self.gateway.operations.running(app):
                continue
            try:
                resume_restart(self.gateway, app, claim)
            except HTTPException as exc:
                log.info("restart of %s not taken over: %s", "/".join(app), exc.detail)
                continue
            except CLUSTER_ERRORS as exc:
                log.warning("restart of %s not taken over: %s", "/".join(app), explain(exc))
                continue
            taken.append(app)
        return taken

    def close(self) -> None:
        self._stop.set()
