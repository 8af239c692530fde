"""Size checks made before a template operation runs, so no single step (one C-level call)
can build a value larger than the output budget: the memory a render uses stays bounded,
and every step is short enough for the time budget to be checked between steps.

A value's *size* counts the characters of its strings and one per item, element or key
(shared parts count each time they appear): its text form is at most a small multiple.
"""

from __future__ import annotations

import re
import string
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from jinja2 import Undefined
from jinja2.utils import Namespace

from pincompile.template_budget import OUTPUT_ENV, BudgetExceeded, current, template_budget


def limit() -> int:
    """The largest value (and output) a render may build."""
    meter = current()
    return meter.budget.output if meter is not None else template_budget().output


def too_large(what: str) -> BudgetExceeded:
    return BudgetExceeded(f"{what} would be larger than the template output budget of "
                          f"{limit()} characters (${OUTPUT_ENV})")


def measure(value: Any, what: str = "a value") -> int:
    """``value``'s size; BudgetExceeded as soon as it passes the limit (so measuring costs
    at most the limit's worth of steps, even for a structure that refers to itself)."""
    if isinstance(value, str):
        size = len(value)
        if size > limit():
            raise too_large(what)
        return size
    most = limit()
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str | bytes | bytearray):
            total += len(item) or 1
        elif isinstance(item, bool | float | Undefined) or item is None:
            total += 1
        elif isinstance(item, int):
            total += 1 + item.bit_length() // 32
        elif isinstance(item, Namespace):
            total += 1
            stack.append(object.__getattribute__(item, "_Namespace__attrs"))
        elif isinstance(item, Mapping):
            total += 1 + len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, Collection) and not isinstance(item, range):
            total += 1 + len(item)
            stack.extend(item)
        else:
            total += 1
        if total > most:
            raise too_large(what)
    return total


def text(value: Any) -> str:
    """``str(value)``, refused when it would be too large."""
    if isinstance(value, str):
        if len(value) > limit():
            raise too_large("the text of a value")
        return value
    if type(value) in _SMALL:  # at most MAX_INT_BITS, or as Python limits it
        return str(value)
    measure(value, "the text of a value")
    value = str(value)
    if len(value) > limit():
        raise too_large("the text of a value")
    return value


_SMALL = frozenset({int, float, bool, type(None)})


def check(size: int, what: str) -> None:
    if size > limit():
        raise too_large(what)


def _sequence(value: Any) -> bool:
    return isinstance(value, str | list | tuple)


# --- operators -------------------------------------------------------------------------------

#: Largest integer (in bits) ``*`` and ``**`` may make: far beyond any sensible number.
MAX_INT_BITS = 4096


def check_binop(op: str, left: Any, right: Any) -> None:
    """Refuse ``left op right`` when its result would be too large."""
    if op == "**" and isinstance(left, int) and isinstance(right, int):
        if right > 0 and max(left.bit_length(), 1) * right > MAX_INT_BITS:
            raise BudgetExceeded(f"number too large: ** {right} would make more than "
                                 f"{MAX_INT_BITS} bits")
    elif op == "*":
        if isinstance(left, int) and isinstance(right, int) and (
                left.bit_length() + right.bit_length() > MAX_INT_BITS):
            raise BudgetExceeded(f"number too large: * would make more than {MAX_INT_BITS} bits")
        for seq, times in ((left, right), (right, left)):
            if _sequence(seq) and isinstance(times, int) and times > 1:
                check(measure(seq) * times, "a repetition (*)")
    elif op == "+" and _sequence(left) and _sequence(right):
        check(measure(left) + measure(right), "a concatenation (+)")
    elif op == "%" and isinstance(left, str):
        check_percent(left, right)


_PERCENT = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?([a-zA-Z%])")


def check_percent(fmt: str, args: Any) -> None:
    """Refuse ``fmt % args`` when its result could be too large."""
    widest = 0
    specs = 0
    for match in _PERCENT.finditer(fmt):
        if "*" in (match.group(1), match.group(2)):
            raise BudgetExceeded("a '*' width in a % format is not allowed in templates")
        widest = max(widest, int(match.group(1) or 0), int(match.group(2) or 0))
        specs += 1
    check(widest, "a % format width")
    values = list(args.values()) if isinstance(args, Mapping) else (
        list(args) if isinstance(args, tuple) else [args])
    largest = max((measure(v) for v in values), default=0)
    check(len(fmt) + specs * (widest + largest), "a % format")


def check_format(fmt: str, args: Iterable[Any], kwargs: Mapping[str, Any]) -> None:
    """Refuse ``fmt.format(*args, **kwargs)`` when its result could be too large."""
    values = [*args, *kwargs.values()]
    largest = max((measure(v) for v in values), default=0)
    widest_arg = max((v for v in values if isinstance(v, int)), default=0)
    total = len(fmt)
    for _literal, field, spec, _conversion in string.Formatter().parse(fmt):
        if field is None:
            continue
        numbers = [int(n) for n in re.findall(r"\d+", spec or "")]
        widest = max([*numbers, widest_arg if spec and "{" in spec else 0, 0])
        check(widest, "a format width")
        total += widest + largest
    check(total, "a str.format result")


#: Widest ``|tojson`` indent: each level of nesting repeats it on every line.
MAX_JSON_INDENT = 8


# --- methods and filters that can make their result far larger than their input ------------

def _width(value: Any) -> int:
    return value if isinstance(value, int) else 0


def check_method(name: str, owner: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Refuse a call of a str method that would make too large a string."""
    if not isinstance(owner, str):
        return
    if name in ("center", "ljust", "rjust", "zfill") and args:
        check(_width(args[0]), f"str.{name}()")
    elif name == "expandtabs":
        size = _width(args[0] if args else kwargs.get("tabsize", 8))
        check(len(owner) + owner.count("\t") * size, "str.expandtabs()")
    elif name == "join" and args:
        items = list(args[0]) if not isinstance(args[0], Collection) else args[0]
        check(measure(items) + len(owner) * max(len(items) - 1, 0), "str.join()")
    elif name == "replace" and len(args) >= 2:
        check_replace(owner, args[0], args[1], args[2] if len(args) > 2 else -1)
    elif name == "translate" and args and isinstance(args[0], Mapping):
        longest = max((measure(v) for v in args[0].values()), default=1)
        check(len(owner) * max(longest, 1), "str.translate()")


def check_replace(value: str, old: Any, new: Any, count: Any = -1) -> None:
    if not (isinstance(old, str) and isinstance(new, str)):
        return
    found = value.count(old)
    if isinstance(count, int) and count >= 0:
        found = min(found, count)
    check(len(value) + found * max(len(new) - len(old), 0), "replace()")


def check_filter(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Refuse a filter call whose result could be too large (its inputs are measured by the
    caller)."""
    value = args[0] if args else None
    rest = args[1:]

    def arg(i: int, key: str, default: Any) -> Any:
        return rest[i] if len(rest) > i else kwargs.get(key, default)

    if name == "center":
        check(_width(arg(0, "width", 80)), "center()")
    elif name == "indent":
        width = arg(0, "width", 4)
        size = len(width) if isinstance(width, str) else _width(width)
        check(len(text(value)) + (text(value).count("\n") + 1) * size, "indent()")
    elif name == "format" and isinstance(value, str):
        check_percent(value, kwargs or tuple(rest))
    elif name == "replace" and isinstance(value, str):
        check_replace(value, arg(0, "old", ""), arg(1, "new", ""), arg(2, "count", -1))
    elif name == "wordwrap":
        body = text(value)
        wrap = arg(3, "wrapstring", "\n")
        breaks = len(body) // max(_width(arg(0, "width", 79)), 1) + body.count(" ") + 1
        check(len(body) + breaks * len(text(wrap or "")), "wordwrap()")
    elif name in ("batch", "slice"):  # |batch fills up to its size; |slice loops per slice
        check(_width(arg(0, "linecount" if name == "batch" else "slices", 1)), f"|{name}")
    elif name == "tojson":
        indent = arg(0, "indent", None)
        if (len(indent) if isinstance(indent, str) else _width(indent)) > MAX_JSON_INDENT:
            raise BudgetExceeded(f"|tojson indent wider than {MAX_JSON_INDENT}")
    elif name == "truncate":
        check(len(text(value)) + len(text(arg(2, "end", "..."))), "truncate()")
