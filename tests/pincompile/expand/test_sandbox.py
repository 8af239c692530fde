"""The sandbox stops every template at its budget, as it runs, and renders everything else
exactly as jinja does."""

from __future__ import annotations

import time
from typing import Any

import pytest
from jinja2 import StrictUndefined
from jinja2.sandbox import SandboxedEnvironment

from pincompile.expand.sandbox import render_jinja
from pincompile.template_budget import BudgetExceeded, template_budget

VALUES: dict[str, Any] = {
    "app": {"name": "web", "project": "search", "labels": {"team": "a", "tier": "b"}},
    "cluster": {"name": "use1a", "zone": "us-east-1a"},
    "platform": {"endpoints": ["https://a", "https://b"], "port": 8080},
    "job": {"completions": 6, "shardCompletions": 3, "indexOffset": 3},
    "tree": [{"n": "a", "c": [{"n": "b", "c": []}]}, {"n": "d", "c": []}],
}


@pytest.mark.parametrize("text", [
    "{% for i in range(job.shardCompletions) %}shard-{{ job.indexOffset + i }}\n{% endfor %}",
    "{% for k, v in app.labels|dictsort %}{{ k }}={{ v }}{{ ',' if not loop.last }}{% endfor %}",
    "{{ platform.endpoints|join(',') }} {{ '%05d' % platform.port }} {{ '{:>8}'.format('x') }}",
    "{{ app.name ~ '-' ~ cluster.zone }} {{ [1, 2] + [3] }} {{ {'a': (1, 2)} }} {{ 2 ** 10 }}",
    "{% set ns = namespace(n=0) %}{% for e in platform.endpoints %}{% set ns.n = ns.n + 1 %}"
    "{% endfor %}{{ ns.n }}",
    "{% macro line(k) %}{{ k|upper|center(9) }}|{% endmacro %}{{ line('a') }}{{ line('bc') }}",
    "{% set body %}{{ app.name|indent(2, true) }}{% endset %}{{ body|replace('w', 'W') }}",
    "{{ range(4)|map('string')|join('-') }} {{ [[1], [2]]|sum(start=[]) }} {{ app|tojson }}",
    "{% for e in platform.endpoints if 'a' in e %}{{ loop.index }}/{{ loop.length }}"
    "{{ loop.cycle('x', 'y') }}{% else %}none{% endfor %}\n",
    "{% for x in tree recursive %}{{ x.n }}({{ loop(x.c) }}){{ loop.depth }}{% endfor %}",
    "{% filter upper %}abc{{ 'd' }}{% endfilter %}{% macro w() %}[{{ caller() }}]{% endmacro %}"
    "{% call w() %}in{% endcall %}",
    "{% set a, b = (1, 2) %}{{ a }}{{ b }}{% for a, b in [(1, 2)] %}{{ a + b }}{% endfor %}"
    "{{ [1, 2, 3][1:] }}{{ 'abc'[::-1] }}{{ (1,) }}{{ () }}",
])
def test_renders_what_jinja_renders(text: str) -> None:
    plain = SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True)
    assert render_jinja(text, VALUES) == plain.from_string(text).render(VALUES)


GIANT = 2 * 1024**3  # 2 GB, what each of these would build unbounded


@pytest.mark.parametrize(("text", "budget"), [
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
     "ITERATIONS"),
    ("{{ range(10**9)|list }}", "ITERATIONS"),
    ("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
     "{% endfor %}", "OUTPUT"),
    (f"{{{{ 'x' * {GIANT} }}}}", "OUTPUT"),
    ("{{ range(100000)|join('x' * 100000) }}", "OUTPUT"),
    (f"{{{{ 'x'|center({GIANT}) }}}}", "OUTPUT"),
    (f"{{{{ '%0{GIANT}d'|format(1) }}}}", "OUTPUT"),
    (f"{{{{ '%0{GIANT}d' % 1 }}}}", "OUTPUT"),
    (f"{{{{ '{{:>{GIANT}}}'.format(1) }}}}", "OUTPUT"),
    (f"{{{{ 'x'.ljust({GIANT}) }}}}", "OUTPUT"),
    ("{{ ('a\n' * 100000)|indent('x' * 100000) }}", "OUTPUT"),
    ("{{ ('x' * 200000)|replace('x', 'y' * 200000) }}", "OUTPUT"),
    ("{{ ('a' * 200000).translate({97: 'b' * 100000}) }}", "OUTPUT"),
    ("{{ ('a ' * 100000)|wordwrap(1, wrapstring='x' * 100000) }}", "OUTPUT"),
    ("{% for i in range(100000) %}{{ loop.cycle('a' * 100000, 'b') }}{% endfor %}", "OUTPUT"),
    ("{% set x %}{% for i in range(100000) %}{{ 'y' * 200000 }}{% endfor %}{% endset %}",
     "OUTPUT"),
    ("{% set l = [1] %}{% for i in range(60) %}{{ l.extend(l) }}{% endfor %}", "OUTPUT"),
    ("{{ dict(a='x' * 200000, b='y' * 200000) }}", "OUTPUT"),
    ("{{ [['x' * 100000] * 2] * 10000 }}", "OUTPUT"),
    ("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
     "{{ f(60) }}", "SECONDS"),
    ("{% set ns = namespace(a=[1], b=[1]) %}{% for i in range(60) %}"
     "{% set ns.a = [ns.a, ns.a] %}{% set ns.b = [ns.b, ns.b] %}{% endfor %}{{ ns.a == ns.b }}",
     None),
    ("{% set ns = namespace(x=10**64) %}{% for i in range(40) %}{% set ns.x = ns.x * ns.x %}"
     "{% endfor %}", None),
    ("{{ (10**64) ** 64 ** 64 }}", None),
    (f"{{{{ [1]|batch({GIANT}, 'x')|list }}}}", "OUTPUT"),
    (f"{{{{ [1]|slice({GIANT}, 'x')|list }}}}", "OUTPUT"),
    (f"{{{{ app|tojson(indent={GIANT}) }}}}", None),
])
def test_every_template_stops_within_its_budget(text: str, budget: str | None) -> None:
    start = time.monotonic()
    with pytest.raises(BudgetExceeded) as caught:
        render_jinja(text, VALUES)
    elapsed = time.monotonic() - start
    if budget is not None:
        assert f"$PINCOMPILE_TEMPLATE_{budget}" in str(caught.value)
    # the time budget is checked between steps, and no step is long
    assert elapsed < template_budget().seconds + 1.5, (elapsed, str(caught.value))


def test_the_environment_sets_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = "{% for i in range(50) %}{{ i }}{% endfor %}"
    monkeypatch.setenv("PINCOMPILE_TEMPLATE_ITERATIONS", "20")
    monkeypatch.setenv("PINCOMPILE_TEMPLATE_OUTPUT", "1Ki")
    template_budget.cache_clear()
    try:
        with pytest.raises(BudgetExceeded, match="budget of 20 iterations"):
            render_jinja(loop, VALUES)
        with pytest.raises(BudgetExceeded, match="output budget of 1024 characters"):
            render_jinja("{{ 'x' * 1025 }}", VALUES)
    finally:
        monkeypatch.undo()
        template_budget.cache_clear()
    assert render_jinja(loop, VALUES).startswith("0123")
