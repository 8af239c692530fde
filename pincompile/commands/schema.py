"""``pincompile schema``: write the JSON Schemas editors use to complete and check specs."""

from __future__ import annotations

from pathlib import Path

import click

from pincompile.commands.common import moved_output_option
from pincompile.schemas import ALL_SCHEMA, write_all


@click.command()
@click.option("--out-dir", "directory", default="schemas", show_default=True, metavar="DIR",
              type=click.Path(file_okay=False, path_type=Path),
              help="Directory to write one <Kind>.json per kind (plus pincompute.json).")
@moved_output_option("--out-dir")
def schema(directory: Path, moved: str | None) -> None:
    """Write one JSON Schema (draft 2020-12) per kind, generated from the models.

    \b
    Point yaml-language-server at them from any spec file:
      # yaml-language-server: $schema=../../schemas/pincompute.json
    or in VS Code settings ("yaml.schemas") for apps/**/*.yaml.
    """
    written = write_all(Path(moved) if moved else directory)
    click.echo(f"wrote {len(written)} schemas to {directory}/ (any kind: {ALL_SCHEMA})")
