"""``pincompile crds``: CustomResourceDefinitions so the host cluster can store the specs."""

from __future__ import annotations

from pathlib import Path

import click

from pincompile.commands.common import moved_output_option
from pincompile.crds import GROUP, PROJECT_LABEL, all_crds, to_yaml
from pincompile.models import KINDS


@click.command()
@click.option("--out-dir", "directory", default=None, metavar="DIR",
              type=click.Path(file_okay=False, path_type=Path),
              help="Write one <plural>.pincompute.io.yaml per CRD into this directory "
              "(stale ones are removed) instead of printing them.")
@moved_output_option("--out-dir")
@click.option("--kind", "kinds", multiple=True, metavar="KIND",
              type=click.Choice(list(KINDS)), help="Only this kind (repeatable), e.g. PinApp.")
def crds(directory: Path | None, moved: str | None, kinds: tuple[str, ...]) -> None:
    """Print the CustomResourceDefinitions of every pincompute.io kind.

    One apiextensions.k8s.io/v1 CRD per kind (group pincompute.io, version v1), with the
    spec schema generated from the same models `validate` uses, a status subresource for
    the status the reconciler aggregates over member clusters, and printer columns for
    kubectl get. Platform kinds (Cluster, Project, PinterestSideCar, RuntimeProfile) are
    cluster-scoped; workloads and PinScaler live in their project's namespace and carry the
    label pincompute.io/project (custom resources cannot hold metadata.project).

    \b
    Examples:
      pincompile crds | kubectl --context host apply --server-side -f -
      pincompile crds --out-dir deploy/crds/
      pincompile crds --kind PinApp --kind PinScaler
      kubectl --context host get pincompute -A     # every kind, via the category
    """
    directory = directory or (Path(moved) if moved else None)
    documents = all_crds(list(kinds) or None)
    if directory is None:
        click.echo(to_yaml(documents), nl=False)
        return
    directory.mkdir(parents=True, exist_ok=True)
    wanted = {f"{d['metadata']['name']}.yaml": d for d in documents}
    if not kinds:
        for old in directory.glob(f"*.{GROUP}.yaml"):
            if old.name not in wanted:
                old.unlink()
    for name, document in wanted.items():
        path = directory / name
        text = to_yaml([document])
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    click.echo(f"wrote {len(wanted)} CRD{'s' if len(wanted) != 1 else ''} to {directory}/ "
               f"(workloads carry the label {PROJECT_LABEL})")
