"""The console in a real browser (Debian's chromium driven by Playwright) against the
fleet's host API server: a service account's token logs in through TokenReview, the grid
shows only the projects its RBAC allows (SubjectAccessReview), filters work with
JavaScript off too, a status change on the host reaches an open page without a reload,
a project's page shows its cost and efficiency (another project's is a 403 page), the
app page shows placement, pods, events and history and follows the app's logs from
the member clusters (a new line arrives), runs ``echo hi`` in a pod's terminal (in its
first container, then in its sidecar, picked with the keyboard) and restarts the app
after a confirmation (its events show the zones), another project's app is a 403 page;
and the basics of accessibility: labelled inputs, contrast, keyboard order on the grid."""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from pincompile import crds
from pincompile.manifest import MANAGED_BY, MANAGED_BY_VALUE
from reconciler.api.access import HostAccess, RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.api.pods import MemberPods
from reconciler.api.sources import HostApps
from reconciler.clients.connect import Connection
from reconciler.console.members import MemberClusters
from reconciler.console.routes import mount_console
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.clusters import ClusterSpec
from reconciler.host import write_cluster_status, write_status
from reconciler.store import EventRecord, RevisionRecord, Store
from reconciler.store.records import UsageSample
from reconciler.store.usage import add_usage
from tests.support import api_fleet
from tests.support.wait import wait_for

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.e2e, pytest.mark.fleet_alone(
    "writes a member's failover state on the host, which a pass beside it rewrites")]
TENANTS, SHOP, ADS = "console-e2e-tenants", "console-shop", "console-ads"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
WAIT_MS = 20_000
CART = ("PinApp", SHOP, "cart")


def app_status(**phases: str) -> dict[str, Any]:
    worst = next((p for p in phases.values() if p != "Healthy"), "Healthy")
    return {"phase": worst, "ready": f"{len(phases)}/{len(phases)}", "replicas": len(phases),
            "readyReplicas": len(phases), "lastAppliedRevision": "abc123",
            "clusters": [{"name": c, "phase": p, "replicas": 1, "readyReplicas": 1}
                         for c, p in phases.items()]}


@pytest.fixture(scope="module")
def host(fleet: fleet_mod.FleetState) -> Iterator[Connection]:
    with api_fleet.host_cluster(fleet) as conn:
        yield conn


@pytest.fixture(scope="module")
def carol_token(host: Connection) -> str:
    """Service account ``carol`` may get and list PinApps in project console-shop only, read
    their logs, exec in their pods and restart them."""
    api_fleet.create_namespaces(host, TENANTS, SHOP, ADS)
    return api_fleet.tenant_token(host, TENANTS, "carol", SHOP, [
        {"apiGroups": ["pincompute.io"], "resources": ["pinapps"], "verbs": ["get", "list"]},
        {"apiGroups": ["pincompute.io"], "resources": ["pinapps/logs"], "verbs": ["get"]},
        {"apiGroups": ["pincompute.io"], "resources": ["pinapps/exec"], "verbs": ["create"]},
        {"apiGroups": ["pincompute.io"], "resources": ["pinapps/restart"],
         "verbs": ["update"]}])


@pytest.fixture(scope="module")
def members(fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec]) -> list[str]:
    """Two schedulable member clusters in two zones, each running one pod of app cart (the
    fleet's pods write a log line every 2 s); the first one's pod has a sidecar."""
    schedulable = sorted((s for s in fleet_specs.values() if s.schedulable),
                         key=lambda s: s.name)
    other = next(s for s in schedulable if s.zone != schedulable[0].zone)
    names = [schedulable[0].name, other.name]
    main = {"name": "main", "image": "registry.internal/console-e2e/cart:1"}
    sidecar = {"name": "sidecar", "image": "registry.internal/console-e2e/shipper:1"}
    for name in names:
        api_fleet.run_app_pod(fleet, fleet_specs[name].context, CART,
                              [main, sidecar] if name == names[0] else [main])
    return names


@pytest.fixture(scope="module")
def console(fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec], host: Connection,
            carol_token: str, members: list[str],
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The console on the API's app, on a port of 127.0.0.1, with apps in both projects
    (their namespaces made with carol's grant)."""
    first, second = members[0], members[-1]
    custom = k8s.CustomObjectsApi(host.api)
    apps = {(SHOP, "web"): app_status(**{first: "Healthy", second: "Healthy"}),
            (SHOP, "cart"): app_status(**{first: "Healthy", second: "Degraded"}),
            (ADS, "secret"): app_status(**{first: "Healthy"})}
    for (project, name), status in apps.items():
        custom.create_namespaced_custom_object("pincompute.io", "v1", project, "pinapps",
                                               api_fleet.pin_app(project, name, replicas=2))
        write_status(host, ("PinApp", project, name), status)
    store = Store.open(f"sqlite:///{tmp_path_factory.mktemp('console') / 'insight.db'}")
    when = datetime.now(UTC)
    store.add_events([EventRecord(app=("PinApp", SHOP, "cart"), reason="Unhealthy",
                                  message="readiness probe failed", uid="console-e2e-1",
                                  cluster=second, source="kubernetes", warning=True,
                                  object=f"Pod/{SHOP}/cart-1", last_seen=when)])
    store.add_revision(RevisionRecord(app=("PinApp", SHOP, "cart"), revision="abc123",
                                      applied_at=when, result="unconverged", commit="c" * 40))
    hour = time.time() // 3600 * 3600  # cart's cost: 3 hours of 2 cores and 1 GiB, reserved
    add_usage(store, [UsageSample(hour - 3600 * (i + 1), 3600.0, first, CART, "reserved", 1,
                                  (2.0, 2**30, 0.0), (2.0, 2**30), (0.5, 2**29),
                                  (0.04, 0.005, 0.0), "USD") for i in range(3)], [])
    register_members(fleet, fleet_specs, host, members)
    watched = HostApps(host)
    watched.wait_synced()
    health = MemberClusters(host, str(fleet.kubeconfig))
    pods = MemberPods(str(fleet.kubeconfig),
                      lambda: {s.name: s.context for s in fleet_specs.values()})
    app = create_app(Gateway(apps=watched, store=store, access=HostAccess(host, ttl=30),
                             limits=RateLimits(100, 200), pods=pods, host=host))
    mount_console(app, members=health)
    try:
        with api_fleet.served_locally(app) as url:
            yield url
    finally:
        watched.close()
        health.close()
        pods.close()
        store.close()


def register_members(fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec],
                     host: Connection, members: list[str]) -> None:
    """The members' Cluster resources on the host (as a pass applies them, unless one did
    already), the second one Unreachable in its failover state."""
    where = Path(fleet.clusters_path)
    paths = [where] if where.is_file() else sorted(where.rglob("*.yaml"))
    docs = [d for p in paths for d in yaml.safe_load_all(p.read_text())
            if isinstance(d, dict) and d.get("kind") == "Cluster"
            and d.get("metadata", {}).get("name") in members]
    for doc in docs:
        cr = crds.custom_resource(doc)
        cr["metadata"].setdefault("labels", {})[MANAGED_BY] = MANAGED_BY_VALUE
        cr["spec"]["context"] = fleet_specs[cr["metadata"]["name"]].context
        try:
            k8s.CustomObjectsApi(host.api).create_cluster_custom_object(
                "pincompute.io", "v1", "clusters", cr)
        except ApiException as exc:
            if exc.status != 409:
                raise
    write_cluster_status(host, members[-1], {"failover": {
        "phase": "Unreachable", "reason": "console e2e: timed out",
        "since": "2026-11-26T12:00:00Z"}})


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        message = f"no chromium at {CHROMIUM}: make packages installs Debian's"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    with playwright.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def log_in(browser: Any, console: str, token: str, *, javascript: bool = True) -> Any:
    page = browser.new_context(java_script_enabled=javascript).new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(console + "/")
    assert page.url.startswith(console + "/login")
    page.get_by_label("Bearer token").fill(token)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(console + "/")
    return page


def grid_apps(page: Any) -> list[str]:
    return [str(t).split()[-1] for t in
            page.locator("table.grid tbody th[scope=row] a").all_inner_texts()]


def test_a_tenant_logs_in_sees_its_grid_filters_opens_an_app_and_is_refused_another(
        browser: Any, console: str, carol_token: str, members: list[str],
        host: Connection) -> None:
    page = log_in(browser, console, carol_token)
    assert grid_apps(page) == [f"{SHOP}/cart", f"{SHOP}/web"]
    headers = page.locator("table.grid thead th").all_inner_texts()
    assert [h.split()[0] for h in headers[3:]] == sorted(members)

    for name, failover in ((members[0], "Reachable"), (members[-1], "Unreachable")):
        member = page.locator("table.members tbody tr", has_text=name)
        member.locator("td.reach.reachable").wait_for()  # its node watch has listed
        row = member.inner_text().split("\t")
        ready, nodes = map(int, row[2].split("/"))
        assert (row[1], row[3].split(":")[0]) == ("reachable", failover) and ready == nodes > 0

    page.get_by_label("Phase").select_option("Degraded")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(lambda url: "phase=Degraded" in url)
    assert grid_apps(page) == [f"{SHOP}/cart"]

    page.goto(console + "/")  # an open page follows the host without a reload (htmx)
    write_status(host, ("PinApp", SHOP, "web"), app_status(**{members[0]: "Failed"}))
    page.locator("table.grid tbody tr", has_text=f"{SHOP}/web").locator(
        "td.phase.failed").first.wait_for()

    page.get_by_role("link", name=f"PinApp {SHOP}/cart").click()
    page.wait_for_url(f"**/apps/PinApp/{SHOP}/cart")
    placement = page.locator("table.shares tbody tr", has_text=members[-1])
    assert "Degraded" in placement.inner_text() and "50%" in placement.inner_text()
    assert "readiness probe failed" in page.locator("table.events").inner_text()
    assert "cccccccccccc" in page.locator("table.history").inner_text()

    refused = page.goto(f"{console}/apps/PinApp/{ADS}/secret")
    assert refused is not None and refused.status == 403
    assert "may not read PinApp apps in project console-ads" in page.inner_text("main")

    page.goto(console + "/")  # the project's page: cost and efficiency as the API sums them
    page.get_by_role("navigation", name="Projects' cost and forecast").get_by_role(
        "link", name=SHOP).click()
    page.wait_for_url(f"**/projects/{SHOP}")
    assert page.locator("#project-cost").inner_text() == "0.2550 USD"  # 3 x (0.08 + 0.005)
    assert (page.locator("#efficiency-cpu").inner_text(),
            page.locator("#efficiency-memory").inner_text()) == ("25%", "50%")
    assert f"PinApp/{SHOP}/cart" in page.locator("table.apps").inner_text()
    assert_labelled_and_legible(page)
    refused = page.goto(f"{console}/projects/{ADS}")  # RBAC: carol may list no app there
    assert refused is not None and refused.status == 403

    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/login")
    assert page.goto(console + "/") is not None and page.url.startswith(console + "/login")


LOG_LINE = re.compile(r"^(?P<cluster>[^/\s]+)/cart-\S+/main .*pincompile fleet: pod log line "
                      r"(?P<n>\d+)$")


def test_the_app_page_lists_its_pods_and_follows_their_logs_as_lines_arrive(
        browser: Any, console: str, carol_token: str, members: list[str]) -> None:
    page = log_in(browser, console, carol_token)
    page.goto(f"{console}/apps/PinApp/{SHOP}/cart")
    rows = page.locator("table.pods tbody tr").all_inner_texts()
    assert sorted(r.split()[0] for r in rows) == members and all("Running" in r for r in rows)

    def lines() -> list[re.Match[str]]:
        text = page.locator("#log-lines").inner_text()
        return [m for m in map(LOG_LINE.match, text.splitlines()) if m]

    first = wait_for(lambda: {
        m["cluster"] for m in lines()} == set(members) and lines(), 20,
                     "the last lines of both clusters' pods")
    newest = {c: max(int(m["n"]) for m in first if m["cluster"] == c) for c in members}
    wait_for(lambda: any(
        int(m["n"]) > newest[m["cluster"]] for m in lines()), 15,
             "a line written after the page opened (one every 2 s)")

    page.locator("#log-cluster").select_option(members[-1])  # narrow to one cluster
    page.get_by_role("button", name="Show logs").click()
    wait_for(lambda: (found := lines()) and all(
        m["cluster"] == members[-1] for m in found), 15, f"only lines of {members[-1]}")
    page.get_by_label("Follow").uncheck()
    assert page.locator("#log-status").inner_text() == "Paused."


def test_the_grid_and_its_filters_work_with_javascript_off(
        browser: Any, console: str, carol_token: str) -> None:
    page = log_in(browser, console, carol_token, javascript=False)
    page.get_by_label("Search").fill("car")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(lambda url: "q=car" in url)
    assert grid_apps(page) == [f"{SHOP}/cart"]
    page.goto(f"{console}/apps/PinApp/{SHOP}/cart")  # the logs: the last lines, as a page
    page.get_by_role("button", name="Show logs").click()
    page.wait_for_url(f"**/apps/PinApp/{SHOP}/cart/logs?**")
    assert "pincompile fleet: pod log line" in page.locator("#log-lines").inner_text()


CONTRAST = """() => {
  const lum = (rgb) => { const [r, g, b] = rgb.match(/\\d+/g).slice(0, 3).map(Number)
      .map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  return [...document.querySelectorAll('td.phase, th, a, label, button')].map((el) => {
    let bg = el, color = getComputedStyle(el).backgroundColor;
    while (color === 'rgba(0, 0, 0, 0)' && bg.parentElement) {
      bg = bg.parentElement; color = getComputedStyle(bg).backgroundColor; }
    if (color === 'rgba(0, 0, 0, 0)') color = 'rgb(255, 255, 255)';
    const [a, b] = [lum(getComputedStyle(el).color), lum(color)].sort((x, y) => y - x);
    return [el.textContent.trim().slice(0, 30), (a + 0.05) / (b + 0.05)]; });
}"""


def assert_labelled_and_legible(page: Any) -> None:
    """Every input and select has a label; all text has 4.5:1 contrast or more."""
    unlabelled = page.evaluate("""() => [...document.querySelectorAll('input, select')]
        .filter((el) => el.type !== 'hidden' && el.labels.length === 0)
        .map((el) => el.id || el.name)""")
    assert unlabelled == [], f"{page.url}: inputs without a label"
    low = [(text, round(ratio, 2)) for text, ratio in page.evaluate(CONTRAST) if ratio < 4.5]
    assert low == [], f"{page.url}: text under 4.5:1 contrast"


def test_inputs_are_labelled_text_has_contrast_and_the_grid_is_in_keyboard_order(
        browser: Any, console: str, carol_token: str) -> None:
    signed_out = browser.new_context().new_page()
    signed_out.goto(console + "/login")
    assert_labelled_and_legible(signed_out)
    page = log_in(browser, console, carol_token)
    assert_labelled_and_legible(page)

    page.get_by_label("Search").focus()
    order = []
    for _ in range(8):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id || "
                                   "document.activeElement.textContent.trim()"))
    assert order == ["f-project", "f-kind", "f-phase", "f-cluster", "f-size", "Apply",
                     "app-1", "app-2"]  # the filters, then the grid row by row
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")  # the focused grid link opens its app
    page.wait_for_url(f"**/apps/PinApp/{SHOP}/cart")
    page.locator("#pods").wait_for()
    assert_labelled_and_legible(page)  # the app page: pods, terminal pickers, log filters
    page.get_by_role("button", name="Restart…").click()
    page.wait_for_url(f"**/apps/PinApp/{SHOP}/cart/actions/restart")
    assert_labelled_and_legible(page)  # the confirmation (not confirmed here)


def terminal_lines(page: Any) -> list[str]:
    return [line.strip() for line in page.locator(".xterm-rows").inner_text().splitlines()]


def test_a_pods_terminal_runs_a_command_and_shows_its_output(
        browser: Any, console: str, carol_token: str, members: list[str]) -> None:
    page = log_in(browser, console, carol_token)
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text)
            if "Content Security Policy" in m.text else None)
    page.goto(f"{console}/apps/PinApp/{SHOP}/cart")
    page.get_by_role("button", name=re.compile(rf"^Terminal in {members[0]}\/cart-")).click()
    status = page.locator("#terminal-status")
    status.filter(has_text=re.compile(rf"Connected to {members[0]}/cart-\S+ \(container "
                                      r"main\)")).wait_for()  # the first, unless picked
    page.keyboard.type("echo hi")
    page.keyboard.press("Enter")
    wait_for(lambda: "hi" in terminal_lines(page), 15, "the shell's output line hi")
    page.keyboard.type("exit 3")
    page.keyboard.press("Enter")
    status.filter(has_text="exited (code 3)").wait_for()

    picker = page.get_by_label(re.compile(rf"^Container of {members[0]}/cart-"))
    assert picker.locator("option").all_inner_texts() == ["main", "sidecar"]
    picker.focus()  # by keyboard: pick the sidecar, Tab to the pod's button, Enter
    page.keyboard.press("ArrowDown")
    assert picker.input_value() == "sidecar"
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    status.filter(has_text="(container sidecar)").wait_for()
    page.keyboard.type("echo hi")
    page.keyboard.press("Enter")
    wait_for(lambda: "hi" in terminal_lines(page), 15, "hi from the sidecar's shell")
    assert refused == []  # no script or style refused by the page's CSP


def test_restart_asks_for_confirmation_and_the_events_show_its_zones(
        browser: Any, console: str, carol_token: str, members: list[str],
        fleet_specs: dict[str, ClusterSpec]) -> None:
    page = log_in(browser, console, carol_token)
    page.goto(f"{console}/apps/PinApp/{SHOP}/cart")
    page.get_by_role("button", name="Restart…").click()
    page.wait_for_url(f"**/apps/PinApp/{SHOP}/cart/actions/restart")
    assert "zone by zone" in page.inner_text("main")
    page.get_by_role("button", name="Yes, restart").click()
    page.wait_for_url(f"**/apps/PinApp/{SHOP}/cart?outcome=*")
    outcome = page.locator("p.outcome").inner_text()
    assert outcome.startswith("Restart: 202 Accepted — restarting zone by zone"), outcome
    events = page.locator("#events table.events")
    assert "RestartRequested" in events.inner_text()
    events.locator("td", has_text="RestartZone").first.wait_for()  # the live refresh
    events.locator("td", has_text="RestartComplete").wait_for(timeout=60_000)
    rows = [row for row in events.inner_text().splitlines() if "RestartZone" in row]
    zones = [row.split("zone ")[1].split(":")[0] for row in rows]
    # the timeline is newest first: the second zone started after the first rolled out
    assert zones[::-1] == sorted(fleet_specs[m].zone for m in members), rows
