"""Turn loaded YAML documents into typed specs; every schema error gets a precise location."""

from __future__ import annotations

import datetime
import difflib
import types
import typing
from collections.abc import Iterable
from typing import Any

import pydantic
from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails

from pincompile.catalog import Catalog, Entry
from pincompile.diagnostics import Diagnostic
from pincompile.models import API_VERSION, KINDS
from pincompile.source.loader import API_GROUP, Document, LoadResult

_SKIP_KINDS_HINT = "pincompile reads documents with apiVersion pincompute.io/v1"
#: Specs are read by their camelCase names only: ``gpu_type`` is an unknown field, not an
#: alias of ``gpuType`` (the models accept Python names for code that builds them).
_BY_ALIAS_ONLY: dict[str, Any] = (
    {"by_name": False} if tuple(map(int, pydantic.VERSION.split(".")[:2])) >= (2, 11) else {})
BY_ALIAS_ONLY = _BY_ALIAS_ONLY
_BOUND_ERRORS = ("greater_than_equal", "less_than_equal", "greater_than", "less_than")


def parse(loaded: LoadResult) -> tuple[Catalog, list[Diagnostic]]:
    """Validate every document against its kind's model."""
    catalog = Catalog()
    diagnostics: list[Diagnostic] = list(loaded.diagnostics)
    for doc in loaded.documents:
        entry, problems = parse_document(doc)
        diagnostics.extend(problems)
        if entry is not None:
            catalog.add(entry)
    return catalog, diagnostics


def _is_ours(data: dict[str, Any]) -> bool:
    api = data.get("apiVersion")
    kind = data.get("kind")
    if isinstance(api, str) and api.split("/")[0].endswith(API_GROUP.split(".")[0] + ".io"):
        return True
    if isinstance(api, str) and difflib.get_close_matches(api.split("/")[0], [API_GROUP], 1, 0.85):
        return True
    return isinstance(kind, str) and kind in KINDS


def parse_document(doc: Document) -> tuple[Entry[Any] | None, list[Diagnostic]]:
    """One document → (typed entry or None, diagnostics). Foreign documents are ignored."""
    data = doc.data
    if not isinstance(data, dict):
        if isinstance(data, list) and any(isinstance(x, dict) and _is_ours(x) for x in data):
            return None, [doc.start.error(
                "not-a-mapping",
                "a document must be a mapping with apiVersion, kind, metadata, spec; this one "
                "is a list", "write each spec as its own document, separated by '---'")]
        return None, []  # a list or a scalar: someone else's YAML (e.g. an Ansible playbook)
    if not _is_ours(data):
        return None, []  # other YAML in the repository (CI config, kustomize, ...) is not ours
    if doc.problems:
        return None, list(doc.problems)
    api = data.get("apiVersion")
    if api != API_VERSION:
        where = doc.locate(["apiVersion"]) if "apiVersion" in data else doc.start
        shown = "missing" if api is None else f"'{api}'"
        return None, [where.error("api-version", f"apiVersion is {shown}; expected '{API_VERSION}'",
                                  _SKIP_KINDS_HINT)]
    kind = data.get("kind")
    model = KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        where = doc.locate(["kind"]) if "kind" in data else doc.start
        close = difflib.get_close_matches(str(kind), list(KINDS), 1) if kind else []
        hint = f"did you mean '{close[0]}'?" if close else f"kinds: {', '.join(KINDS)}"
        shown = "missing" if kind is None else f"'{kind}'"
        return None, [where.error("unknown-kind", f"kind is {shown}; not a pincompute.io kind",
                                  hint)]
    try:
        resource = model.model_validate(data, **_BY_ALIAS_ONLY)
    except ValidationError as exc:
        return None, list(_diagnostics(doc, model, exc.errors(include_url=False)))
    except (RecursionError, ValueError, TypeError) as exc:
        return None, [doc.start.error("invalid", f"cannot read this {kind}: {exc}")]
    return Entry(resource, doc), []


# --- pydantic errors → located diagnostics ----------------------------------------------------

def _diagnostics(doc: Document, model: type[BaseModel], errors: list[ErrorDetails]
                 ) -> Iterable[Diagnostic]:
    grouped: dict[tuple[Any, ...], list[ErrorDetails]] = {}
    for err in errors:
        loc = tuple(err["loc"])
        at = (err.get("ctx") or {}).get("at")
        if isinstance(at, tuple):  # a model validator pointing at one of its fields
            loc += at
        path = _data_path(doc.data, loc)
        if loc[-1] == "[key]" and path and str(path[-1]) == str(loc[-2]):
            path = (*path, "[key]")  # a bad mapping key: point at the key, not its value
        grouped.setdefault(path, []).append(err)
    for path, errs in grouped.items():
        if any(len(other) > len(path) and other[: len(path)] == path and other[-1] != "[key]"
               for other in grouped):
            continue  # a union member matched deeper: its error is the one to show
        yield _one_diagnostic(doc, model, path, errs)


located_errors = _diagnostics
"""pydantic's errors of ``model`` validating ``doc``'s data, as located diagnostics."""


def _data_path(data: Any, loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """Drop pydantic's type tags (union members, validators) from an error location."""
    path: list[int | str] = []
    node = data
    for i, part in enumerate(loc):
        if isinstance(node, dict) and not isinstance(part, str) and part not in node:
            part = str(part)
        if isinstance(node, dict) and isinstance(part, str) and part not in node:
            # pydantic names a non-string key (1, null, [a]) by its text
            part = next((k for k in node if not isinstance(k, str) and str(k) == part), part)
        if (isinstance(node, dict) and part in node) or (
                isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)):
            path.append(part)
            node = node[part]  # type: ignore[index]  # list index checked just above
        elif i == len(loc) - 1 and isinstance(node, dict) and isinstance(part, str) and (
            "[" not in part
        ):
            path.append(part)  # a missing or extra key
        # otherwise: a tag such as 'custom' or 'list[str]' or 'function-after[...]'
    return tuple(path)


def _one_diagnostic(doc: Document, model: type[BaseModel], path: tuple[int | str, ...],
                    errs: list[ErrorDetails]) -> Diagnostic:
    if path and path[-1] == "[key]":
        path = path[:-1]
        field_name = f"{dotted(path[:-1]) or 'document'} key '{path[-1]}'"
        return doc.locate(path, key=True).error(
            _code(errs[0]["type"]), f"{field_name}: {' or '.join(_unique_messages(errs))}",
            _literal_hint(errs, path[-1]))
    if any(e["type"] in _BOUND_ERRORS or e["type"] == "value_error" for e in errs):
        # e.g. `targetPort: 0` (int | name): the int member's bound is what went wrong
        errs = [e for e in errs if not e["type"].endswith(("_type", "_parsing"))] or errs
    err = errs[0]
    etype = err["type"]
    field_name = dotted(path) or "document"
    hint: str | None = None
    if etype == "invalid_key" and path:
        return doc.locate(path, key=True).error(
            "invalid-type", f"{_parent(path)}: key {_shown(path[-1])} is not a string",
            "write keys as plain names (quote them if they look like numbers)")
    if etype == "union_tag_invalid":
        ctx = err.get("ctx") or {}
        tags = [t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",")]
        tag = str(ctx.get("tag", ""))
        close = difflib.get_close_matches(tag, tags, 1, 0.6)
        return doc.locate((*path, "type")).error(
            "invalid-enum", f"{dotted((*path, 'type'))}: '{tag}' is not one of: {', '.join(tags)}",
            f"did you mean '{close[0]}'?" if close else None)
    if etype == "extra_forbidden":
        where = doc.locate(path, key=True)
        bad = str(path[-1])
        allowed = sorted(_allowed_fields(model, path[:-1]))
        close = [to_camel(bad)] if to_camel(bad) in allowed else (
            difflib.get_close_matches(bad, allowed, 1, 0.6))
        hint = f"did you mean '{close[0]}'?" if close else (
            f"allowed here: {', '.join(allowed)}" if allowed else None)
        return where.error("unknown-field", f"unknown field '{bad}' in {_parent(path)}", hint)
    where = doc.locate(path)
    if etype == "missing":
        return where.error("missing-field", f"missing required field '{path[-1]}' in "
                           f"{_parent(path)}")
    messages = _unique_messages(errs)
    hint = _literal_hint(errs, err.get("input"))
    code = "invalid-value" if len(messages) > 1 else _code(etype)
    return where.error(code, f"{field_name}: {' or '.join(messages)}", hint)


def _unique_messages(errs: list[ErrorDetails]) -> list[str]:
    messages: list[str] = []
    for e in errs:
        msg = _message(e)
        if msg not in messages:
            messages.append(msg)
    return messages


def _literal_hint(errs: list[ErrorDetails], value: Any) -> str | None:
    """``did you mean 'Forbid'?`` for a misspelt enum value (or 'nvidia.com/gpu' for 'gpu')."""
    for e in errs:
        if e["type"] == "literal_error":
            expected = _literal_options(e)
            close = [x for x in expected if x.endswith(f"/{value}")] or (
                difflib.get_close_matches(str(value), expected, 1, 0.6))
            if close:
                return f"did you mean '{close[0]}'?"
    return None


def dotted(path: Iterable[int | str]) -> str:
    """``spec.template.containers[0].image`` for a data path."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _parent(path: tuple[int | str, ...]) -> str:
    return dotted(path[:-1]) or "the document"


def _literal_options(err: ErrorDetails) -> list[str]:
    ctx = err.get("ctx") or {}
    expected = str(ctx.get("expected", ""))
    return [p.strip().strip("'") for p in expected.replace(" or ", ",").split(",") if p.strip()]


def _message(err: ErrorDetails) -> str:
    etype = err["type"]
    value = err.get("input")
    shown = _shown(value)
    if etype == "value_error":
        return str(err["msg"]).removeprefix("Value error, ")
    if etype == "literal_error":
        return f"{shown} is not one of: {', '.join(_literal_options(err))}"
    if etype in ("string_type",):
        extra = (" (quote it)" if isinstance(value, int | float | datetime.date)
                 or _tagged_text(value) is not None else "")
        return f"expected a string, got {shown}{extra}"
    if etype in ("int_type", "int_parsing", "int_from_float"):
        return f"expected a whole number, got {shown}"
    if etype in ("bool_type", "bool_parsing"):
        return f"expected true or false, got {shown}"
    if etype in ("list_type",):
        return f"expected a list, got {shown}"
    if etype in ("dict_type", "model_type", "model_attributes_type"):
        return f"expected a mapping, got {shown}"
    if etype == "too_short":
        return "needs at least one item"
    if etype in _BOUND_ERRORS:
        return f"{shown}: {str(err['msg']).lower()}"
    if etype in ("string_too_long",):
        return f"{shown} is too long: {str(err['msg']).lower()}"
    if etype == "union_tag_invalid":
        return f"{err['msg']!s}"
    if etype == "union_tag_not_found":
        return "needs a 'type' field"
    return str(err["msg"])


def _shown(value: Any) -> str:
    """A value as the user wrote it (YAML reads ``2024-01-01`` as a date, ``yes`` as text)."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, datetime.date):
        return value.isoformat(sep=" ") if isinstance(value, datetime.datetime) else (
            value.isoformat())
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null"
    text = _tagged_text(value)
    return repr(value if text is None else text)


def _tagged_text(value: Any) -> str | None:
    """The text of a scalar YAML reads as a tagged value (a bare ``=``: YAML 1.1's value
    key), else None."""
    text = getattr(value, "value", None)
    return text if getattr(value, "tag", None) is not None and isinstance(text, str) else None


def _code(etype: str) -> str:
    return {"literal_error": "invalid-enum", "value_error": "invalid-value"}.get(
        etype, "invalid-type" if etype.endswith(("_type", "_parsing")) else "invalid-value")


def _allowed_fields(model: type[BaseModel], path: tuple[int | str, ...]) -> set[str]:
    """Field names (aliases) accepted at ``path`` inside ``model``."""
    current: list[Any] = [model]
    for part in path:
        nxt: list[Any] = []
        for tp in current:
            for t in _unwrap(tp):
                if isinstance(t, type) and issubclass(t, BaseModel) and isinstance(part, str):
                    for name, f in t.model_fields.items():
                        if part in (f.alias, name):
                            nxt.append(f.annotation)
                elif isinstance(part, int) and typing.get_origin(t) is list:
                    nxt.extend(typing.get_args(t))
                elif isinstance(part, str) and typing.get_origin(t) is dict:
                    nxt.append(typing.get_args(t)[1])
        current = nxt
    names: set[str] = set()
    for tp in current:
        for t in _unwrap(tp):
            if isinstance(t, type) and issubclass(t, BaseModel):
                names.update(f.alias or n for n, f in t.model_fields.items())
    return names


def _unwrap(tp: Any) -> list[Any]:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        return [x for a in typing.get_args(tp) for x in _unwrap(a)]
    return [tp]
