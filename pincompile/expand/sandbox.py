"""The jinja2 sandbox for templates that are more than ``{{ a.b }}`` lookups (imported only
when one is rendered: importing jinja2 is a noticeable share of a one-app compile;
bench/RESULTS.md, "Tuning").

Every render spends from a budget (:mod:`pincompile.template_budget`) checked while it runs:
the parsed template is rewritten so that each loop iteration, write, ``~``, list or dict
literal passes through a hook, and the sandbox's own hooks (calls, attributes, operators,
filters) check the time too. Before each step that could build something large, its
result's size is bounded (:mod:`pincompile.expand.bounded`), so memory stays bounded and no
single step runs long enough to overshoot the time budget by much.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterator, Mapping
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, Template, nodes
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import _PassArg
from jinja2.visitor import NodeTransformer

from pincompile.expand.bounded import (
    check,
    check_binop,
    check_filter,
    check_format,
    check_method,
    measure,
    text,
)
from pincompile.template_budget import (
    ITERATIONS_ENV,
    BudgetExceeded,
    Meter,
    current,
    metered,
    template_budget,
)

#: Kept for callers that name the old error.
TemplateLimitError = BudgetExceeded


def _tick() -> Meter | None:
    meter = current()
    if meter is not None:
        meter.tick()
    return meter


def _hook(function: Callable[..., Any]) -> Callable[..., Any]:
    function._budget_hook = True  # type: ignore[attr-defined]
    return function


class _Counted:
    """An iterable whose iteration spends the render's loop budget (sized if its source
    is, so ``loop.length`` does not iterate it twice)."""

    def __init__(self, source: Any) -> None:
        self.source = source

    def __len__(self) -> int:
        return len(self.source)

    def __iter__(self) -> Iterator[Any]:
        meter = current()
        for item in self.source:
            if meter is not None:
                meter.iterate()
            yield item


class _Metered(NodeTransformer):
    """Rewrites a parsed template so its steps pass through the environment's hooks."""

    @staticmethod
    def _call(hook: str, node: nodes.Node, *args: Any) -> nodes.Call:
        call = nodes.Call(nodes.EnvironmentAttribute(hook), list(args), [], None, None)
        call.set_lineno(node.lineno or 1)
        return call

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = self._call("budget_loop", node, node.iter)
        return node

    def visit_Output(self, node: nodes.Output) -> nodes.Node:
        self.generic_visit(node)
        lines: dict[int, list[nodes.Expr]] = {}  # one write per line keeps errors' lines
        for child in node.nodes:
            lines.setdefault(child.lineno, []).append(child)
        node.nodes = [self._call("budget_write", same[0], *same) for same in lines.values()]
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return self._call("budget_concat", node, *node.nodes)

    def _value(self, node: nodes.Expr) -> nodes.Node:
        self.generic_visit(node)
        return self._call("budget_value", node, node)

    visit_List = visit_Dict = _value

    def visit_Tuple(self, node: nodes.Tuple) -> nodes.Node:
        return self._value(node) if node.ctx == "load" else self.generic_visit(node)


def _bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (the filter ``name``), refusing inputs and results that are too large."""
    skip = 1 if _PassArg.from_obj(function) is not None else 0

    @functools.wraps(function)
    def bounded(*given: Any, **kwargs: Any) -> Any:
        _tick()
        args = list(given)
        if name in ("join", "sum") and len(args) > skip and not isinstance(
                args[skip], Collection | Mapping):
            args[skip] = list(args[skip])  # a generator (|map...): its items are counted below
        for value in (*args[skip:], *kwargs.values()):
            measure(value, f"the input of |{name}")
        if name == "join" and len(args) > skip:
            sep = args[skip + 1] if len(args) > skip + 1 else kwargs.get("d", "")
            check(len(text(sep)) * max(len(args[skip]) - 1, 0), "|join")
        if name == "sum":
            return _sum(function, args, skip, kwargs)
        check_filter(name, tuple(args[skip:]), kwargs)
        result = function(*args, **kwargs)
        measure(result, f"the result of |{name}")
        return result

    return bounded


def _sum(function: Callable[..., Any], args: list[Any], skip: int,
         kwargs: dict[str, Any]) -> Any:
    """``|sum``: numbers as jinja sums them; anything else (lists) one checked ``+`` at a
    time, so the time budget is checked between the steps."""
    start = args[skip + 2] if len(args) > skip + 2 else kwargs.get("start", 0)
    attribute = args[skip + 1] if len(args) > skip + 1 else kwargs.get("attribute")
    if isinstance(start, int | float):
        return function(*args, **kwargs)
    if attribute is not None:
        raise BudgetExceeded("|sum of non-numbers with attribute= is not allowed in templates")
    total = start
    for item in args[skip]:
        _tick()
        check_binop("+", total, item)
        total = total + item
    return total


class _Sandbox(SandboxedEnvironment):
    """The sandbox, with every step checked against the render's budget."""

    intercepted_binops = frozenset({"+", "*", "**", "%"})

    def __init__(self) -> None:
        super().__init__(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
        self.filters = {name: _bounded_filter(name, f) for name, f in self.filters.items()}
        self.globals.pop("lipsum", None)  # makes up to any amount of text
        self.globals["range"] = _range

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        template: nodes.Template = _Metered().visit(super()._parse(source, name, filename))
        return template

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _tick()
        check_binop(operator, left, right)
        return self.binop_table[operator](left, right)

    def getattr(self, obj: Any, attribute: str) -> Any:
        _tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _tick()
        return super().getitem(obj, argument)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(__obj, "_budget_hook", False):
            return __obj(*args)
        _tick()
        target = getattr(__obj, "__wrapped__", __obj)  # str.format comes wrapped
        name = getattr(target, "__name__", "")
        owner = getattr(target, "__self__", None)
        if isinstance(owner, str) and name in ("format", "format_map"):
            check_format(owner, args if name == "format" else (),
                         kwargs if name == "format" else (args[0] if args else {}))
        check_method(name, owner, args, kwargs)
        result = SandboxedEnvironment.call(__self, __context, __obj, *args, **kwargs)
        measure(result, f"the result of {name or 'a call'}()")
        if isinstance(owner, list | dict | set):
            measure(owner, f"a {type(owner).__name__} the template grows")
        return result

    @_hook
    def budget_loop(self, iterable: Any) -> _Counted:
        return _Counted(iterable)

    @_hook
    def budget_write(self, *values: Any) -> str:
        """What one ``Output`` node writes (its text and expressions), counted."""
        meter = current()
        most = meter.budget.output if meter is not None else template_budget().output
        parts = [v if type(v) is str and len(v) <= most else text(v) for v in values]
        size = sum(map(len, parts))
        if meter is not None:
            meter.write(size)  # before the parts are joined
        else:
            check(size, "a write")
        return parts[0] if len(parts) == 1 else "".join(parts)

    @_hook
    def budget_concat(self, *values: Any) -> str:
        _tick()
        parts = [text(v) for v in values]
        check(sum(map(len, parts)), "a concatenation (~)")
        return "".join(parts)

    @_hook
    def budget_value(self, value: Any) -> Any:
        _tick()
        measure(value, "a list or dict")
        return value


def _range(*args: int) -> range:
    """``range``, no longer than the loop budget allows."""
    numbers = range(*args)
    meter = current()
    most = meter.budget.iterations if meter is not None else template_budget().iterations
    if len(numbers) > most:
        raise BudgetExceeded(f"range of {len(numbers)} numbers is more than the template loop "
                             f"budget of {most} iterations (${ITERATIONS_ENV})")
    return numbers


_ENV = _Sandbox()


@lru_cache(maxsize=4096)
def _compile(source: str) -> Template:
    return _ENV.from_string(source)


def render_jinja(text: str, values: Mapping[str, Any]) -> str:
    """``text`` rendered in the sandbox within the template budget; jinja's errors (and
    :class:`~pincompile.template_budget.BudgetExceeded`) are raised."""
    with metered(template_budget()):
        return _compile(text).render(values)
