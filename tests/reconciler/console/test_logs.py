"""The app page's logs panel without a browser: who may read logs (the API's logs verb),
what the panel offers, the stream's and the static page's answers and bounds. Lines from
real member API servers are followed in a browser in test_browser_e2e.py."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from reconciler.console.logs import TAIL_DEFAULT, TAIL_MAX, LogFilter
from tests.reconciler.console.conftest import logged_in

CART = "/apps/PinApp/shop/cart"


def test_the_panel_offers_the_apps_clusters_and_containers_and_loads_no_inline_script(
        console: TestClient) -> None:
    page = logged_in(console).get(CART).text
    panel = page[page.index('<section id="logs"'):]
    assert re.findall(r'<option value="(\w+)"', panel)[:3] == ["east", "west", "main"]
    assert f'action="{CART}/logs" data-stream="{CART}/logs/stream"' in panel
    assert '<script src="/static/console-logs.js" defer></script>' in page
    assert not re.search(r"<script(?![^>]*\bsrc=)", page), "an inline script: the CSP blocks it"
    assert console.get("/static/console-logs.js").status_code == 200


def test_logs_need_the_logs_verb_on_the_page_the_stream_and_the_static_view(
        console: TestClient) -> None:
    bob = logged_in(console, "bob-token")
    page = bob.get(CART).text
    assert "bob may not read this app's logs" in page and "console-logs.js" not in page
    stream = bob.get(f"{CART}/logs/stream")
    assert stream.status_code == 403 and stream.headers["content-type"].startswith("text/plain")
    assert "bob may not read the logs of PinApp apps in project shop" in stream.text
    assert bob.get(f"{CART}/logs").status_code == 403
    assert bob.get("/apps/PinApp/ads/secret/logs/stream").status_code == 403


def test_the_stream_merges_the_picked_containers_and_frees_its_slot(console: TestClient) -> None:
    client = logged_in(console)
    answer = client.get(f"{CART}/logs/stream")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    assert "default-src 'self'" in answer.headers["content-security-policy"]
    # the fake members cannot be connected to: each container's stream says so and ends
    assert answer.text.splitlines() == [
        "# east/cart-7d4-a/main: no connection to member cluster east",
        "# west/cart-7d4-b/main: no connection to member cluster west"]
    west = client.get(f"{CART}/logs/stream", params={"cluster": "west"}).text
    assert west.splitlines() == ["# west/cart-7d4-b/main: no connection to member cluster west"]
    nothing = client.get(f"{CART}/logs/stream", params={"container": "sidecar"})
    assert nothing.status_code == 404 and "no container of PinApp/shop/cart matches" in nothing.text
    gateway = console.app.state.gateway  # type: ignore[attr-defined]
    assert gateway.log_streams.open("alice") == 0
    for _ in range(gateway.log_limits.streams_per_user):
        gateway.log_streams.take("alice")
    full = client.get(f"{CART}/logs/stream")
    assert full.status_code == 429 and full.headers["retry-after"] == "5"
    assert client.get("/apps/PinApp/shop/nope/logs/stream").status_code == 404


def test_the_static_view_shows_the_last_lines_with_the_filters_kept(console: TestClient) -> None:
    page = logged_in(console).get(f"{CART}/logs", params={"cluster": "west", "tail": "20"})
    assert page.status_code == 200
    lines = re.search(r'<pre id="log-lines"[^>]*>(.*?)</pre>', page.text, re.S)
    assert lines and lines.group(1).strip() == \
        "# west/cart-7d4-b/main: no connection to member cluster west"
    assert '<option value="west" selected>' in page.text and 'value="20"' in page.text
    assert "1 lines, the last 20 of each container" in page.text


def test_a_filter_is_bounded_and_matches_text_case_insensitively() -> None:
    assert LogFilter.parse({"tail": "x"}).tail == TAIL_DEFAULT
    assert LogFilter.parse({"tail": "99999999999"}).tail == TAIL_MAX
    assert len(LogFilter.parse({"q": "a" * 10_000}).text) == 200
    chosen = LogFilter.parse({"q": "ERROR", "cluster": "west"})
    assert chosen.keeps(b"west/p/main 12:00 error: disk full\n")
    assert not chosen.keeps(b"west/p/main 12:00 all fine\n")
    query = chosen.query(follow=True)
    assert (query.cluster, query.container, query.follow, query.tail_lines) == \
        ("west", None, True, TAIL_DEFAULT)
