"""The member panel without a browser: the nodes carrying a signal (escaped, bounded), and
the rotation buttons — shown to and accepted from whoever the API lets rotate a cluster
(``update`` on ``clusters/rotation``), behind a confirmation with the batch and pause,
CSRF-checked, audited, the outcome on the overview, and the request written on the
Cluster's resource by the API's own code (a host that keeps one Cluster, ``east``)."""

from __future__ import annotations

import logging
import re
from dataclasses import replace

import pytest
from fastapi.testclient import TestClient

from reconciler.console.members import MemberHealth
from reconciler.remediation.summary import Signal, SignalledNode
from reconciler.rotation import plan
from tests.reconciler.console.conftest import MEMBERS, csrf, logged_in
from tests.support.api_fakes import FakeHost


class Members:
    def __init__(self, members: list[MemberHealth]) -> None:
        self.members = members

    def health(self) -> list[MemberHealth]:
        return self.members


def members_are(client: TestClient, *members: MemberHealth) -> None:
    sources = client.app.state.console  # type: ignore[attr-defined]
    client.app.state.console = replace(  # type: ignore[attr-defined]
        sources, members=Members(list(members)))


def may_rotate(client: TestClient, user: str = "alice") -> None:
    client.app.state.gateway.access.grants.add(  # type: ignore[attr-defined]
        (user, "rotate", "Cluster", ""))


def rotation_buttons(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<form class="rotation" method="post" action="([^"]+)">\s*<input '
                      r'type="hidden" name="csrf" value="[^"]+">\s*<button type="submit" '
                      r'id="[^"]+">([^<]+)</button>', html)


@pytest.fixture
def host(console: TestClient, monkeypatch: pytest.MonkeyPatch) -> FakeHost:
    console.app.state.gateway.host = object()  # type: ignore[attr-defined]
    return FakeHost().install(monkeypatch)


def panel(html: str) -> str:
    return html[html.index('<table class="members">'):html.index('<p class="summary"')]


def test_the_panel_lists_each_members_nodes_with_a_signal_escaped_and_bounded(
        console: TestClient) -> None:
    sick = SignalledNode("east-n1", "us-east-1a",
                         (Signal("Ready=False|Unknown", "2026-11-01T10:00:00Z"),
                          Signal("pincompute.io/disk-failing")), True, "drain: draining")
    odd = SignalledNode("<b>n2</b>", '"><script>alert(1)</script>',
                        (Signal("KernelDeadlock=True", "2026-11-01T10:05:00Z"),), False)
    members_are(console, replace(MEMBERS[1], signalled=(sick, odd), signalled_total=27,
                                 care="2 of 30 nodes unhealthy; rotating: 1 of 3 replaced "
                                      "(Waiting: PodDisruptionBudget shop/cart allows no "
                                      "disruption now)"))
    table = panel(logged_in(console).get("/").text)
    assert "<th scope=\"col\">Nodes with a signal</th>" in table
    items = [re.sub(r"<[^>]+>", "", li) for li in re.findall(r"<li>(.*?)</li>", table)]
    assert items == [
        "east-n1 in us-east-1a: Ready=False|Unknown since 2026-11-01T10:00:00Z, "
        "pincompute.io/disk-failing; cordoned; remediation drain: draining",
        "&lt;b&gt;n2&lt;/b&gt; in &#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;: "
        "KernelDeadlock=True since 2026-11-01T10:05:00Z; schedulable"]
    assert "<script>" not in table and "<b>n2" not in table
    assert '<span class="more">and 25 more</span>' in table
    assert "rotating: 1 of 3 replaced (Waiting: PodDisruptionBudget shop/cart allows" in table


def test_whoever_may_rotate_gets_the_button_the_rotation_state_asks_for(
        console: TestClient) -> None:
    idle, running = replace(MEMBERS[1]), replace(MEMBERS[2], rotation_busy="rotation r1 "
                                                             "is Running: 2 of 3 node(s) left")
    paused = replace(MEMBERS[0], rotation_busy="rotation r2 is Paused: 1 of 3 node(s) left",
                     rotation_paused_by="ops")
    members_are(console, paused, idle, running)
    page = logged_in(console).get("/").text
    assert rotation_buttons(page) == [] and "/rotation/" not in page  # alice is a tenant
    may_rotate(console)
    page = console.get("/").text
    assert rotation_buttons(page) == [
        ("/clusters/central/rotation/resume", "Resume rotation…"),
        ("/clusters/east/rotation/start", "Rotate nodes…"),
        ("/clusters/west/rotation/pause", "Pause rotation…")]
    assert "rotation paused by ops" in panel(page)
    refresh = console.get("/", headers={"HX-Request": "true"}).text  # the grid's refresh too
    assert len(rotation_buttons(refresh)) == 3


def test_a_rotation_is_confirmed_with_the_policys_batch_and_pause_then_requested(
        console: TestClient, host: FakeHost, caplog: pytest.LogCaptureFixture) -> None:
    members_are(console, replace(MEMBERS[1], rotation_batch="1", rotation_pause="30s"))
    logged_in(console)
    may_rotate(console)
    token = csrf(console, "/")
    confirm = console.post("/clusters/east/rotation/start", data={"csrf": token})
    assert confirm.status_code == 200
    assert 'Rotate nodes <span class="kind">Cluster</span> east?' in confirm.text
    assert re.search(r'<form class="confirm" method="post" action="/clusters/east/rotation/'
                     r'start">\s*<input type="hidden" name="csrf" value="[^"]+">\s*<input '
                     r'type="hidden" name="confirmed" value="yes">', confirm.text)
    fields = re.findall(r'<label for="f-(\w+)">(\w+)</label>\s*<input id="f-\1" name="\1" '
                        r'value="([^"]*)"', confirm.text)
    assert fields == [("batch", "Batch", "1"), ("pause", "Pause", "30s")]
    assert host.cr["metadata"]["annotations"] == {}  # nothing asked yet

    with caplog.at_level(logging.INFO, logger="pincompile.api.audit"):
        done = console.post("/clusters/east/rotation/start",
                            data={"csrf": token, "confirmed": "yes", "batch": "2",
                                  "pause": "2m"})
    assert done.status_code == 303
    assert re.fullmatch(r"/\?outcome=[\w-]{22}", done.headers["location"])
    assert '"path": "/clusters/east/rotation/start", "status": 303' in caplog.text
    request = plan.parse_request(host.cr["metadata"]["annotations"][plan.REQUEST_ANNOTATION])
    assert request is not None
    assert (request.by, request.pool, request.batch, request.pause) == ("alice", "", 2, "2m")
    shown = console.get(done.headers["location"]).text
    assert re.search(rf'<p class="outcome ok" role="status">Rotate nodes: 202 Accepted — '
                     rf'rotation {request.id} of east requested', shown)
    assert "outcome" not in console.get("/").text.split("<main")[1]
    logged_in(console, "bob-token")  # another user's outcome is not shown to bob
    assert "outcome" not in console.get(done.headers["location"]).text.split("<main")[1]


def test_pause_and_resume_reach_the_apis_code_and_its_refusals_are_shown(
        console: TestClient, host: FakeHost) -> None:
    logged_in(console)
    may_rotate(console)
    token = csrf(console, "/")

    def post(slug: str, **form: str) -> str:
        done = console.post(f"/clusters/east/rotation/{slug}",
                            data={"csrf": token, "confirmed": "yes", **form})
        assert done.status_code == 303
        return console.get(done.headers["location"]).text

    assert "Pause rotation: 409 Conflict — no rotation of east is in progress" in post("pause")
    post("start")  # empty fields: the policy's batch and pause
    request = plan.parse_request(host.cr["metadata"]["annotations"][plan.REQUEST_ANNOTATION])
    assert request is not None and (request.batch, request.pause) == (None, None)
    assert "Pause rotation: 200 OK — rotation paused by alice" in post("pause")
    assert host.cr["metadata"]["annotations"][plan.PAUSED_BY_ANNOTATION] == "alice"
    assert "Resume rotation: 200 OK — rotation resumed by alice" in post("resume")
    assert plan.PAUSED_BY_ANNOTATION not in host.cr["metadata"]["annotations"]
    assert "Rotate nodes: 409 Conflict — rotation" in post("start")
    host.cr["metadata"]["annotations"] = {}  # that one completed: the form's input checked
    assert "Rotate nodes: 422 Unprocessable Entity — batch: &#39;0&#39; is not a whole " \
        "number from 1 to 100" in post("start", batch="0")
    assert "Rotate nodes: 422 Unprocessable Entity — pause: &#39;soon&#39; is not a " \
        "duration" in post("start", pause="soon")
    assert "is longer than 20 characters" in post("start", pause="1" * 30 + "s")
    assert host.cr["metadata"]["annotations"] == {}


def test_a_tenant_or_a_forged_form_is_refused_and_nothing_is_written(
        console: TestClient, host: FakeHost) -> None:
    logged_in(console, "bob-token")
    may_rotate(console)  # alice's grant is not bob's
    assert rotation_buttons(console.get("/").text) == []
    token = csrf(console, "/")
    for slug in ("start", "pause", "resume"):
        for data in ({"csrf": token}, {"csrf": token, "confirmed": "yes"}):
            refused = console.post(f"/clusters/east/rotation/{slug}", data=data)
            assert refused.status_code == 403
            assert "bob may not rotate cluster east" in refused.text
    logged_in(console)
    forged = console.post("/clusters/east/rotation/start",
                          data={"csrf": "f" * 43, "confirmed": "yes"})
    assert forged.status_code == 403 and "CSRF check failed" in forged.text
    other_site = console.post("/clusters/east/rotation/start",
                              headers={"Origin": "https://evil.test"},
                              data={"csrf": token, "confirmed": "yes"})
    assert other_site.status_code == 403
    assert console.post("/clusters/east/rotation/stop", data={"csrf": token}).status_code \
        == 404
    assert host.cr["metadata"]["annotations"] == {}


def test_a_rotation_without_a_session_leads_to_the_login_form(console: TestClient) -> None:
    answer = console.post("/clusters/east/rotation/start",
                          data={"csrf": "x", "confirmed": "yes"})
    assert answer.status_code == 303 and answer.headers["location"].startswith("/login?next=")
