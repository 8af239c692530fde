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

from bench.console_render import Everyone, Fixed, synthetic  # noqa: E402
from reconciler.api.access import RateLimits  # noqa: E402
from reconciler.api.app import Gateway, create_app  # noqa: E402
from reconciler.console.routes import mount_console  # noqa: E402
from reconciler.console.session import TOKEN_COOKIE  # noqa: E402
from reconciler.store import EventRecord, RevisionRecord, Store  # noqa: E402

OUT = ROOT / "docs" / "images"
APP = ("PinterestService", "ads", "app-00001")


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
        app = create_app(Gateway(apps=Fixed(statuses), store=store, access=Everyone(),
                                 limits=RateLimits(1000, 1000)))
        mount_console(app)
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
            page.goto(base + "/apps/" + "/".join(APP))
            page.screenshot(path=str(OUT / "console-app.png"), full_page=True)
            browser.close()
        server.should_exit = True
        thread.join(10)
        store.close()
    print(f"wrote {OUT / 'console-overview.png'} and {OUT / 'console-app.png'}")


if __name__ == "__main__":
    main()
