"""``-o yaml`` of the reconciler's commands is the compiler's YAML: one style everywhere."""

from __future__ import annotations

import yaml

from pincompile.emit.output import to_yaml
from reconciler.commands.tables import render_list
from reconciler.plan import diff

ROWS = [{"name": "web", "phase": "Degraded", "message": "zone: east-a lost\nretrying",
         "ready": "2/3", "desired": {"cpu": "2200m", "flag": "yes", "none": None}}]


def test_status_rows_in_yaml_read_back_as_the_same_strings_by_a_yaml_1_1_reader() -> None:
    text = render_list("AppList", ROWS, "yaml")
    document = yaml.safe_load(text)
    assert document == {"apiVersion": "pincompute.io/v1", "kind": "AppList", "items": ROWS}
    assert text == to_yaml(document).rstrip()
    assert "    cpu: '2200m'\n" in text and "    flag: 'yes'\n" in text  # never a number/bool
    assert "  message: |-\n    zone: east-a lost\n    retrying\n" in text


def test_plan_diffs_show_objects_as_compile_writes_them() -> None:
    live = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            "data": {"app.conf": "a = 1\nb = 2\nc = 3\n", "port": "8080"}}
    desired = {**live, "data": {**live["data"], "app.conf": "a = 1\nb = 20\nc = 3\n"}}
    text = diff.unified(live, desired, "ConfigMap/c")
    changed = [line for line in text.splitlines()
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == ["-    b = 2", "+    b = 20"]  # one changed line of a block
    assert "   app.conf: |\n" in text and "   port: '8080'\n" in text
