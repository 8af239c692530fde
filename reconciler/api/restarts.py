"""A restart's claim on the host (:class:`reconciler.rollout.restart.Claim`): taken when a
server starts or takes over a restart, renewed while it runs, released when it ends.

Taking is optimistic: the claim is applied with the resource's ``resourceVersion`` as
read, so of two servers claiming the same app at once one gets a 409 and backs off.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kubernetes.dynamic.exceptions import ConflictError

from reconciler.clients import read, write
from reconciler.clients.connect import Connection
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.clock import iso_time as _iso
from reconciler.errors import CLUSTER_ERRORS
from reconciler.host import cr_ref
from reconciler.model import AppKey, Obj
from reconciler.rollout import restart
from reconciler.rollout.restart import Claim

log = logging.getLogger("pincompile.api")


def take(host: Connection, app: AppKey, claim: Claim, cr: Obj) -> bool:
    """Claim the restart on ``cr`` (the app's resource as just read); False when the
    resource changed since (another server claimed it first)."""
    version = str((cr.get("metadata") or {}).get("resourceVersion") or "")
    try:
        write.apply(host, restart.claim_patch(cr_ref(app), claim, version),
                    manager=restart.RESTART_MANAGER)
    except ConflictError:
        return False
    return True


def _still_claimed(host: Connection, app: AppKey, claim: Claim) -> bool:
    """Whether the app's resource still carries ``claim`` (not another server's)."""
    current = restart.claim_of(read.get(host, cr_ref(app)))
    return current is not None and (current.at, current.holder) == (claim.at, claim.holder)


def renew(host: Connection, app: AppKey, claim: Claim, now: float) -> bool:
    """Say the restart still runs here (renewed at epoch ``now``); False when another
    server holds it now."""
    if not _still_claimed(host, app, claim):
        return False
    write.apply(host, restart.claim_patch(cr_ref(app), Claim(
        claim.at, claim.by, claim.holder, _iso(now))), manager=restart.RESTART_MANAGER)
    return True


def release(host: Connection, app: AppKey, claim: Claim) -> None:
    """Drop the claim, if it is still this server's."""
    if _still_claimed(host, app, claim):
        write.apply(host, restart.release_patch(cr_ref(app)),
                    manager=restart.RESTART_MANAGER)


def run_claimed(host: Connection, app: AppKey, claim: Claim,
                work: Callable[[Callable[[], bool]], None],
                every: float = restart.RENEW_SECONDS, clock: Clock = SYSTEM_CLOCK) -> None:
    """``work(claimed)`` with the claim renewed every ``every`` seconds of ``clock`` beside
    it (``claimed()`` turns False once another server holds it), then released."""
    stop, lost = threading.Event(), threading.Event()

    def keep() -> None:
        while not clock.wait_event(stop, every):
            try:
                if not renew(host, app, claim, clock()):
                    lost.set()
                    return
            except CLUSTER_ERRORS as exc:  # the host is away: try again, the claim ages
                log.warning("restart of %s: the claim could not be renewed: %s",
                            "/".join(app), exc)

    renewer = threading.Thread(target=keep, daemon=True, name=f"claim-{'/'.join(app)}")
    renewer.start()
    try:
        work(lambda: not lost.is_set())
    finally:
        stop.set()
        renewer.join()
        if not lost.is_set():
            try:
                release(host, app, claim)
            except CLUSTER_ERRORS as exc:  # it goes stale: a resume finds every zone done
                log.warning("restart of %s: the claim could not be released: %s",
                            "/".join(app), exc)
