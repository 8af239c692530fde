"""Wires mirror, worker, leader election, HTTP server and signals into one ``serve`` process."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pincompile.contract import Result
from reconciler.clients.connect import Connection
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.serve.audit import AuditSink, EventAudit, JsonLinesAudit
from reconciler.serve.coalesce import Coalescer
from reconciler.serve.documents import AppStatusReader
from reconciler.serve.gateway import open_api
from reconciler.serve.guard import Network
from reconciler.serve.leader import Campaign, Elector, LeaseTiming, Roster, lease_name
from reconciler.serve.metrics import Metrics
from reconciler.serve.mirror import Mirror
from reconciler.serve.nodes import node_care
from reconciler.serve.runner import RunnerFactory
from reconciler.serve.server import HTTPLimits, ServeHTTPServer, WebhookConfig, parse_listen
from reconciler.serve.service import Service, ServiceState
from reconciler.serve.status_access import StatusAccess
from reconciler.serve.webhooks import DEFAULT_REPLAY_WINDOW, Deliveries
from reconciler.slo.serving import SLOService

log = logging.getLogger("pincompile.serve")
LEASE_BASE = "pincompile-serve"


@dataclass
class ServeOptions:
    """Everything ``pincompile serve`` was told (see its --help)."""

    repo: str
    branch: str = "main"
    path: str = ""
    listen: str = "127.0.0.1:8080"
    resync: float = 180.0
    coalesce: float = 1.0
    secret: bytes | None = None
    max_body: int = 2 * 1024 * 1024
    kubeconfig: str | None = None
    host_context: str = "host"
    namespace: str = "default"
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    leader_election: bool = True
    shards: int = 1
    timing: LeaseTiming = field(default_factory=LeaseTiming)
    audit_log: Path | None = None
    events: bool = True
    mirror_dir: Path | None = None
    shutdown_timeout: float = 30.0
    pass_deadline: float = 300.0
    """A pass running longer turns /readyz not ready (the reason in /status)."""
    stuck_after: float = 3600.0
    """A pass running longer is given up: release the Leases and exit (0: never)."""
    app_status: bool = True
    """Serve the apps' stored status (from the host) in ``/status``."""
    status_token: bytes | None = None
    """A bearer token that may read ``/status`` and ``/metrics`` (beside the host's RBAC)."""
    open_status: bool = False
    """``/status`` and ``/metrics`` to anyone who reaches ``listen``."""
    read_timeout: float = 10.0
    """Seconds a client may take to send a request head, or send no byte of a body,
    before its connection is dropped."""
    max_connections: int = 4000
    max_client_connections: int = 200
    """Open connections per client address (the proxies' not counted)."""
    trusted_proxies: tuple[Network, ...] = ()
    """Proxies whose ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are believed."""
    replay_window: float = DEFAULT_REPLAY_WINDOW
    """A webhook delivery seen within this many seconds is refused as a replay."""
    store: str | None = None
    """The insight store's URL (``sqlite:///FILE`` or ``postgresql://...``); ``None``: a
    SQLite file in the cache folder."""
    store_retention: float = 30 * 86400.0
    api_rate: float = 20.0
    """API calls a second per user (bursts of twice that)."""
    remediation: str = "on"
    """on, dry-run (decide and report only) or off: node remediation (docs/operations.md)."""
    nodes_interval: float = 5.0
    """Seconds between rounds of node remediation and rotation."""
    canary: bool = False
    """Probe the member clusters while leading (the policy in ``pincompile.yaml``)."""


def host_connection(kubeconfig: str | None, context: str) -> Connection:
    """The host cluster's connection: the kubeconfig context, or in-cluster config."""
    from kubernetes import client, config

    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST") \
            and not Path(os.path.expanduser(config.KUBE_CONFIG_DEFAULT_LOCATION)).exists():
        configuration = client.Configuration()
        config.load_incluster_config(client_configuration=configuration)
        return Connection("host", context, None, configuration=configuration)
    return Connection("host", context, kubeconfig)


class ServeApp:
    """One ``serve`` process: :meth:`start`, then :meth:`wait` until SIGTERM, then shut down."""

    def __init__(self, options: ServeOptions, runners: RunnerFactory,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.options = options
        self._own_mirror = options.mirror_dir is None
        directory = options.mirror_dir or Path(tempfile.mkdtemp(prefix="pincompile-serve-"))
        self.mirror = Mirror(options.repo, options.branch, directory, options.path)
        self.metrics = Metrics()
        self.host: Connection | None = None
        audits: list[AuditSink] = []
        if options.audit_log is not None:
            audits.append(JsonLinesAudit(options.audit_log))
        needs_host = options.leader_election or options.events
        if needs_host:
            self.host = host_connection(options.kubeconfig, options.host_context)
        if options.events and self.host is not None:
            audits.append(EventAudit(self.host, options.namespace,
                                     lease_name(LEASE_BASE, 0, options.shards),
                                     options.identity))
        self.service = Service(self.mirror, runners, self.metrics, audits,
                               coalescer=Coalescer(options.coalesce, clock=clock),
                               shards=options.shards, resync=options.resync,
                               identity=options.identity, pass_deadline=options.pass_deadline,
                               stuck_after=options.stuck_after, clock=clock)
        self.service.on_stuck = self._give_up
        self.stuck: str | None = None
        """Why this process gave its pass up (None: it did not)."""
        self.campaign: Campaign | None = None
        if options.leader_election and self.host is not None:
            self.service.state = ServiceState(leading=frozenset())
            self.metrics.set_leading(options.shards, frozenset())
            electors = [Elector(lease_name(LEASE_BASE, i, options.shards), options.namespace,
                                options.identity, options.timing, clock=clock)
                        for i in range(options.shards)]
            roster = (Roster(LEASE_BASE, options.namespace, options.identity, options.timing,
                             clock=clock) if options.shards > 1 else None)
            self.campaign = Campaign(self.host, electors,
                                     options.timing, on_change=self.service.set_leading_shards,
                                     on_request=self.service.relayed, roster=roster,
                                     pass_lock=self.service.pass_lock, clock=clock)
            self.service.relay = self.campaign.relay
        self.apps = (AppStatusReader(options.kubeconfig, options.host_context)
                     if options.app_status else None)
        self.served_api = open_api(
            options.kubeconfig, options.host_context, self.mirror, store_url=options.store,
            retention=options.store_retention, rate=options.api_rate, clock=clock,
        ) if options.app_status else None
        self.slo = SLOService(
            self.metrics.registry, self.mirror.current, applied=self._applied,
            kubeconfig=options.kubeconfig,
            identity=options.identity, canary=options.canary, responsible=self.service.probed,
            store=self.served_api.gateway.store if self.served_api else None)
        self.service.pass_observers.append(self.slo.observe_pass)
        if self.served_api is not None:
            collector = self.served_api.collector
            self.service.on_published = lambda report, push: collector.record_pass(
                report.statuses, push=push)
        self.http = ServeHTTPServer(
            parse_listen(options.listen), self.service,
            WebhookConfig(options.secret, options.branch, options.max_body,
                          Deliveries(options.replay_window)),
            self.mirror.url, self.apps,
            status=StatusAccess(open=options.open_status, token=options.status_token),
            limits=HTTPLimits(read_timeout=max(1, round(options.read_timeout)),
                              connections=options.max_connections,
                              per_client=options.max_client_connections,
                              proxies=options.trusted_proxies),
            gateway=self.served_api.gateway if self.served_api else None,
            members=self.served_api.members if self.served_api else None, slo=self.slo)
        self.nodes = node_care(options, self.service, self.metrics.registry) \
            if needs_host else None
        self.shutdown = threading.Event()
        self._stop_campaign = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.http.server_address[:2]
        return str(host), int(port)

    def _applied(self) -> Result | None:
        """The compile of the revision the last successful pass applied (None: none yet,
        or a newer revision was compiled since and not applied)."""
        result = self.mirror.current()
        applied = self.service.state.last_applied
        if result is None or applied is None or applied["revision"] != result.revision:
            return None
        return result

    def start(self) -> None:
        def thread(name: str, target: Any, *args: Any) -> None:
            t = threading.Thread(target=target, args=args, name=name, daemon=True)
            t.start()
            self._threads.append(t)

        thread("http", self.http.serve_forever)
        if self.campaign is not None:
            thread("leader-election", self.campaign.run, self._stop_campaign)
        thread("reconcile", self.service.run)
        self.slo.start()
        if self.nodes is not None:
            thread("nodes", self.nodes.run)

    def install_signal_handlers(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda _s, _f: self.shutdown.set())

    def wait(self) -> None:
        self.shutdown.wait()

    def _give_up(self, reason: str) -> None:
        """A pass that will not end: stop as SIGTERM does, so the Leases go to a standby
        (a thread cannot be cut short; only the process's exit ends its calls)."""
        log.error("%s: giving it up, releasing the Lease and exiting", reason)
        self.stuck = reason
        self.shutdown.set()

    def stop(self) -> bool:
        """Let the pass in flight finish (up to ``shutdown_timeout``), release the Leases,
        stop serving; whether the pass finished in time."""
        deadline = time.monotonic() + self.options.shutdown_timeout
        self.service.stop()
        if self.nodes is not None:
            self.nodes.close()
        worker = next((t for t in self._threads if t.name == "reconcile"), None)
        finished = True
        if worker is not None:
            worker.join(self.options.shutdown_timeout)
            finished = not worker.is_alive()
            if not finished:
                log.warning("the pass in flight did not finish within %.0fs; stopping anyway",
                            self.options.shutdown_timeout)
        self._stop_campaign.set()
        def left() -> float:  # of --shutdown-timeout, for the steps after the pass
            return max(0.1, deadline - time.monotonic())

        for t in self._threads:
            if t.name == "leader-election":
                t.join(min(self.options.timing.renew_deadline, left()))
        if self.campaign is not None:
            released = self.campaign.release()
            if released:
                log.info("released %s", ", ".join(released))
        self.http.shutdown(timeout=min(5.0, left()))
        self.http.server_close()
        if finished:
            self.service.close()
        if self.host is not None:
            self.host.close()
        if self.apps is not None:
            self.apps.close()
        self.slo.close()
        if self.served_api is not None:
            self.served_api.close()
        if self._own_mirror:
            _remove(self.mirror.directory, finished)
        return finished


def _remove(directory: Path, quickly: bool) -> None:
    """Remove the mirror; beside a stuck pass that holds the interpreter, in one ``rm``
    (one file at a time waits for the busy thread at every step: seconds, measured)."""
    if quickly:
        shutil.rmtree(directory, ignore_errors=True)
        return
    try:
        subprocess.run(["rm", "-rf", "--", str(directory)], check=False, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        log.warning("could not remove %s", directory)
