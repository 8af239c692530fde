"""The repository's own settings: ``pincompile.yaml`` at the spec root (optional).

It says where the platform's specs and the projects' folders live (the folders that bind
owners, see :func:`pincompile.checks.folders.folder_owners`), who owns the platform, how
names become code-host handles (``pincompile codeowners``). Without the file, today's layout
applies: ``platform/`` and ``apps/<project>/``. The file is plain YAML without
``apiVersion`` or ``kind``, so the loader reads it as a foreign document; this module reads
it again and reports its problems as located ``repo-config`` errors.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pincompile.diagnostics import Diagnostic, Location
from pincompile.source.loader_ruamel import load_documents
from pincompile.verification import NONE, Verification, read_verification

CONFIG_FILE = "pincompile.yaml"
CODE = "repo-config"
#: A folder: slash-separated names of letters, digits, '-' and '_' (no dots: the folder is
#: also written as a regular expression in CODEOWNERS, where a dot matches anything).
_FOLDER = re.compile(r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$")
_HANDLE = re.compile(r"^(@[A-Za-z0-9][-A-Za-z0-9_.]*(/[A-Za-z0-9][-A-Za-z0-9_.]*)*"
                     r"|[^@\s]+@[^@\s]+\.[^@\s]+)$")
_KEYS = ("platformFolder", "appsFolder", "platformOwners", "ownerHandle", "ownerHandles",
         "canary", "slos")


@dataclass(frozen=True)
class RepoConfig:
    """The settings; the defaults are today's layout."""

    platform_folder: str = "platform"
    apps_folder: str = "apps"
    platform_owners: tuple[str, ...] = ()
    owner_handle: str = "@{owner}"
    """How an owner name that is not already a handle or an email becomes one."""
    owner_handles: Mapping[str, str] = field(default_factory=dict)
    """Owner name → handle, for names the pattern does not fit."""
    present: bool = False
    """Whether the tree has the file (its layout then binds even a tree without specs
    under either folder)."""

    def handle(self, owner: str) -> str:
        """The code-host handle of an owner name: ``owner_handles``, else the name itself
        when it is a handle (``@user``, ``@org/team``) or an email, else ``owner_handle``."""
        if owner in self.owner_handles:
            return self.owner_handles[owner]
        if "@" in owner:
            return owner
        return self.owner_handle.format(owner=owner)


DEFAULT = RepoConfig()


def valid_handle(handle: str) -> bool:
    """Whether ``handle`` is a code-host handle: ``@user``, ``@org/team`` or an email."""
    return bool(_HANDLE.match(handle))


def repo_config(sources: Mapping[str, str]) -> tuple[RepoConfig, list[Diagnostic]]:
    """The settings of a tree whose file texts are ``sources`` (name → text), and the
    problems of its ``pincompile.yaml``; the defaults when it has none (or it is invalid)."""
    text = sources.get(CONFIG_FILE)
    if text is None:
        return DEFAULT, []
    documents, problem, _ = load_documents(CONFIG_FILE, text)
    if problem is not None:
        return DEFAULT, [problem]
    if not documents:
        return RepoConfig(present=True), []
    doc = documents[0]
    problems: list[Diagnostic] = []
    if len(documents) > 1:
        problems.append(documents[1].start.error(
            CODE, f"{CONFIG_FILE} holds one document", "remove the '---' and what follows"))
    data = doc.data
    if not isinstance(data, dict):
        return DEFAULT, [doc.start.error(
            CODE, f"{CONFIG_FILE} is a mapping of settings: {', '.join(_KEYS)}")]

    def at(*path: str) -> Location:
        return doc.locate(path)

    problems += _unknown_keys(data, doc)
    problems += read_verification(doc)[1]  # the canary and the SLOs (serve reads them)
    values: dict[str, Any] = {}
    for key in ("platformFolder", "appsFolder"):
        if key in data:
            folder = data[key]
            if not isinstance(folder, str) or not _FOLDER.match(folder.strip("/")):
                problems.append(at(key).error(
                    CODE, f"{key} is {folder!r}; expected a folder relative to the spec "
                    "root, such as 'platform' or 'teams/apps'",
                    "names of letters, digits, '-' and '_', separated by '/'"))
            else:
                values[key] = folder.strip("/")
    platform = values.get("platformFolder", DEFAULT.platform_folder)
    apps = values.get("appsFolder", DEFAULT.apps_folder)
    if _nested(platform, apps):
        problems.append(at("appsFolder" if "appsFolder" in data else "platformFolder").error(
            CODE, f"the apps folder '{apps}' and the platform folder '{platform}' overlap",
            "give each its own folder: a tenant must not write into the platform's"))
    owners = _handles(data, "platformOwners", doc, problems)
    pattern = data.get("ownerHandle", DEFAULT.owner_handle)
    if not isinstance(pattern, str) or "{owner}" not in pattern or not _HANDLE.match(
            pattern.replace("{owner}", "x")) or pattern.count("{") + pattern.count("}") != 2:
        problems.append(at("ownerHandle").error(
            CODE, f"ownerHandle is {pattern!r}; expected a handle with '{{owner}}' in it",
            "e.g. '@acme/{owner}' (a team of the acme organization) or '{owner}@acme.com'"))
        pattern = DEFAULT.owner_handle
    mapped = data.get("ownerHandles", {})
    handles: dict[str, str] = {}
    if not isinstance(mapped, dict):
        problems.append(at("ownerHandles").error(
            CODE, "ownerHandles maps owner names to handles, e.g. {team-search: '@acme/search'}"))
    else:
        for name, handle in mapped.items():
            if not isinstance(handle, str) or not _HANDLE.match(handle):
                problems.append(at("ownerHandles", name).error(
                    CODE, f"the handle of '{name}' is {handle!r}; expected @user, @org/team "
                    "or an email"))
            else:
                handles[str(name)] = handle
    if problems:
        return DEFAULT, problems
    return RepoConfig(platform, apps, owners, pattern, handles, present=True), []


def _unknown_keys(data: dict[Any, Any], doc: Any) -> list[Diagnostic]:
    found = []
    for key in data:
        if key not in _KEYS:
            close = difflib.get_close_matches(str(key), _KEYS, 1)
            found.append(doc.locate([key], key=True).error(
                CODE, f"unknown setting '{key}' in {CONFIG_FILE}",
                f"did you mean '{close[0]}'?" if close else f"settings: {', '.join(_KEYS)}"))
    return found


def _handles(data: dict[Any, Any], key: str, doc: Any, problems: list[Diagnostic]
             ) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        problems.append(doc.locate([key]).error(
            CODE, f"{key} is a list of owners, e.g. ['@acme/platform']"))
        return ()
    return tuple(value)


def _nested(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def verification(sources: Mapping[str, str]) -> Verification:
    """The canary's policy and the SLOs of a tree whose file texts are ``sources``
    (:data:`~pincompile.verification.NONE` without a ``pincompile.yaml``, or with an
    invalid one: ``validate`` says why)."""
    text = sources.get(CONFIG_FILE)
    if text is None:
        return NONE
    documents, problem, _ = load_documents(CONFIG_FILE, text)
    if problem is not None or not documents:
        return NONE
    return read_verification(documents[0])[0]
