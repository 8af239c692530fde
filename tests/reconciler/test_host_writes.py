"""The host's writes of a pass on clusters held in memory: the fewest a first pass can make
(each app's resource once, its status once, one Event per kind of write), and none of them
in the way of the member clusters' writes."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

from pincompile.compiler import compile_path
from reconciler.clients.access import api_error
from reconciler.model import Obj
from reconciler.status.document import APP_KINDS, app_of
from tests.support.fake_passes import FakePass, fake_fleet, spec_repo


def test_a_first_pass_writes_each_app_once_its_status_once_and_one_event(
        tmp_path: Path) -> None:
    repo = spec_repo(tmp_path / "repo")
    result = compile_path(repo)
    fleet = fake_fleet(result)
    first = FakePass(fleet, result)
    resources = Counter(e.doc.data["kind"] for e in result.catalog.entries)
    apps = set(resources) & APP_KINDS
    written = first.written["host"]
    for kind in apps:  # created, then its status: two writes, nothing else
        assert written[kind.lower() + "s"] == 2 * resources[kind], (kind, written)
    assert len(first.statuses) == sum(resources[k] for k in apps)
    # one Event per app a member object was written for
    assert written["events"] == len({app_of(m.obj) for m in result.manifests} - {None})
    assert first.dry_runs["host"] == 0


def test_the_members_are_written_while_the_host_writes_the_specs(tmp_path: Path) -> None:
    """A host that answers its first spec write only once a member write has begun: the
    pass converges, the host's writes having run beside the members' (they used to come
    first, and such a host held every member write back)."""
    repo = spec_repo(tmp_path / "repo")
    result = compile_path(repo)
    fleet = fake_fleet(result)
    members_writing = threading.Event()
    seen: list[bool] = []

    def member_write(_operation: str, _obj: Obj) -> None:
        members_writing.set()

    def host_write(_operation: str, obj: Obj) -> None:
        if obj["apiVersion"].startswith("pincompute.io/") and not seen:
            seen.append(members_writing.wait(timeout=10))
            if not seen[0]:
                raise api_error(504, "the host waited for a member write in vain", "Timeout")

    for name, cluster in fleet.clusters.items():
        cluster.admission.append(host_write if name == "host" else member_write)
    run = FakePass(fleet, result)
    assert seen == [True], run.lines
    assert run.report.converged, run.lines
    assert fleet.clusters["host"].get({"apiVersion": "pincompute.io/v1", "kind": "PinApp",
                                       "metadata": {"name": "web", "namespace": "shop"}})


def test_a_host_write_that_fails_behind_the_pass_fails_the_host_not_the_members(
        tmp_path: Path) -> None:
    repo = spec_repo(tmp_path / "repo")
    result = compile_path(repo)
    fleet = fake_fleet(result)

    def no_specs(_operation: str, obj: Obj) -> None:
        if obj["kind"] == "PinApp":
            raise api_error(503, "etcdserver: leader changed", "ServiceUnavailable")

    fleet.clusters["host"].admission.append(no_specs)
    run = FakePass(fleet, result)
    assert "503" in (run.report.clusters["host"].error or ""), run.report.clusters["host"]
    assert all(run.report.clusters[m].error is None and run.report.clusters[m].created
               for m in ("rt-a", "rt-b", "rt-c"))
    assert not [k for k in fleet.clusters["host"].objects if k[0] == "PinApp"]
    assert run.reconciler.statuses and not run.report.statuses  # none written
