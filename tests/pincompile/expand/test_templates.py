"""The template sandbox's fast path renders exactly what jinja renders."""

from __future__ import annotations

import pytest

from pincompile.expand.sandbox import _compile
from pincompile.expand.templates import _simple, _substitute

VALUES = {"app": {"name": "web", "project": "search", "replicas": 3, "on": True,
                  "labels": {"team": "a"}},
          "cluster": {"zone": "us-east-1a"}, "platform": {"endpoint": "https://x"}}


@pytest.mark.parametrize("text", [
    "--service={{ app.name }}", "{{app.name}}.{{ cluster.zone }}\n", "n={{ app.replicas }}",
    "{{ platform.endpoint }}/v1\n\n", "{{ app.on }}", "{{ app.labels }}", "{{ app.items }}",
    "{{ app.name | upper }}", "{{ app.name }}{# note #}", "a\r\nb {{ app.name }}",
    "{% if app.on %}x{% endif %}",
])
def test_fast_path_matches_jinja(text: str) -> None:
    parts = _simple(text)
    fast = _substitute(parts, VALUES) if parts is not None else None
    if fast is not None:
        assert fast == _compile(text).render(VALUES)


def test_fast_path_defers_errors_to_jinja() -> None:
    parts = _simple("{{ app.nope }}")
    assert parts is not None and _substitute(parts, VALUES) is None
