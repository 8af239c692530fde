"""How a conflict is put in words: who owns the object, which immutable field differs."""

from __future__ import annotations

from reconciler.plan import conflict

SELECTOR = ('Deployment.apps "newcomer" is invalid: spec.selector: Invalid value: '
            'v1.LabelSelector{MatchLabels:map[string]string{"app":"other"}, '
            'MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable')
HELD = {"metadata": {"name": "newcomer", "managedFields": [
    {"manager": "kubectl-create", "operation": "Update"},
    {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status"},
    {"manager": "kubectl-create", "operation": "Update"}]}}


def test_an_immutable_selector_is_named_with_the_owners_not_the_status_writers() -> None:
    assert conflict.is_immutable(SELECTOR)
    assert conflict.immutable_fields(SELECTOR) == ["spec.selector"]
    text = conflict.describe(HELD, SELECTOR)
    assert text == ("held by an object pincompile does not manage (field manager "
                    "kubectl-create); spec.selector differs and cannot change in place; use "
                    "--adopt to take it over")


def test_a_refusal_that_adopting_cannot_fix_says_so() -> None:
    refused = 'admission webhook "policy" denied the request: no'
    assert not conflict.is_immutable(refused)
    text = conflict.describe(HELD, refused, adopting=True)
    assert "applying over it is refused: admission webhook" in text
    assert text.endswith("--adopt cannot take it over: remove it, or rename the app")


def test_an_object_without_managed_fields_and_an_accepted_apply() -> None:
    assert conflict.describe({"metadata": {}}, None) == (
        "held by an object pincompile does not manage (no field manager recorded); "
        "use --adopt to take it over")


def test_a_services_cluster_ip_cannot_change_in_place() -> None:
    """As the API server words it (``test_access_contract.py`` holds it to one): before,
    the change was a refusal that only a hand could undo, not a replace."""
    refused = ('Service "web" is invalid: spec.clusterIPs[0]: Invalid value: '
               '[]string{"10.96.0.9"}: may not change once set')
    assert conflict.is_immutable(refused)
    assert conflict.immutable_fields(refused) == ["spec.clusterIPs[0]"]
