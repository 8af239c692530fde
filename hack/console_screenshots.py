"""Regenerate the console's screenshots in docs/images/ (``make screenshots``): the console
on synthetic statuses (bench/console_render.py's), photographed by Debian's chromium."""

from __future__ import annotations

import shutil
import socket
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import uvicorn
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.console_render import Everyone, Fixed, Members, synthetic  # noqa: E402
from reconciler.api.access import RateLimits  # noqa: E402
from reconciler.api.app import Gateway, create_app  # noqa: E402
from reconciler.api.models import PodList  # noqa: E402
from reconciler.api.pods import pod_summary  # noqa: E402
from reconciler.clients.connect import Connection  # noqa: E402
from reconciler.console.routes import mount_console  # noqa: E402
from reconciler.console.session import TOKEN_COOKIE  # noqa: E402
from reconciler.store import EventRecord, RevisionRecord, ScaleSample, Store  # noqa: E402

OUT = ROOT / "docs" / "images"
APP = ("PinterestService", "ads", "app-00001")
SCALER = ("PinScaler", "ads", "search-api")
NOW = datetime.now(UTC).replace(second=0, microsecond=0)


class Pods:
    """The app's pods: three in each cluster, one backing off in rt-b (no member cluster
    to read logs from: the app page is photographed with JavaScript off)."""

    def pods(self, app: tuple[str, str, str], clusters: object) -> PodList:
        items = []
        for cluster in ("rt-a", "rt-b", "rt-c"):
            for i in range(3):
                backing_off = cluster == "rt-b" and i == 2
                state = {"waiting": {"reason": "CrashLoopBackOff"}} if backing_off \
                    else {"running": {}}
                last = {"terminated": {"reason": "OOMKilled", "exitCode": 137}} \
                    if backing_off else {}
                items.append(pod_summary(cluster, {
                    "metadata": {"name": f"app-00001-7d9f-{cluster[-1]}{i}",
                                 "namespace": "ads"},
                    "spec": {"nodeName": f"{cluster}-general-{i}",
                             "containers": [{"name": "main", "image": "ads/app:4f2c9e1"}]},
                    "status": {"phase": "Running", "containerStatuses": [{
                        "name": "main", "ready": not backing_off,
                        "restartCount": 4 if backing_off else 0, "state": state,
                        "lastState": last}]}}))
        return PodList(items=items if app == APP else [])

    def connection(self, cluster: str) -> Connection | None:
        return None


def seed(store: Store) -> None:
    now = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
    store.add_events([
        EventRecord(app=APP, reason="Applied", message="revision 4f2c9e1 applied to 6 clusters",
                    uid="s1", last_seen=now),
        EventRecord(app=APP, reason="BackOff", message="Back-off restarting failed container",
                    uid="s2", cluster="rt-b", source="kubernetes", warning=True,
                    object="Pod/ads/app-00001-7d9f-x2", count=4,
                    last_seen=now + timedelta(minutes=3)),
        EventRecord(app=APP, reason="BecameDegraded", message="1 of 3 pods not ready in rt-b",
                    uid="s3", warning=True, last_seen=now + timedelta(minutes=4))])
    for i, result in enumerate(("converged", "converged", "unconverged")):
        store.add_revision(RevisionRecord(app=APP, revision=f"{i}f2c9e1a7b3d", result=result,
                                          applied_at=now - timedelta(hours=2 - i),
                                          commit=f"{i}f2c9e1a7b3d" * 3, author="ann"))
    # a PinScaler through a morning peak: the floor raised by a schedule, then load
    steps = [(-360, 4, 4, 4), (-300, 6, 5, 4), (-290, 6, 6, 4), (-200, 10, 8, 8),
             (-190, 12, 12, 8), (-120, 9, 9, 8), (-60, 6, 6, 4), (-30, 5, 5, 4)]
    store.add_samples([ScaleSample(SCALER, NOW + timedelta(minutes=m), d, r, f)
                       for m, d, r, f in steps])


def main() -> None:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    statuses = synthetic(1000, 6, seed=1)
    # the app the page shows: its rollout halted in the zone of rt-b, where a pod backs off
    clusters = [{**c, "phase": "Healthy", "readyReplicas": 3, "replicas": 3, "message": ""}
                for c in statuses[APP]["clusters"]]
    clusters[1] = {**clusters[1], "phase": "Degraded", "readyReplicas": 2,
                   "message": "1 of 3 pods not ready"}
    statuses[APP] = {**statuses[APP], "phase": "Degraded", "ready": "17/18",
                     "message": "rt-b: 1 of 3 pods not ready", "clusters": clusters,
                     "rollout": {"phase": "Halted", "message": "zone use1b: 1 of 3 pods not ready",
                                 "zones": ["use1a", "use1b", "use1c"], "zoneIndex": 1}}
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(f"sqlite:///{tmp}/insight.db")
        seed(store)
        statuses[SCALER] = {"phase": "Healthy", "ready": "5/5", "replicas": 5,
                            "readyReplicas": 5, "floor": 4, "clusters": [
                                {"name": c, "phase": "Healthy", "replicas": n, "readyReplicas": n}
                                for c, n in (("rt-a", 2), ("rt-b", 2), ("rt-c", 1))]}
        app = create_app(Gateway(apps=Fixed(statuses), store=store, access=Everyone(),
                                 limits=RateLimits(1000, 1000), pods=Pods()))
        mount_console(app, members=Members(6),
                      repo="https://git.example.com/platform/specs.git")
        sock = socket.create_server(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        OUT.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            context.add_cookies([{"name": TOKEN_COOKIE, "value": "docs", "url": base}])
            page = context.new_page()
            page.goto(base + "/?project=ads")
            page.screenshot(path=str(OUT / "console-overview.png"))
            static = browser.new_context(viewport={"width": 1280, "height": 800},
                                         java_script_enabled=False)
            static.add_cookies([{"name": TOKEN_COOKIE, "value": "docs", "url": base}])
            still = static.new_page()
            still.goto(base + "/apps/" + "/".join(APP))
            still.screenshot(path=str(OUT / "console-app.png"), full_page=True)
            still.goto(base + "/apps/" + "/".join(SCALER))
            still.locator("figure.chart").screenshot(path=str(OUT / "console-scaling.png"))
            browser.close()
        server.should_exit = True
        thread.join(10)
        store.close()
    print(f"wrote {OUT / 'console-overview.png'}, {OUT / 'console-app.png'} and "
          f"{OUT / 'console-scaling.png'}")


if __name__ == "__main__":
    main()
