"""The terminal's container picker without a browser: a Running pod of several containers
gets a labelled <select> of them in the pod's spec order (the first selected, as the API
picks when none is named) beside its Terminal button, which names it; a pod of one
container gets the button alone; the handshake takes the picked container to the API's
exec code, which refuses one the pod does not have. Picking one with the keyboard and
running ``echo hi`` in it is in test_browser_e2e.py."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient

from reconciler.api.models import PodList
from reconciler.api.pods import pod_summary
from tests.reconciler.console.conftest import FixedPods, csrf, logged_in, pod
from tests.reconciler.console.test_action_buttons import CART, grant
from tests.reconciler.console.test_terminal import refusal


def with_sidecar(name: str, node: str) -> dict[str, Any]:
    """A pod whose spec lists ``main`` then ``log-shipper`` (not in name order)."""
    found = pod(name, node)
    found["spec"]["containers"].append({"name": "log-shipper", "image": "shipper:2"})
    found["status"]["containerStatuses"].insert(0, {  # a kubelet reports them by name
        "name": "log-shipper", "ready": True, "restartCount": 0, "state": {"running": {}}})
    return found


class SidecarPods(FixedPods):
    """east's pod of cart has a sidecar; west's has one container."""

    def pods(self, app: tuple[str, str, str], clusters: Any) -> PodList:
        found = super().pods(app, clusters)
        if found.items:
            found.items[0] = pod_summary("east", with_sidecar("cart-7d4-a", "east-n1"))
        return found


def test_a_pod_of_several_containers_gets_a_labelled_picker_its_button_names(
        console: TestClient) -> None:
    console.app.state.gateway.pods = SidecarPods()  # type: ignore[attr-defined]
    logged_in(console)
    grant(console, "alice", "exec")
    page = console.get(CART).text
    pickers = re.findall(r'<label class="visually-hidden" for="([\w-]+)">([^<]+)</label>'
                         r'<select class="terminal-picker" id="([\w-]+)">(.*?)</select>',
                         page)
    assert len(pickers) == 1, "only the pod of several containers gets a picker"
    label_for, label, select_id, options = pickers[0]
    assert (label_for, label) == (select_id, "Container of east/cart-7d4-a")
    assert re.findall(r"<option>([\w-]+)</option>", options) == ["main", "log-shipper"]
    buttons = re.findall(r'<button type="button" class="terminal-open" '
                         r'data-cluster="(\w+)" data-pod="([\w-]+)"( data-picker="[\w-]+")?',
                         page)
    assert buttons == [("east", "cart-7d4-a", f' data-picker="{select_id}"'),
                       ("west", "cart-7d4-b", "")]


def test_the_handshake_takes_the_picked_container_to_the_apis_exec(
        console: TestClient) -> None:
    console.app.state.gateway.pods = SidecarPods()  # type: ignore[attr-defined]
    logged_in(console)
    grant(console, "alice", "exec")
    token = csrf(console, CART)
    where = f"csrf={token}&cluster=east&pod=cart-7d4-a"
    # a container of the pod: the exec code picked it and found no connection to east
    assert refusal(console, f"{where}&container=log-shipper") == (
        503, "no connection to member cluster east")
    assert refusal(console, f"{where}&container=nope") == (
        404, "PinApp/shop/cart: no container nope in the Running pods (they have: "
             "log-shipper, main)")
