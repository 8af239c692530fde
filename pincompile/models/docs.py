"""Field descriptions from the docstrings written under model attributes.

pydantic's ``use_attribute_docstrings`` reads every model's source while the class is being
created, which costs a compile that never needs a description (bench/RESULTS.md,
"Tuning"). The models leave it off; :func:`describe_fields` attaches the same descriptions
(an explicit ``Field(description=...)`` wins, a subclass inherits its base's) before
anything renders a JSON Schema or CRD.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import typing
from functools import cache

from pydantic import BaseModel


def _attribute_docs(tree: ast.Module) -> dict[str, dict[str, str]]:
    """Top-level class name → {attribute: docstring} (a string right after ``name: T``)."""
    found: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        docs: dict[str, str] = {}
        for before, stmt in zip(node.body, node.body[1:], strict=False):
            if (isinstance(before, ast.AnnAssign) and isinstance(before.target, ast.Name)
                    and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str)):
                docs[before.target.id] = inspect.cleandoc(stmt.value.value)
        found[node.name] = docs
    return found


@cache
def _module_docs(module: str) -> dict[str, dict[str, str]]:
    try:
        source = inspect.getsource(importlib.import_module(module))
    except (OSError, TypeError):
        return {}
    return _attribute_docs(ast.parse(source))


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    todo = [root]
    while todo:
        cls = todo.pop()
        if cls not in found:
            found.append(cls)
            todo.extend(cls.__subclasses__())
    return sorted(found, key=lambda c: len(c.__mro__))  # bases before subclasses


@cache
def describe_fields() -> None:
    """Give every spec model's fields their attribute docstrings as descriptions (once)."""
    from pincompile import models  # noqa: F401  (every kind defined)
    from pincompile.models.base import Strict

    classes = _models(Strict)
    for cls in classes:
        own = _module_docs(cls.__module__).get(cls.__qualname__, {})
        annotated = inspect.get_annotations(cls)
        for name, info in cls.__pydantic_fields__.items():
            if info.description is not None:
                continue
            if name in own:
                info.description = own[name]
            elif name not in annotated:  # inherited: as described where it is declared
                for base in cls.__mro__[1:]:
                    declared = getattr(base, "__pydantic_fields__", {}).get(name)
                    if declared is not None:
                        info.description = declared.description
                        break
    for cls in _contained_first(classes):  # a model's schema embeds its fields' models'
        cls.model_rebuild(force=True)


def _field_models(cls: type[BaseModel]) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    todo: list[object] = [info.annotation for info in cls.__pydantic_fields__.values()]
    while todo:
        hint = todo.pop()
        if isinstance(hint, type) and issubclass(hint, BaseModel):
            found.append(hint)
        else:
            todo.extend(typing.get_args(hint))
    return found


def _contained_first(classes: list[type[BaseModel]]) -> list[type[BaseModel]]:
    """``classes`` ordered so that every model comes after the models its fields hold."""
    done: list[type[BaseModel]] = []
    visiting: set[type[BaseModel]] = set()

    def visit(cls: type[BaseModel]) -> None:
        if cls in done or cls in visiting:
            return
        visiting.add(cls)
        for inner in _field_models(cls):
            visit(inner)
        for base in cls.__mro__[1:]:
            if isinstance(base, type) and issubclass(base, BaseModel) and base in classes:
                visit(base)
        done.append(cls)

    for cls in classes:
        visit(cls)
    return done
