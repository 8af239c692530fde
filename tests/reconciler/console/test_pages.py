"""The console's pages without a browser: the session (cookie flags, CSRF, redirects),
what a tenant sees, filters and pages, the app page, escaping and labelled inputs."""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient

from reconciler.console.session import CSRF_COOKIE, SESSION_COOKIE
from reconciler.console.views import Zone, zones_of
from reconciler.store import EventRecord, RevisionRecord, Store
from tests.reconciler.console.conftest import csrf, logged_in

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def app_links(html: str) -> list[str]:
    return re.findall(r'<a id="app-\d+" href="([^"]+)"', html)


def test_a_page_without_a_session_leads_to_the_login_form_and_back(console: TestClient) -> None:
    answer = console.get("/apps/PinApp/shop/cart")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/login?next=%2Fapps%2FPinApp%2Fshop%2Fcart"
    login = console.post("/login", data={"token": "alice-token", "next": "/apps/PinApp/shop/cart",
                                         "csrf": csrf(console)})
    assert (login.status_code, login.headers["location"]) == (303, "/apps/PinApp/shop/cart")
    cookie = next(h for h in login.headers.get_list("set-cookie") if h.startswith(SESSION_COOKIE))
    assert {"HttpOnly", "Secure", "SameSite=strict"} <= {p.strip() for p in cookie.split(";")}
    assert console.get("/apps/PinApp/shop/cart").status_code == 200


def test_a_refused_token_or_a_forged_form_does_not_log_in(console: TestClient) -> None:
    refused = console.post("/login", data={"token": "stolen", "csrf": csrf(console)})
    assert refused.status_code == 401 and "did not accept" in refused.text
    assert SESSION_COOKIE not in refused.headers.get("set-cookie", "")
    forged = console.post("/login", data={"token": "alice-token", "csrf": "x" * 43})
    assert forged.status_code == 403 and SESSION_COOKIE not in console.cookies
    console.cookies.delete(CSRF_COOKIE)
    assert console.post("/login", data={"token": "alice-token", "csrf": ""}).status_code == 403
    other_site = console.post("/login", headers={"Origin": "https://evil.test"},
                              data={"token": "alice-token", "csrf": csrf(console)})
    assert other_site.status_code == 403


def test_login_never_redirects_to_another_site(console: TestClient) -> None:
    for target in ("https://evil.test/", "//evil.test/x", "/\\evil.test", "javascript:x"):
        answer = console.post("/login", data={"token": "alice-token", "next": target,
                                              "csrf": csrf(console)})
        assert answer.headers["location"] == "/", target


def test_logout_needs_the_csrf_token_and_ends_the_session(console: TestClient) -> None:
    logged_in(console)
    assert console.post("/logout", data={"csrf": "forged" * 8}).status_code == 403
    assert console.get("/").status_code == 200
    answer = console.post("/logout", data={"csrf": csrf(console, "/")})
    assert (answer.status_code, answer.headers["location"]) == (303, "/login")
    assert console.get("/").status_code == 303


def test_the_session_cookie_is_no_token_and_is_worth_nothing_after_logout(
        console: TestClient) -> None:
    session = logged_in(console).cookies[SESSION_COOKIE]
    assert "alice-token" not in session
    console.post("/logout", data={"csrf": csrf(console, "/")})
    console.cookies.set(SESSION_COOKIE, session, domain="console.test")  # a copy kept
    assert console.get("/").status_code == 303
    console.cookies.set(SESSION_COOKIE, "alice-token", domain="console.test")
    assert console.get("/").status_code == 303, "the token itself is no session"


def test_the_overview_shows_only_the_tenants_apps_as_a_grid(console: TestClient) -> None:
    page = logged_in(console).get("/").text
    assert "ads/secret" not in page and "123 of 123 apps, page 1 of 3" in page
    headers = re.findall(r'<th scope="col">(\w+)', page[page.index('<table class="grid">'):])
    assert headers == ["App", "Phase", "Ready", "central", "east", "west"]
    assert app_links(page)[:2] == ["/apps/PinApp/shop/cart", "/apps/PinApp/shop/web-000"]
    assert '<td class="phase degraded">Degraded <span class="ready">2/2</span></td>' in page
    assert "1 not healthy" in page  # west: cart is Degraded there


def test_the_overview_shows_each_member_clusters_health_and_failover_state(
        console: TestClient) -> None:
    page = logged_in(console).get("/").text
    table = page[page.index('<table class="members">'):page.index('<p class="summary"')]
    rows = [[c.strip() for c in re.sub(r"<[^>]+>", "|", row).split("|") if c.strip()]
            for row in re.findall(r"<tr>\s*<th scope=\"row\">.*?</tr>", table, re.S)]
    assert rows == [
        ["central", "checking", "-", "Reachable"],
        ["east", "reachable", "3/4", "Reachable",
         "circuit open: 3 of 4 nodes of the cluster are unhealthy"],
        ["west", "unreachable", "connection refused", "-",
         "Lost: unreachable for 310s (grace 300s): connection refused", "2026-11-01T12:00:00Z"]]
    refresh = console.get("/", headers={"HX-Request": "true"}).text  # it refreshes with the grid
    assert refresh.startswith('<section id="grid"') and 'class="failover lost"' in refresh


def test_a_user_who_may_see_no_app_sees_no_member_cluster(console: TestClient) -> None:
    page = logged_in(console, "dave-token").get("/").text
    assert "0 of 0 apps" in page and '<table class="members">' not in page
    for cluster in ("central", "east", "west"):
        assert cluster not in page


def test_filters_search_and_pages_are_applied_on_the_server(console: TestClient) -> None:
    client = logged_in(console)
    assert app_links(client.get("/", params={"phase": "Degraded"}).text) == \
        ["/apps/PinApp/shop/cart"]
    assert app_links(client.get("/", params={"cluster": "west", "phase": "Degraded"}).text) \
        == ["/apps/PinApp/shop/cart"]
    assert app_links(client.get("/", params={"cluster": "east", "phase": "Degraded"}).text) \
        == []
    assert app_links(client.get("/", params={"kind": "PinterestService"}).text) == \
        ["/apps/PinterestService/shop/api"]
    assert len(app_links(client.get("/", params={"q": "WEB-11"}).text)) == 10
    seen: list[str] = []
    for page in (1, 2, 3):
        seen += app_links(client.get("/", params={"page": page}).text)
    assert len(seen) == len(set(seen)) == 123
    last = client.get("/", params={"page": 3, "size": 100, "q": "x" * 5000}).text
    assert "No app matches." in last  # odd values fall back or match nothing, never fail
    assert 'rel="next" href="/?page=2"' in client.get("/").text


def test_a_refresh_gets_only_the_grid(console: TestClient) -> None:
    partial = logged_in(console).get("/", params={"phase": "Degraded"},
                                     headers={"HX-Request": "true"}).text
    assert partial.startswith('<section id="grid"') and "<html" not in partial
    assert 'hx-get="/?phase=Degraded"' in partial
    console.cookies.delete(SESSION_COOKIE)
    expired = console.get("/", headers={"HX-Request": "true"})
    assert (expired.status_code, expired.headers["HX-Redirect"]) == (401, "/login")


def test_the_app_page_has_placement_rollout_events_and_history(console: TestClient,
                                                                store: Store) -> None:
    key = ("PinApp", "shop", "cart")
    store.add_events([EventRecord(app=key, reason="Unhealthy", message="probe failed", uid="u1",
                                  cluster="west", source="kubernetes", warning=True,
                                  object="Pod/shop/cart-1", last_seen=T0)])
    store.add_revision(RevisionRecord(app=key, revision="0123456789abcdef", applied_at=T0,
                                      result="unconverged", commit="f" * 40, author="ann"))
    page = logged_in(console).get("/apps/PinApp/shop/cart").text
    assert re.search(r'<th scope="row">west</th>\s*<td class="phase degraded">Degraded</td>\s*'
                     r'<td>2/2</td>\s*<td><meter[^>]*value="50"', page)
    assert '<li class="zone done">a' in page and '<li class="zone pending">c' in page
    assert ('<li class="zone halted" aria-current="step">b <span class="state">(halted: '
            'zone b unhealthy)</span>') in page and "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "probe failed" in page and "Pod/shop/cart-1" in page and "2026-11-01 12:00:00" in page
    assert "<code>ffffffffffff</code>" in page and "ann" in page and "unconverged" in page


def test_the_app_page_lists_every_pod_across_clusters_and_why_one_restarts(
        console: TestClient) -> None:
    page = logged_in(console).get("/apps/PinApp/shop/cart").text
    rows = [re.sub(r"<[^>]+>", "|", row) for row in
            re.findall(r"<tr>\s*<td>(?:east|west)</td>.*?</tr>", page, re.S)]
    cells = [[c.strip() for c in row.split("|") if c.strip()] for row in rows]
    assert cells == [
        ["east", "cart-7d4-a", "east-n1", "Running", "1/1", "0"],
        ["west", "cart-7d4-b", "west-n2", "Running", "0/1", "4", "main: CrashLoopBackOff",
         "main: OOMKilled (137)"]]
    assert "central: pods cannot be read (not read yet)" in page
    empty = console.get("/apps/PinApp/shop/web-000").text
    assert "No pods in any member cluster." in empty


def test_another_projects_app_is_a_403_page(console: TestClient) -> None:
    client = logged_in(console)
    for path in ("/apps/PinApp/ads/secret", "/apps/PinApp/ads/no-such-app"):
        answer = client.get(path)
        assert answer.status_code == 403 and "alice may not read PinApp apps in project ads" \
            in answer.text
    assert client.get("/apps/PinApp/shop/nope").status_code == 404
    assert client.get("/apps/Secret/shop/x").status_code == 404


class Inputs(HTMLParser):
    """Form controls of a page and the ids its labels point at."""

    def __init__(self) -> None:
        super().__init__()
        self.controls: list[dict[str, str | None]] = []
        self.labelled: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag in ("input", "select", "textarea") and values.get("type") != "hidden":
            self.controls.append(values)
        if tag == "label" and values.get("for"):
            self.labelled.add(str(values["for"]))


def test_every_visible_input_has_a_label(console: TestClient) -> None:
    pages = [console.get("/login").text]
    logged_in(console)
    pages += [console.get("/").text, console.get("/projects/shop").text,
              console.get("/apps/PinApp/shop/cart").text]
    for page in pages:
        parser = Inputs()
        parser.feed(page)
        assert parser.controls or page is pages[-1]
        unlabelled = [c for c in parser.controls
                      if c.get("id") not in parser.labelled and not c.get("aria-label")]
        assert unlabelled == []


def test_pages_forbid_framing_and_foreign_scripts(console: TestClient) -> None:
    headers = console.get("/login").headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert "default-src 'self'" in headers["content-security-policy"]
    assert console.get("/static/htmx.min.js").status_code == 200
    assert "https://" not in console.get("/login").text


def test_every_page_is_audited_with_who_and_result(console: TestClient,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    logged_in(console)
    with caplog.at_level(logging.INFO, logger="pincompile.api.audit"):
        console.get("/")
        console.get("/apps/PinApp/ads/secret")
        console.get("/projects/shop")
        console.get("/projects/ads")
        console.cookies.delete(SESSION_COOKIE)
        console.get("/")
    lines = [json.loads(r.getMessage()) for r in caplog.records]
    assert [(line["user"], line["path"], line["status"]) for line in lines] == [
        ("alice", "/", 200), ("alice", "/apps/PinApp/ads/secret", 403),
        ("alice", "/projects/shop", 200), ("alice", "/projects/ads", 403), (None, "/", 303)]


@pytest.mark.parametrize(("rollout", "gate"), [
    ({"phase": "Progressing", "message": "waiting for b to be healthy"},
     Zone("b", "current", "waiting for b to be healthy")),
    ({"phase": "Progressing", "message": "held", "pausedBy": "ann"},
     Zone("b", "paused", "paused by ann")),
    ({"phase": "Halted", "message": "b unhealthy: 1/3 ready"},
     Zone("b", "halted", "b unhealthy: 1/3 ready")),
])
def test_the_rollout_picture_marks_the_gates_zone_and_says_why(
        rollout: dict[str, str], gate: Zone) -> None:
    zones = zones_of({**rollout, "zones": ["a", "b", "c"], "zoneIndex": 1})
    assert zones == [Zone("a", "done"), gate, Zone("c", "pending")]


def test_a_complete_rollout_is_every_zone_done() -> None:
    zones = zones_of({"phase": "Complete", "zones": ["a", "b"], "zoneIndex": 2})
    assert [z.state for z in zones] == ["done", "done"] and zones_of(None) == []
