"""The jinja2 sandbox for templates that are more than ``{{ a.b }}`` lookups (imported only
when one is rendered: importing jinja2 costs a one-app compile about 70 ms)."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError
from jinja2.sandbox import SandboxedEnvironment

#: Longest string a template may produce (or build with ``*``).
MAX_OUTPUT = 256 * 1024


class TemplateLimitError(TemplateError):
    """A template tried to build something too large."""


class _Sandbox(SandboxedEnvironment):
    """The sandbox, with ``*`` and ``**`` bounded so a template cannot exhaust memory."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, op: str, left: Any, right: Any) -> Any:
        if op == "**":
            if isinstance(right, int | float) and abs(right) > 64:
                raise TemplateLimitError("exponent too large")
            return operator.pow(left, right)
        if op == "*":
            for seq, times in ((left, right), (right, left)):
                if (isinstance(seq, str | list | tuple) and isinstance(times, int)
                        and len(seq) * max(times, 0) > MAX_OUTPUT):
                    raise TemplateLimitError("repetition result too large")
            return operator.mul(left, right)
        return super().call_binop(context, op, left, right)


_ENV = _Sandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


@lru_cache(maxsize=4096)
def _compile(source: str) -> Template:
    return _ENV.from_string(source)


def render_jinja(text: str, values: Mapping[str, Any]) -> str:
    """``text`` rendered in the sandbox; jinja's errors (and :class:`TemplateLimitError`)
    are raised."""
    out = _compile(text).render(values)
    if len(out) > MAX_OUTPUT:
        raise TemplateLimitError(f"output longer than {MAX_OUTPUT} characters")
    return out
