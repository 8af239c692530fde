"""The three-zone fleet of ``fixtures/zones`` (copied to a temporary folder to change it),
compiled, and the command line run in-process."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from click.testing import CliRunner, Result

from pincompile.capacity import compile_tree
from pincompile.cli import cli
from pincompile.pipeline import Result as Compiled

FIXTURE = Path(__file__).parent / "fixtures" / "zones"
CLUSTERS = "platform/clusters/clusters.yaml"


def copy_fleet(into: Path) -> Path:
    """A copy of the fixture under ``into``."""
    root = into / "zones"
    shutil.copytree(FIXTURE, root)
    return root


def set_cpu(root: Path, cluster: str, cpu: str) -> None:
    """Change one cluster's ``capacity.cpu`` in place."""
    path = root / CLUSTERS
    text = path.read_text()
    head, _, rest = text.partition(f"name: {cluster}\n")
    rest = re.sub(r'cpu: "\d+"', f'cpu: "{cpu}"', rest, count=1)
    path.write_text(head + f"name: {cluster}\n" + rest)


def set_replicas(root: Path, app: str, replicas: int) -> None:
    path = root / "apps" / "shop" / f"{app}.yaml"
    path.write_text(re.sub(r"replicas: \d+", f"replicas: {replicas}", path.read_text()))


def compiled(root: Path) -> Compiled:
    result = compile_tree(root)
    assert result.ok, result.diagnostics
    return result


def line_of(root: Path, file: str, pattern: str, after: str = "") -> int:
    """The 1-based line of the first line matching ``pattern`` after the line holding
    ``after``."""
    lines = (root / file).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if after in line)
    return next(i for i in range(start, len(lines)) if re.search(pattern, lines[i])) + 1


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)
