"""``parse_quantity`` gives the Kubernetes client's value, digit for digit (the client is the
reference; pincompile's own parser spares ``compile`` importing it)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kubernetes.utils.quantity import parse_quantity as reference

from pincompile.models.types import parse_quantity

NUMBERS = st.one_of(st.integers(0, 10**6).map(str),
                    st.tuples(st.integers(0, 9999), st.integers(0, 999)).map(
                        lambda t: f"{t[0]}.{t[1]}"),
                    st.integers(0, 999).map(lambda n: f".{n}"))
SUFFIXES = st.sampled_from(["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M",
                            "G", "T", "P", "E", "e3", "E-2", "e+1"])


@given(NUMBERS, SUFFIXES)
def test_quantities_parse_as_the_kubernetes_client_parses_them(number: str, suffix: str
                                                               ) -> None:
    text = number + suffix
    assert repr(parse_quantity(text)) == repr(reference(text))


@given(st.one_of(st.integers(0, 10**9), st.floats(0, 1e6, allow_nan=False)))
def test_numbers_too(value: float) -> None:
    assert repr(parse_quantity(value)) == repr(reference(value))
