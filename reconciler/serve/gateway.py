"""The PinCompute API inside ``serve``: a watch of the host's apps, access checks on the
host, the insight store and the collector that feeds it."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from pincompile.contract import GitError, cache_root
from reconciler.api.access import HostAccess, RateLimits
from reconciler.api.actions import Operations
from reconciler.api.app import Gateway
from reconciler.api.pods import MemberPods
from reconciler.api.resumer import RestartResumer
from reconciler.api.sources import HostApps
from reconciler.clients.connect import ClusterUnreachable, Connection, KubeconfigError
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.console.members import MemberClusters
from reconciler.insight.live import WatchedInsight
from reconciler.insight.sampler import UsageSampler
from reconciler.serve.mirror import Mirror
from reconciler.status.live import member_contexts
from reconciler.store import Store
from reconciler.store.collect import HostCollector

log = logging.getLogger("pincompile.serve.api")


def default_store_url() -> str:
    """SQLite in the cache folder (``$PINCOMPILE_CACHE``, else ``$XDG_CACHE_HOME/pincompile``,
    else ``~/.cache/pincompile``)."""
    return f"sqlite:///{cache_root() / 'insight.db'}"


@dataclass
class ServedAPI:
    gateway: Gateway
    collector: HostCollector
    apps: HostApps
    pods: MemberPods
    members: MemberClusters
    """The member clusters' health for the console's overview."""
    resumer: RestartResumer
    """Takes over restarts whose server stopped."""
    insight: WatchedInsight
    sampler: UsageSampler
    """Samples the apps' requests and usage for cost and forecasts."""

    def close(self) -> None:
        self.sampler.close()
        self.insight.close()
        self.resumer.close()
        self.collector.close()
        self.apps.close()
        self.pods.close()
        self.members.close()
        self.gateway.store.close()


def open_api(kubeconfig: str | None, context: str, mirror: Mirror, *, store_url: str | None,
             retention: float, rate: float, clock: Clock = SYSTEM_CLOCK) -> ServedAPI | None:
    """The API's parts, started; ``None`` (the API answers 503) when the host cannot be
    read now. A store that cannot be opened is an error (``StoreError``). ``clock``: what
    the restarts' claims and the rollout pauses are stamped and aged by."""
    from datetime import timedelta

    try:
        host = Connection("host", context, kubeconfig)
        apps = HostApps(host)
    except (ClusterUnreachable, KubeconfigError) as exc:
        log.warning("the API is off: the host cluster cannot be read (%s)", exc)
        return None
    try:
        store = Store.open(store_url or default_store_url(),
                           retention=timedelta(seconds=retention))
    except Exception:
        apps.close()
        raise

    authors: dict[str, str] = {}
    authors_lock = threading.Lock()

    def author_of(commit: str) -> str:
        """One ``git log`` per commit, not per app (a first pass at 1,000 apps asked 1,000
        times for the same few commits); the most recent 4,096 are kept."""
        with authors_lock:
            known = authors.get(commit)
        if known is not None:
            return known
        try:
            author = mirror.commit(commit).author
        except GitError:  # a commit the mirror does not have (yet): ask again later
            return ""
        with authors_lock:
            if len(authors) >= 4096:
                authors.pop(next(iter(authors)))
            authors[commit] = author
        return author

    pods = MemberPods(kubeconfig, lambda: member_contexts(host))
    collector = HostCollector(host, store, apps.statuses, author_of=author_of, members=pods)
    collector.start()
    insight = WatchedInsight(host, kubeconfig)
    gateway = Gateway(apps=apps, store=store, access=HostAccess(host), host=host,
                      limits=RateLimits(rate, max(1, round(rate * 2))), pods=pods,
                      insight=insight, operations=Operations(clock=clock))
    resumer = RestartResumer(gateway, apps)
    resumer.start()
    sampler = UsageSampler(insight, store)
    sampler.start()
    return ServedAPI(gateway, collector, apps, pods, MemberClusters(host, kubeconfig), resumer,
                     insight, sampler)
