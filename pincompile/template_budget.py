"""The budget every template render gets: time, output size and loop iterations.

The defaults hold any sensible template by orders of magnitude; an environment variable
overrides each (they reach forked workers too):

=================================  =========  ==============================================
``PINCOMPILE_TEMPLATE_SECONDS``    ``1``      wall-clock seconds one render may take
``PINCOMPILE_TEMPLATE_OUTPUT``     ``256Ki``  characters one render may write (also the
                                              largest value it may build)
``PINCOMPILE_TEMPLATE_ITERATIONS`` ``100000`` ``for`` iterations in one render, all loops
=================================  =========  ==============================================

The budget is checked while the template runs (see :mod:`pincompile.expand.sandbox`): every
loop iteration, call, filter, operator and write passes through :class:`Meter`.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from functools import lru_cache

SECONDS_ENV = "PINCOMPILE_TEMPLATE_SECONDS"
OUTPUT_ENV = "PINCOMPILE_TEMPLATE_OUTPUT"
ITERATIONS_ENV = "PINCOMPILE_TEMPLATE_ITERATIONS"
ENV = (SECONDS_ENV, OUTPUT_ENV, ITERATIONS_ENV)
_UNITS = {"": 1, "k": 1000, "ki": 1024, "kib": 1024, "m": 1000**2, "mi": 1024**2,
          "mib": 1024**2}


@dataclass(frozen=True)
class TemplateBudget:
    """What one render may spend."""

    seconds: float = 1.0
    output: int = 256 * 1024
    iterations: int = 100_000


class BudgetExceeded(Exception):
    """A template went over its budget (the message names which)."""


def _number(name: str, text: str, *, integer: bool) -> float:
    raw = text.strip().lower()
    digits = raw.rstrip("kmib")
    unit = raw[len(digits):]
    try:
        value = float(digits) * _UNITS[unit] if integer else float(raw)
    except (ValueError, KeyError):
        raise ValueError(f"${name}: '{text}' is not a {'size' if integer else 'number'}"
                         f"{' (e.g. 256Ki)' if integer else ' of seconds'}") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"${name}: '{text}' must be above 0")
    return value


@lru_cache(maxsize=1)
def template_budget() -> TemplateBudget:
    """The budget: the defaults, overridden by the environment; ValueError for a bad value."""
    default = TemplateBudget()
    env = os.environ
    return TemplateBudget(
        seconds=_number(SECONDS_ENV, env[SECONDS_ENV], integer=False)
        if env.get(SECONDS_ENV) else default.seconds,
        output=int(_number(OUTPUT_ENV, env[OUTPUT_ENV], integer=True))
        if env.get(OUTPUT_ENV) else default.output,
        iterations=int(_number(ITERATIONS_ENV, env[ITERATIONS_ENV], integer=True))
        if env.get(ITERATIONS_ENV) else default.iterations)


class Meter:
    """One render's spending, checked against the budget at every step."""

    __slots__ = ("budget", "deadline", "iterations", "written")

    def __init__(self, budget: TemplateBudget) -> None:
        self.budget = budget
        self.deadline = time.monotonic() + budget.seconds
        self.iterations = 0
        self.written = 0

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise BudgetExceeded(f"template ran longer than its time budget of "
                                 f"{self.budget.seconds:g} s (${SECONDS_ENV})")

    def iterate(self) -> None:
        self.iterations += 1
        if self.iterations > self.budget.iterations:
            raise BudgetExceeded(f"template loops more than its budget of "
                                 f"{self.budget.iterations} iterations (${ITERATIONS_ENV})")
        self.tick()

    def write(self, size: int) -> None:
        self.written += size
        if self.written > self.budget.output:
            raise BudgetExceeded(f"template writes more than its output budget of "
                                 f"{self.budget.output} characters (${OUTPUT_ENV})")
        self.tick()


_current = threading.local()


def current() -> Meter | None:
    """The meter of the render running in this thread (None outside a render)."""
    meter: Meter | None = getattr(_current, "meter", None)
    return meter


class metered:
    """``with metered(budget):`` — a render in this thread spends from a fresh meter."""

    def __init__(self, budget: TemplateBudget) -> None:
        self.meter = Meter(budget)

    def __enter__(self) -> Meter:
        self.outer = current()
        _current.meter = self.meter
        return self.meter

    def __exit__(self, *_exc: object) -> None:
        _current.meter = self.outer
