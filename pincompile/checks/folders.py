"""Folder rules: a project's specs live in its folder, which its owners own."""

from __future__ import annotations

from collections.abc import Iterator

from pincompile.checks.specs import Specs
from pincompile.diagnostics import Diagnostic
from pincompile.models import (
    PinScaler,
    Workload,
)


def _under(file: str, folder: str) -> list[str] | None:
    """The path of ``file`` below ``folder`` as its parts, or None when it is not below."""
    return file[len(folder) + 1:].split("/") if file.startswith(folder + "/") else None


def folder_owners(specs: Specs) -> Iterator[Diagnostic]:
    """Folders bind owners: ``<apps>/<project>/**`` holds only the workloads and PinScalers of
    that project; platform kinds live only under ``<platform>/``. A tree without
    ``pincompile.yaml`` and without a spec under either folder (a single file, a flat demo)
    has no folders to bind."""
    config = specs.config
    platform, apps = config.platform_folder, config.apps_folder
    if not config.present and not any(
            _under(e.file, platform) is not None or _under(e.file, apps) is not None
            for e in specs.entries):
        return
    for entry in specs.entries:
        res, file = entry.resource, entry.file
        if _under(file, platform) is not None:
            continue  # the platform's own folder may hold anything
        tenant = isinstance(res, Workload | PinScaler)
        below = _under(file, apps)
        if not tenant:
            where_ = (f"in {apps}/{below[0]}/ (the folder of project '{below[0]}')"
                      if below is not None and len(below) > 1 else f"in {file}")
            yield entry.at("kind").error(
                "wrong-folder",
                f"{res.kind} is a platform kind: it is declared under {platform}/, not "
                f"{where_}", f"move it to {platform}/ (the platform team's folder, reviewed "
                "by its owners)")
            continue
        project = getattr(res.metadata, "project", "")
        if project not in specs.projects:
            continue  # reported by workload_projects
        if below is None or len(below) < 2:
            yield entry.at("metadata", "project").error(
                "wrong-folder",
                f"{res.kind} '{res.name}' of project '{project}' lies outside its project's "
                f"folder {apps}/{project}/", f"move the file to {apps}/{project}/, where the "
                "project's owners review it")
        elif below[0] != project:
            yield entry.at("metadata", "project").error(
                "wrong-folder",
                f"{apps}/{below[0]}/ holds the specs of project '{below[0]}'; this "
                f"{res.kind} is in project '{project}'",
                f"set metadata.project: {below[0]}, or move the file to {apps}/{project}/ "
                "(its owners review it there)")
