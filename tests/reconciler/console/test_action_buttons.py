"""The app page's actions without a browser: which buttons a tenant gets (the kinds each
action is for, the API's verbs), the confirmation step (a POST form, no script), CSRF, the
403 of a tenant without the verb, and the outcome shown on the page with the action's
status (after a redirect, so a reload does not run it again). A restart that runs (202,
its events) is in test_browser_e2e.py."""

from __future__ import annotations

import logging
import re

import pytest
from fastapi.testclient import TestClient

from tests.reconciler.console.conftest import csrf, logged_in

CART = "/apps/PinApp/shop/cart"


def grant(client: TestClient, user: str, *actions: str, kind: str = "PinApp") -> None:
    client.app.state.gateway.access.grants.update(  # type: ignore[attr-defined]
        (user, action, kind, "shop") for action in actions)


def buttons(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<form method="post" action="([^"]+)">\s*<input type="hidden" '
                      r'name="csrf" value="[^"]+">\s*<button type="submit">([^<]+)</button>',
                      html)


def test_a_tenant_gets_the_buttons_of_the_actions_it_may_run_for_the_apps_kind(
        console: TestClient) -> None:
    logged_in(console)
    page = console.get(CART).text
    assert buttons(page) == [] and "may not run this app's actions" in page
    grant(console, "alice", "restart", "rollout", "rerun")
    assert buttons(console.get(CART).text) == [
        (f"{CART}/actions/restart", "Restart…"), (f"{CART}/actions/pause", "Pause rollout…"),
        (f"{CART}/actions/resume", "Resume rollout…")]  # a PinApp runs no Jobs: no rerun
    grant(console, "alice", "restart", "rollout", "rerun", kind="PinScaler")
    scaler = console.get("/apps/PinScaler/shop/search").text  # no action is for a PinScaler
    assert buttons(scaler) == [] and "actions" not in scaler.split("<main")[1]


def test_an_action_asks_for_confirmation_in_a_post_form_then_shows_its_outcome(
        console: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    logged_in(console)
    grant(console, "alice", "restart", "rerun")
    token = csrf(console, CART)
    confirm = console.post(f"{CART}/actions/restart", data={"csrf": token})
    assert confirm.status_code == 200 and "Restart <span class=\"kind\">PinApp</span>" \
        " shop/cart?" in confirm.text
    assert re.search(rf'<form class="confirm" method="post" action="{CART}/actions/restart">'
                     r'\s*<input type="hidden" name="csrf" value="[^"]+">\s*<input '
                     r'type="hidden" name="confirmed" value="yes">', confirm.text)
    assert "<script>" not in confirm.text.split("</head>")[1]

    with caplog.at_level(logging.INFO, logger="pincompile.api.audit"):
        done = console.post(f"{CART}/actions/restart", data={"csrf": token, "confirmed": "yes"})
    assert done.status_code == 303  # to the app page: a reload does not run it again
    assert re.fullmatch(rf"{CART}\?outcome=[\w-]{{22}}", done.headers["location"])
    assert '"path": "/apps/PinApp/shop/cart/actions/restart", "status": 303' in caplog.text
    shown = console.get(done.headers["location"])
    assert shown.status_code == 200  # the API's answer: this gateway has no host cluster
    assert re.search(r'<p class="outcome error" role="status">Restart: 503 Service '
                     r'Unavailable — actions need the host and member clusters', shown.text)
    assert "outcome" not in console.get(CART).text.split("<main")[1]

    refused = console.post(f"{CART}/actions/rerun", data={"csrf": token, "confirmed": "yes"})
    assert "Rerun: 409 Conflict — PinApp cannot be rerun: only a PinterestJobSet or a " \
        "PinterestTrainingJob runs to completion" in console.get(refused.headers["location"]).text
    logged_in(console, "bob-token")  # another user's outcome is not shown to bob
    assert "outcome" not in console.get(refused.headers["location"]).text.split("<main")[1]


def test_an_action_is_refused_without_the_verb_or_the_forms_csrf_value(
        console: TestClient, store: object) -> None:
    logged_in(console, "bob-token")
    grant(console, "alice", "restart", "rollout")  # alice's grant is not bob's
    token = csrf(console, CART)
    for slug, verb in (("restart", "restart"), ("pause", "rollout"), ("resume", "rollout")):
        for data in ({"csrf": token}, {"csrf": token, "confirmed": "yes"}):
            refused = console.post(f"{CART}/actions/{slug}", data=data)
            assert refused.status_code == 403
            assert f"bob may not {verb} PinApp in project shop" in refused.text
    logged_in(console)
    forged = console.post(f"{CART}/actions/restart", data={"csrf": "f" * 43, "confirmed": "yes"})
    assert forged.status_code == 403 and "CSRF check failed" in forged.text
    other_site = console.post(f"{CART}/actions/restart", headers={"Origin": "https://evil.test"},
                              data={"csrf": token, "confirmed": "yes"})
    assert other_site.status_code == 403
    assert console.post(f"{CART}/actions/scale", data={"csrf": token}).status_code == 404


def test_an_action_without_a_session_leads_to_the_login_form(console: TestClient) -> None:
    answer = console.post(f"{CART}/actions/restart", data={"csrf": "x", "confirmed": "yes"})
    assert answer.status_code == 303 and answer.headers["location"].startswith("/login?next=")


def test_an_overfull_or_oversized_form_is_refused_as_forged_not_failed(
        console: TestClient) -> None:
    logged_in(console)
    grant(console, "alice", "restart")
    token = csrf(console, CART)
    form = {"content-type": "application/x-www-form-urlencoded"}

    def post(body: str) -> tuple[int, str]:
        answer = console.post(f"{CART}/actions/restart", content=body, headers=form)
        return answer.status_code, answer.text

    overfull = "&".join([f"csrf={token}", "confirmed=yes", *(f"f{i}=x" for i in range(30))])
    status, text = post(overfull)
    assert status == 403 and "CSRF check failed" in text
    status, _ = post(f"csrf={token}&confirmed=yes&pad=" + "x" * 200_000)
    assert status == 303  # its first 32 KiB read: a form, confirmed
    status, text = post("pad=" + "x" * 40_000 + f"&csrf={token}&confirmed=yes")
    assert status == 403 and "CSRF check failed" in text  # past the bytes read
