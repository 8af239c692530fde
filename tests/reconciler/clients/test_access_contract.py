"""The cluster-access contract: what a pass's planning relies on the API server for, run
against the in-memory cluster of the unit tests (:class:`TestInMemory`) and against a real
API server of the fleet (:class:`TestRealApiServer`, e2e), so the one cannot drift from
the other. Each test gets a namespace of its own.

Covered: a dry-run (of a create, of a change, of the unchanged object), uid /
resourceVersion / generation / creationTimestamp, managedFields after two managers, a field
removed from an apply, a forced apply taking a field back, the resourceVersion
precondition (and a create-only apply: a precondition no object meets), 404 in a missing
namespace, 422 on immutable fields (saying which), a status subresource kept apart,
deletes with a finalizer, label-selector LISTs and WATCH events, Events with a generated
name, and which kinds are served; merge patches (a key removed, a cluster-scoped object,
404 on a missing one, the resourceVersion compare-and-swap of a Lease as leader election
writes it), LISTs and WATCHes narrowed to one namespace (and a limit), GETs of
cluster-scoped objects, a Pod's eviction, and the requests each new verb is counted as.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes.dynamic.exceptions import ConflictError, DynamicApiError, NotFoundError

from reconciler.clients import write
from reconciler.clients.access import ClusterAccess
from reconciler.clients.connect import Connection
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.clusters import ClusterSpec
from reconciler.kinds import KindInfo
from reconciler.model import Obj
from reconciler.plan import conflict, diff
from tests.support.kube_fake import FakeAccess, FakeCluster
from tests.support.wait import wait_for

CONFIG_MAP = KindInfo("v1", "ConfigMap")
LEASE = KindInfo("coordination.k8s.io/v1", "Lease")
POD = KindInfo("v1", "Pod")
WIDGET = KindInfo("contract.pincompute.io/v1", "Widget")
"""A custom resource with a status subresource (as the host's spec resources have)."""
WIDGET_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.contract.pincompute.io"},
    "spec": {"group": "contract.pincompute.io", "scope": "Namespaced",
             "names": {"kind": "Widget", "plural": "widgets", "singular": "widget",
                       "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {
                               "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}
OTHER = "contract-other"
"""Another field manager (a person with kubectl, an operator)."""


@dataclass
class Side:
    """One API server under test, and the namespace of one test in it."""

    access: ClusterAccess
    namespace: str

    def config_map(self, name: str, data: dict[str, str], **meta: Any) -> Obj:
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": self.namespace, **meta}, "data": data}

    def deployment(self, name: str, app: str, **spec: Any) -> Obj:
        return {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": self.namespace},
                "spec": {"replicas": 0, "selector": {"matchLabels": {"app": app}},
                         "template": {"metadata": {"labels": {"app": app}},
                                      "spec": {"containers": [container("main:1")]}},
                         **spec}}

    def widget(self, name: str, **fields: Any) -> Obj:
        return {"apiVersion": WIDGET.api_version, "kind": WIDGET.kind,
                "metadata": {"name": name, "namespace": self.namespace}, **fields}


def container(image: str) -> Obj:
    """A container Pod Security ``restricted`` admits."""
    return {"name": "main", "image": f"registry.internal/contract/{image}",
            "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                                "runAsUser": 1000, "capabilities": {"drop": ["ALL"]},
                                "seccompProfile": {"type": "RuntimeDefault"}}}


def namespace_of(access: ClusterAccess) -> Iterator[str]:
    """A fresh namespace for one test, deleted after it."""
    name = f"contract-{uuid.uuid4().hex[:8]}"
    ref = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    access.apply(ref, manager=OTHER)
    try:
        yield name
    finally:
        access.delete(ref)


def spec_paths(live: Obj, manager: str) -> set[tuple[str, ...]]:
    """The ``f:spec`` and ``f:data`` leaves ``manager`` owns (its Apply or Update entry of
    the object itself, not of a subresource), without list item keys."""
    out: set[tuple[str, ...]] = set()

    def walk(node: dict[str, Any], prefix: tuple[str, ...]) -> None:
        for step, child in node.items():
            if step == "." or not step.startswith("f:"):
                continue
            if child and any(k.startswith("f:") for k in child):
                walk(child, (*prefix, step))
            else:
                out.add((*prefix, step))

    for entry in live["metadata"].get("managedFields") or []:
        if entry["manager"] == manager and not entry.get("subresource"):
            fields = entry.get("fieldsV1") or {}
            walk({k: v for k, v in fields.items() if k in ("f:spec", "f:data", "f:metadata")},
                 ())
    return out


def rejection(call: Any) -> DynamicApiError:
    with pytest.raises(DynamicApiError) as caught:
        call()
    return caught.value


def message(exc: DynamicApiError) -> str:
    import json

    return str(json.loads(exc.body)["message"])


class Contract:
    """The behaviours, each a test run on every side."""

    # --- dry-run ----------------------------------------------------------------------------

    def test_a_dry_run_create_answers_the_object_without_a_resource_version_or_storing_it(
            self, side: Side) -> None:
        cm = side.config_map("dry", {"a": "1"})
        answer = side.access.apply(cm, dry_run=True)
        assert answer["data"] == {"a": "1"} and answer["metadata"]["name"] == "dry"
        assert not answer["metadata"].get("resourceVersion")
        assert side.access.get(cm) is None
        assert side.access.list(CONFIG_MAP, label_selector="none-of-ours")["items"] == []

    def test_creating_in_a_missing_namespace_is_404_and_so_is_its_dry_run(
            self, side: Side) -> None:
        cm = {**side.config_map("lost", {}), "metadata": {"name": "lost",
                                                          "namespace": "no-such-namespace"}}
        for dry_run in (True, False):
            error = rejection(lambda d=dry_run: side.access.apply(cm, dry_run=d))
            assert isinstance(error, NotFoundError), error

    def test_a_dry_run_of_the_unchanged_object_answers_the_live_object_at_its_version(
            self, side: Side) -> None:
        cm = side.config_map("same", {"a": "1"}, labels={"team": "x"})
        live = side.access.apply(cm)
        answer = side.access.apply(cm, dry_run=True)
        assert diff.same(live, answer)
        assert answer["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]
        assert answer["metadata"]["managedFields"] == live["metadata"]["managedFields"]
        again = side.access.apply(cm)  # and applying it for real writes nothing
        assert again["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]

    def test_a_dry_run_of_a_change_answers_the_merged_object_and_stores_nothing(
            self, side: Side) -> None:
        live = side.access.apply(side.config_map("change", {"a": "1"}))
        side.access.apply(side.config_map("change", {"b": "2"}), manager=OTHER)
        answer = side.access.apply(side.config_map("change", {"a": "9"}), dry_run=True)
        assert answer["data"] == {"a": "9", "b": "2"}
        stored = side.access.get(live)
        assert stored is not None and stored["data"] == {"a": "1", "b": "2"}

    # --- what the server sets ---------------------------------------------------------------

    def test_the_server_sets_uid_version_creation_time_and_a_workloads_generation(
            self, side: Side) -> None:
        cm = side.access.apply(side.config_map("meta", {}))
        dep = side.access.apply(side.deployment("meta", "meta"))
        for obj in (cm, dep):
            meta = obj["metadata"]
            assert meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"]
        assert dep["metadata"]["generation"] == 1
        assert "generation" not in cm["metadata"]
        assert int(dep["metadata"]["resourceVersion"]) > int(cm["metadata"]["resourceVersion"])

    def test_generation_moves_on_a_spec_change_and_a_deployments_annotations_only(
            self, side: Side) -> None:
        dep = side.deployment("gen", "gen")
        assert side.access.apply(dep)["metadata"]["generation"] == 1
        labelled = {**dep, "metadata": {**dep["metadata"], "labels": {"team": "x"}}}
        assert side.access.apply(labelled)["metadata"]["generation"] == 1
        annotated = {**labelled, "metadata": {**labelled["metadata"],
                                              "annotations": {"note": "x"}}}
        assert side.access.apply(annotated)["metadata"]["generation"] == 2
        scaled = {**annotated, "spec": {**annotated["spec"], "minReadySeconds": 5}}
        assert side.access.apply(scaled)["metadata"]["generation"] == 3
        cm = side.config_map("gen", {"a": "1"})
        side.access.apply(cm)
        assert "generation" not in side.access.apply(
            {**cm, "data": {"a": "2"}})["metadata"]

    # --- field ownership ----------------------------------------------------------------------

    def test_managed_fields_after_two_managers_say_who_owns_each_field(
            self, side: Side) -> None:
        dep = side.deployment("owners", "owners", replicas=2)
        side.access.apply(dep)
        live = side.access.get(dep)
        assert live is not None and ("f:spec", "f:replicas") in spec_paths(live, "pincompile")
        side.access.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
            "name": "owners", "namespace": side.namespace}, "spec": {"replicas": 3}},
            manager=OTHER)
        live = side.access.get(dep)
        assert live is not None and live["spec"]["replicas"] == 3
        assert ("f:spec", "f:replicas") not in spec_paths(live, "pincompile")
        assert spec_paths(live, OTHER) == {("f:spec", "f:replicas")}
        assert ("f:spec", "f:selector") in spec_paths(live, "pincompile") or \
            any(p[:2] == ("f:spec", "f:selector") for p in spec_paths(live, "pincompile"))
        assert {"pincompile", OTHER} <= set(conflict.owners(live))

    def test_a_field_dropped_from_an_apply_goes_unless_another_manager_owns_it(
            self, side: Side) -> None:
        side.access.apply(side.config_map("drop", {"a": "1", "b": "2"},
                                          labels={"keep": "x", "drop": "y"}))
        side.access.apply(side.config_map("drop", {"c": "3"}, labels={"theirs": "z"}),
                          manager=OTHER)
        live = side.access.apply(side.config_map("drop", {"a": "1"}, labels={"keep": "x"}))
        assert live["data"] == {"a": "1", "c": "3"}
        assert live["metadata"]["labels"] == {"keep": "x", "theirs": "z"}

    def test_a_forced_apply_takes_back_a_field_another_manager_changed(
            self, side: Side) -> None:
        side.access.apply(side.config_map("force", {"a": "1"}))
        side.access.apply(side.config_map("force", {"a": "changed", "b": "theirs"}),
                          manager=OTHER)
        live = side.access.apply(side.config_map("force", {"a": "1"}))
        assert live["data"] == {"a": "1", "b": "theirs"}
        assert spec_paths(live, OTHER) == {("f:data", "f:b")}

    def test_a_resource_version_precondition_is_409_once_the_object_moved_on(
            self, side: Side) -> None:
        live = side.access.apply(side.config_map("pre", {"a": "1"}))
        version = live["metadata"]["resourceVersion"]
        side.access.apply(side.config_map("pre", {"b": "2"}), manager=OTHER)
        stale = side.config_map("pre", {"a": "1"}, resourceVersion=version)
        assert isinstance(rejection(lambda: side.access.apply(stale)), ConflictError)
        moved = side.access.get(live)
        assert moved is not None
        fresh = side.config_map("pre", {"a": "2"},
                                resourceVersion=moved["metadata"]["resourceVersion"])
        assert side.access.apply(fresh)["data"] == {"a": "2", "b": "2"}

    def test_an_apply_of_a_missing_object_creates_it_whatever_resource_version_it_names(
            self, side: Side) -> None:
        created = side.access.apply(side.config_map("gone", {"a": "1"}, resourceVersion="7"))
        assert created["data"] == {"a": "1"} and created["metadata"]["resourceVersion"] != "7"

    def test_a_create_only_apply_creates_a_free_name_and_leaves_a_held_one_alone(
            self, side: Side) -> None:
        created = write.create(side.access, side.config_map("free", {"a": "1"}))
        assert created["data"] == {"a": "1"}
        assert conflict.owners(created) == ["pincompile"]
        assert created["metadata"]["resourceVersion"] != write.CREATE_ONLY
        side.access.apply(side.config_map("held", {"b": "theirs"}), manager=OTHER)
        before = side.access.get(side.config_map("held", {}))
        refused = rejection(lambda: write.create(side.access,
                                                 side.config_map("held", {"a": "1"})))
        assert isinstance(refused, ConflictError), refused
        assert side.access.get(side.config_map("held", {})) == before
        again = rejection(lambda: write.create(side.access, side.config_map("free", {"a": "1"})))
        assert isinstance(again, ConflictError), again  # ours: the name is held all the same

    # --- immutable fields ---------------------------------------------------------------------

    @pytest.mark.parametrize("case", ["Deployment selector", "Job template",
                                      "Service clusterIP", "Pod spec", "PVC spec"])
    def test_changing_an_immutable_field_is_422_naming_the_field(
            self, side: Side, case: str) -> None:
        before, after, field = immutable_case(side, case)
        side.access.apply(before)
        for dry_run in (True, False):
            error = rejection(lambda d=dry_run: side.access.apply(after, dry_run=d))
            assert error.status == 422, error
            assert conflict.is_immutable(message(error)), message(error)
            assert conflict.immutable_fields(message(error))[:1] == [field], message(error)

    def test_a_pods_image_changes_in_place(self, side: Side) -> None:
        pod = pod_of(side, "image", "app:1")
        uid = side.access.apply(pod)["metadata"]["uid"]
        changed = pod_of(side, "image", "app:2")
        live = side.access.apply(changed)
        assert live["metadata"]["uid"] == uid
        assert live["spec"]["containers"][0]["image"].endswith("app:2")

    # --- status, deletes, lists, watches, events ------------------------------------------------

    def test_a_status_write_is_kept_apart_from_the_object_and_its_generation(
            self, side: Side) -> None:
        widget = side.widget("w", spec={"size": 1})
        created = side.access.apply({**widget, "status": {"phase": "ignored"}})
        assert "status" not in created and created["metadata"]["generation"] == 1
        written = side.access.apply({**side.widget("w"), "status": {"phase": "Ready"}},
                                    subresource="status")
        assert written["status"] == {"phase": "Ready"} and written["spec"] == {"size": 1}
        assert written["metadata"]["generation"] == 1
        entries = [(m["manager"], m.get("subresource", ""))
                   for m in written["metadata"]["managedFields"]]
        assert ("pincompile", "status") in entries and ("pincompile", "") in entries
        assert side.access.apply(widget)["status"] == {"phase": "Ready"}

    def test_a_delete_waits_for_finalizers_and_a_second_delete_finds_nothing(
            self, side: Side) -> None:
        held = side.config_map("held", {}, finalizers=["contract.pincompute.io/hold"])
        side.access.apply(held)
        assert side.access.delete(held)
        live = side.access.get(held)
        assert live is not None and live["metadata"]["deletionTimestamp"]
        side.access.apply({**held, "metadata": {**held["metadata"], "finalizers": []}})
        assert side.access.get(held) is None
        assert side.access.delete(held) is False

    def test_a_list_filters_by_label_and_a_watch_reports_each_change_from_its_version(
            self, side: Side) -> None:
        side.access.apply(side.config_map("one", {}, labels={"pick": "yes"}))
        side.access.apply(side.config_map("two", {}, labels={"pick": "no"}))
        listed = side.access.list(CONFIG_MAP, label_selector="pick=yes")
        assert [o["metadata"]["name"] for o in listed["items"]
                if o["metadata"]["namespace"] == side.namespace] == ["one"]
        events = side.access.watch(CONFIG_MAP, label_selector="pick=yes",
                                   resource_version=listed["resourceVersion"],
                                   timeout_seconds=30)
        side.access.apply(side.config_map("three", {}, labels={"pick": "yes"}))
        side.access.apply(side.config_map("one", {"a": "1"}, labels={"pick": "yes"}))
        side.access.apply(side.config_map("three", {}, labels={"pick": "no"}))
        side.access.delete(side.config_map("one", {}))
        seen = []
        for event in events:
            if event["type"] != "BOOKMARK":
                seen.append((event["type"], event["object"]["metadata"]["name"]))
            if len(seen) == 4:
                break
        getattr(events, "close", lambda: None)()
        assert seen == [("ADDED", "three"), ("MODIFIED", "one"), ("DELETED", "three"),
                        ("DELETED", "one")]

    def test_an_event_is_created_with_a_generated_name(self, side: Side) -> None:
        created = side.access.create({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": "w.", "namespace": side.namespace},
            "involvedObject": {"apiVersion": WIDGET.api_version, "kind": WIDGET.kind,
                               "name": "w", "namespace": side.namespace},
            "reason": "Applied", "message": "contract", "type": "Normal",
            "source": {"component": "pincompile"}})
        assert created["metadata"]["name"].startswith("w.") and created["reason"] == "Applied"

    # --- merge patches, namespaced reads, subresources -------------------------------------

    def test_a_merge_patch_changes_what_it_names_and_null_removes_a_key(
            self, side: Side) -> None:
        live = side.access.apply(side.config_map("merge", {"a": "1", "b": "2"},
                                                 labels={"keep": "x"}))
        before = side.access.stats.by_verb["patch"]
        patched = side.access.patch(live, {"data": {"a": "9", "b": None},
                                           "metadata": {"labels": {"new": "y"}}},
                                    manager=OTHER)
        assert side.access.stats.by_verb["patch"] == before + 1
        assert patched["data"] == {"a": "9"}
        assert patched["metadata"]["labels"] == {"keep": "x", "new": "y"}
        assert (OTHER, "Update") in {(m["manager"], m["operation"])
                                     for m in patched["metadata"]["managedFields"]}
        assert side.access.get(live) == patched

    def test_a_merge_patch_of_a_missing_object_is_404(self, side: Side) -> None:
        error = rejection(lambda: side.access.patch(side.config_map("absent", {}),
                                                    {"data": {"a": "1"}}))
        assert isinstance(error, NotFoundError), error

    def test_a_merge_patch_with_a_resource_version_is_a_compare_and_swap(
            self, side: Side) -> None:
        body = {"apiVersion": LEASE.api_version, "kind": LEASE.kind,
                "metadata": {"name": "election", "namespace": side.namespace},
                "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
        lease = side.access.create(body)
        seen = lease["metadata"]["resourceVersion"]
        again = rejection(lambda: side.access.create(body))
        assert isinstance(again, ConflictError), again  # another candidate created it first
        won = side.access.patch(lease, {"metadata": {"resourceVersion": seen},
                                        "spec": {"holderIdentity": "b"}})
        assert won["spec"] == {"holderIdentity": "b", "leaseDurationSeconds": 15}
        assert won["metadata"]["resourceVersion"] != seen
        lost = rejection(lambda: side.access.patch(
            lease, {"metadata": {"resourceVersion": seen}, "spec": {"holderIdentity": "c"}}))
        assert isinstance(lost, ConflictError), lost
        held = side.access.get(lease)
        assert held is not None and held["spec"]["holderIdentity"] == "b"

    def test_a_cluster_scoped_object_is_got_and_patched_without_a_namespace(
            self, side: Side) -> None:
        ref = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": side.namespace}}
        live = side.access.get(ref)
        assert live is not None and live["metadata"]["name"] == side.namespace
        assert "namespace" not in live["metadata"]
        patched = side.access.patch(ref, {"metadata": {"labels": {"contract": "yes"}}})
        assert patched["metadata"]["labels"]["contract"] == "yes"
        missing = {"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": f"{side.namespace}-none"}}
        assert side.access.get(missing) is None

    def test_a_list_and_a_watch_narrowed_to_a_namespace_see_only_it(self, side: Side) -> None:
        for other in namespace_of(side.access):
            theirs = Side(side.access, other).config_map("x", {}, labels={"pick": "ns"})
            side.access.apply(theirs)
            for name in ("one", "two"):
                side.access.apply(side.config_map(name, {}, labels={"pick": "ns"}))
            listed = side.access.list(CONFIG_MAP, namespace=side.namespace,
                                      label_selector="pick=ns")
            assert [o["metadata"]["name"] for o in listed["items"]] == ["one", "two"]
            assert {o["metadata"]["namespace"] for o in side.access.list(
                CONFIG_MAP, label_selector="pick=ns")["items"]} >= {other, side.namespace}
            assert len(side.access.list(CONFIG_MAP, namespace=side.namespace,
                                        label_selector="pick=ns", limit=1)["items"]) == 1
            events = side.access.watch(CONFIG_MAP, namespace=side.namespace,
                                       label_selector="pick=ns",
                                       resource_version=listed["resourceVersion"],
                                       timeout_seconds=30)
            side.access.apply({**theirs, "data": {"a": "1"}})
            side.access.apply(side.config_map("three", {}, labels={"pick": "ns"}))
            first = next(e for e in events if e["type"] != "BOOKMARK")
            getattr(events, "close", lambda: None)()
            assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "three")

    def test_an_eviction_of_a_pod_deletes_it_and_of_a_missing_pod_is_404(
            self, side: Side) -> None:
        side.access.apply(pod_of(side, "evicted", "app:1"))
        eviction = {"apiVersion": "policy/v1", "kind": "Eviction",
                    "metadata": {"name": "evicted", "namespace": side.namespace}}
        before = side.access.stats.writes_by_resource["pods"]
        side.access.create(eviction, subresource="eviction", of=POD)
        assert side.access.stats.writes_by_resource["pods"] == before + 1
        live = side.access.get(pod_of(side, "evicted", "app:1"))
        assert live is None or live["metadata"].get("deletionTimestamp")
        gone = {**eviction, "metadata": {**eviction["metadata"], "name": "never"}}
        error = rejection(lambda: side.access.create(gone, subresource="eviction", of=POD))
        assert isinstance(error, NotFoundError), error

    def test_only_kinds_the_cluster_serves_are_served(self, side: Side) -> None:
        assert side.access.serves("apps/v1", "Deployment")
        assert not side.access.serves("gadgets.example.invalid/v1", "Gadget")


def pod_of(side: Side, name: str, image: str, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": side.namespace},
            "spec": {"containers": [container(image)], "restartPolicy": "Always",
                     "securityContext": {"runAsNonRoot": True,
                                         "seccompProfile": {"type": "RuntimeDefault"}},
                     **spec}}


def immutable_case(side: Side, case: str) -> tuple[Obj, Obj, str]:
    """(object, the same with an immutable field changed, the field the 422 names)."""
    if case == "Deployment selector":
        changed = side.deployment("sel", "b")
        return side.deployment("sel", "a"), changed, "spec.selector"
    if case == "Job template":
        def job(image: str) -> Obj:
            return {"apiVersion": "batch/v1", "kind": "Job",
                    "metadata": {"name": "job", "namespace": side.namespace},
                    "spec": {"suspend": True, "template": {"spec": {
                        "containers": [container(image)], "restartPolicy": "Never"}}}}
        return job("batch:1"), job("batch:2"), "spec.template.spec"
    if case == "Service clusterIP":
        def service(ip: str | None) -> Obj:
            spec: Obj = {"ports": [{"port": 80}], "selector": {"app": "x"}}
            return {"apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": "svc", "namespace": side.namespace},
                    "spec": {**spec, **({"clusterIP": ip} if ip else {})}}
        created = side.access.apply(service(None))
        ip = created["spec"]["clusterIP"]
        other = ip.rsplit(".", 1)[0] + "." + str(int(ip.rsplit(".", 1)[1]) % 200 + 17)
        side.access.delete(created)
        wait_for(lambda: side.access.get(created) is None, 30, "the probe Service gone")
        return service(ip), service(other), "spec.clusterIPs[0]"
    if case == "Pod spec":
        return (pod_of(side, "pod", "app:1"),
                pod_of(side, "pod", "app:1", terminationGracePeriodSeconds=7), "spec")
    claim: Obj = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                  "metadata": {"name": "data", "namespace": side.namespace},
                  "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "contract",
                           "resources": {"requests": {"storage": "1Gi"}}}}
    other = {**claim, "spec": {**claim["spec"], "accessModes": ["ReadWriteMany"]}}
    return claim, other, "spec"


class TestInMemory(Contract):
    """The in-memory cluster of the unit tests (:mod:`tests.support.kube_fake`)."""

    @pytest.fixture
    def side(self) -> Iterator[Side]:
        cluster = FakeCluster("contract")
        access = FakeAccess("contract", cluster)
        access.apply(WIDGET_CRD, manager=OTHER)
        for name in namespace_of(access):
            yield Side(access, name)


@pytest.fixture(scope="module")
def real_access(fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec]
                ) -> Iterator[Connection]:
    """A connection to one member cluster of the session fleet, serving Widgets."""
    spec = sorted(fleet_specs.values(), key=lambda s: s.name)[0]
    conn = Connection(spec.name, spec.context, str(fleet.kubeconfig))
    conn.apply(WIDGET_CRD, manager=OTHER)
    wait_for(lambda: any(c.get("type") == "Established" and c.get("status") == "True"
                         for c in ((conn.get(WIDGET_CRD) or {}).get("status") or {})
                         .get("conditions") or []), 60, "the Widget CRD established")
    wait_for(lambda: conn.rediscover() or conn.serves(WIDGET.api_version, WIDGET.kind), 30,
             "Widgets served")
    try:
        yield conn
    finally:
        conn.delete(WIDGET_CRD)
        conn.close()


@pytest.mark.e2e
class TestRealApiServer(Contract):
    """A member cluster of the session fleet."""

    @pytest.fixture
    def side(self, real_access: Connection) -> Iterator[Side]:
        for name in namespace_of(real_access):
            yield Side(real_access, name)
