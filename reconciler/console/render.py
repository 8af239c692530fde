"""The console's Jinja2 templates (package data), autoescaped."""

from __future__ import annotations

from functools import cache
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape


@cache
def environment() -> Environment:
    env = Environment(loader=PackageLoader("reconciler.console", "templates"),
                      autoescape=select_autoescape(["html"]), undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["query"] = lambda params: urlencode(params)
    env.filters["part"] = lambda value: quote(str(value), safe="")  # one segment of a path
    env.filters["short"] = lambda revision: str(revision)[:12]
    env.filters["stamp"] = lambda when: when.strftime("%Y-%m-%d %H:%M:%S UTC") if when else ""
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
