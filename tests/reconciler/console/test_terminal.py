"""The app page's terminal without a browser: the page offers it per Running pod to a
tenant with the exec verb (a static script, no inline one; styles only may be inline
there, for xterm.js), and its WebSocket handshake is refused (an HTTP answer, audited)
from another site, without the page's CSRF value, without a session, and to a tenant
without ``create <kind>s/exec``; an allowed one reaches the API's exec session code. A
shell that runs (``echo hi``) is in test_browser_e2e.py."""

from __future__ import annotations

import logging
import re

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketDenialResponse

from reconciler.console.session import CSRF_COOKIE
from tests.reconciler.console.conftest import csrf, logged_in
from tests.reconciler.console.test_action_buttons import CART, grant

SOCKET = f"{CART}/terminal"
SITE = "https://console.test"


def refusal(client: TestClient, query: str, origin: str | None = SITE) -> tuple[int, str]:
    headers = {"origin": origin} if origin else {}
    with pytest.raises(WebSocketDenialResponse) as refused, \
            client.websocket_connect(f"wss://console.test{SOCKET}?{query}", headers=headers):
        pass
    return refused.value.status_code, refused.value.json()["detail"]


def test_the_pods_get_a_terminal_button_only_for_a_tenant_who_may_exec(
        console: TestClient) -> None:
    logged_in(console)
    without = console.get(CART)
    assert "terminal-open" not in without.text and 'id="terminal"' not in without.text
    assert "'unsafe-inline'" not in without.headers["content-security-policy"]
    grant(console, "alice", "exec")
    page = console.get(CART)
    assert re.findall(r'class="terminal-open" data-cluster="(\w+)" data-pod="([\w-]+)"',
                      page.text) == [("east", "cart-7d4-a"), ("west", "cart-7d4-b")]
    assert f'data-socket="{SOCKET}" data-csrf="{console.cookies[CSRF_COOKIE]}"' in page.text
    scripts = re.findall(r"<script([^>]*)>", page.text)
    assert all('src="/static/' in attributes for attributes in scripts)
    assert 'src="/static/xterm.js"' in page.text and "<noscript>" in page.text
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "style-src 'self' 'unsafe-inline'" in policy
    assert "script-src" not in policy  # scripts stay under default-src 'self'
    for asset in ("xterm.js", "xterm-addon-fit.js", "xterm.css", "console-terminal.js"):
        assert console.get(f"/static/{asset}").status_code == 200


def test_the_handshake_is_refused_from_another_site_or_without_the_pages_csrf_value(
        console: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    logged_in(console)
    grant(console, "alice", "exec")
    token = csrf(console, CART)
    with caplog.at_level(logging.INFO, logger="pincompile.api.audit"):
        assert refusal(console, f"csrf={token}", origin="https://evil.test")[0] == 403
        assert refusal(console, f"csrf={token}", origin=None)[0] == 403
        assert refusal(console, f"csrf={token}", origin="http://console.test")[0] == 403
        status, detail = refusal(console, "csrf=" + "f" * 43)
        assert status == 403 and "CSRF check failed" in detail
    assert f'"path": "{SOCKET}", "status": 403' in caplog.text


def test_the_handshake_needs_a_session_and_the_exec_verb(
        console: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    token = csrf(console, "/login")
    status, detail = refusal(console, f"csrf={token}")
    assert (status, detail) == (401, "not signed in: log in to the console again")
    logged_in(console, "bob-token")
    grant(console, "alice", "exec")
    status, detail = refusal(console, f"csrf={token}&cluster=east&pod=cart-7d4-a")
    assert (status, detail) == (403, "bob may not exec PinApp in project shop")
    logged_in(console)
    with caplog.at_level(logging.INFO, logger="pincompile.api.audit"):
        status, detail = refusal(console, f"csrf={token}&cluster=east&pod=cart-7d4-a")
    # authorized: the API's exec code picked the pod and found no connection to its cluster
    assert (status, detail) == (503, "no connection to member cluster east")
    assert '"user": "alice"' in caplog.text and '"command": ["sh", "-c"' in caplog.text
    status, detail = refusal(console, f"csrf={token}&cluster=north")
    assert (status, detail) == (404, "PinApp/shop/cart: no pod in cluster north")
