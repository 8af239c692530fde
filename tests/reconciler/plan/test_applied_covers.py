"""The record check's comparison of our values with the live ones: exact about types, and
about the one kind of field the API server leaves out at its zero value."""

from __future__ import annotations

import copy
from typing import Any

from reconciler.plan import applied


def priority_class(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": "pincompute-ondemand", "labels": {"tier": "ondemand"}},
            "value": 10000, **fields}


def as_served(obj: dict[str, Any]) -> dict[str, Any]:
    """What the API server returns for a PriorityClass we applied: ``globalDefault: false``
    left out (a plain bool with omitempty), bookkeeping added."""
    out = copy.deepcopy(obj)
    if out.get("globalDefault") is False:
        del out["globalDefault"]
    out["metadata"].update(resourceVersion="7", uid="u", generation=1)
    return out


def test_a_false_the_server_leaves_out_is_covered_but_not_a_removed_or_other_value() -> None:
    ours = applied.stamp(priority_class(globalDefault=False))
    assert applied.unchanged(ours, as_served(ours))
    made_default = {**as_served(ours), "globalDefault": True}  # someone else's change
    assert not applied.unchanged(ours, made_default)
    # only `false`, and only that field: `true` or another field absent is a change
    wanted_true = applied.stamp(priority_class(globalDefault=True))
    assert not applied.unchanged(wanted_true, _without(as_served(wanted_true),
                                                       "globalDefault"))
    described = applied.stamp(priority_class(globalDefault=False, preemptionPolicy="Never"))
    assert not applied.unchanged(described, _without(as_served(described),
                                                     "preemptionPolicy"))


def test_other_kinds_absent_false_fields_are_a_change() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"automountServiceAccountToken": False}}
    assert applied.covers(pod, copy.deepcopy(pod))
    assert not applied.covers(pod, {**pod, "spec": {}})
    top = {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "t"}, "flag": False}
    assert not applied.covers(top, _without(top, "flag"))


def test_values_compare_by_type_as_well() -> None:
    def covered(want: Any, have: Any) -> bool:
        meta = {"name": "x"}
        return applied.covers({"kind": "Thing", "metadata": meta, "spec": want},
                              {"kind": "Thing", "metadata": meta, "spec": have})

    assert covered({"a": True, "b": [1, {"c": "x"}]},
                   {"a": True, "b": [1, {"c": "x", "d": 0}], "e": 1})
    assert not covered({"a": True}, {"a": 1})          # a bool only by a bool
    assert not covered({"a": 0}, {"a": False})
    assert not covered({"b": [True]}, {"b": [1]})
    assert not covered({"a": None}, {})                 # a null we set, gone
    assert not covered({"a": {}}, {"a": []})
    assert not covered({"b": [1, 2]}, {"b": [1]})       # another length
    assert not covered({"a": "500m"}, {"a": "0.5"})     # another form
    assert covered({"a": 1}, {"a": 1.0})                # JSON numbers: one value


def _without(obj: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != key}
