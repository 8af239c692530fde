"""``-o`` names the output format in every command; the flags it replaced (``compile -o DIR``,
``--format``, ``--errors``, ``diff --format``, ``validate -o human``, ``codeowners|crds|schema
-o PATH``) still work for a release, each with one note on stderr."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pincompile.cli import cli

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
CLUSTER = "use1a-general-01"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def notes(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("note: ")]


def test_compile_writes_a_folder_with_out_dir_and_says_nothing_about_it(tmp_path: Path) -> None:
    result = run("compile", str(EXAMPLES), "--out-dir", str(tmp_path / "out"), "-q")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "placement.json").is_file()
    assert notes(result) == []


def test_compile_o_dir_still_writes_the_folder_with_one_deprecation_note(tmp_path: Path
                                                                         ) -> None:
    old = run("compile", str(EXAMPLES), "-o", str(tmp_path / "old"), "-q")
    new = run("compile", str(EXAMPLES), "--out-dir", str(tmp_path / "new"), "-q")
    assert old.exit_code == new.exit_code == 0, old.output
    assert notes(old) == [f"note: -o {tmp_path / 'old'} is deprecated and will be removed in "
                          f"the next release; use --out-dir {tmp_path / 'old'} (-o now names "
                          "the output format: yaml|json)"]
    assert sorted(p.relative_to(tmp_path / "old") for p in (tmp_path / "old").rglob("*")) == \
        sorted(p.relative_to(tmp_path / "new") for p in (tmp_path / "new").rglob("*"))
    assert old.stdout == ""


def test_compile_without_out_dir_streams_and_o_json_is_the_format() -> None:
    as_yaml = run("compile", str(EXAMPLES), "--cluster", CLUSTER, "-q")
    as_json = run("compile", str(EXAMPLES), "--cluster", CLUSTER, "-q", "-o", "json")
    legacy = run("compile", str(EXAMPLES), "--cluster", CLUSTER, "-q", "-o", "-",
                 "--format", "json")
    assert as_yaml.exit_code == as_json.exit_code == legacy.exit_code == 0
    assert as_yaml.stdout.startswith("---\n# ")
    kinds = [item["kind"] for item in json.loads(as_json.stdout)["items"]]
    assert "Deployment" in kinds and "Namespace" in kinds
    assert legacy.stdout == as_json.stdout
    assert [n.split(" is deprecated")[0] for n in notes(legacy)] == [
        "note: -o -", "note: --format json"]
    assert notes(as_json) == []


def invalid_tree(tmp_path: Path) -> Path:
    root = tmp_path / "specs"
    (root / "apps").mkdir(parents=True)
    (root / "apps" / "web.yaml").write_text(
        "apiVersion: pincompute.io/v1\nkind: PinApp\nmetadata: {name: web, project: x}\n"
        "spec: {replicas: -1}\n", encoding="utf-8")
    return root


def test_compile_o_json_prints_errors_as_json_like_the_old_errors_flag(tmp_path: Path
                                                                       ) -> None:
    root = invalid_tree(tmp_path)
    new = run("compile", str(root), "-o", "json")
    old = run("compile", str(root), "--errors", "json")
    assert new.exit_code == old.exit_code == 1
    diagnostics = json.loads(new.stdout)
    assert diagnostics and {"file", "line", "column", "message"} <= set(diagnostics[0])
    assert json.loads(old.stdout) == diagnostics
    assert notes(old) == ["note: --errors json is deprecated and will be removed in the next "
                          "release; use -o json (-o json prints errors as JSON too)"]
    human = run("compile", str(root))
    assert human.exit_code == 1 and human.stdout == "" and "web.yaml:4:" in human.stderr


def test_compile_refuses_a_directory_given_twice(tmp_path: Path) -> None:
    result = run("compile", str(EXAMPLES), "-o", str(tmp_path / "a"), "--out-dir",
                 str(tmp_path / "b"))
    assert result.exit_code == 2
    assert "give the directory once, as --out-dir" in result.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_diff_format_folds_into_o(tmp_path: Path) -> None:
    import shutil

    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES, repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@x", "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "one")
    new = run("diff", str(repo), "--base", "HEAD", "-o", "json")
    old = run("diff", str(repo), "--base", "HEAD", "--format", "json")
    assert new.exit_code == old.exit_code == 0, new.output
    assert json.loads(new.stdout) == json.loads(old.stdout)
    assert notes(new) == []
    assert notes(old) == ["note: --format json is deprecated and will be removed in the next "
                          "release; use -o json"]
    assert run("diff", str(repo), "--base", "HEAD", "-o", "yaml").exit_code == 2


def test_validate_takes_text_and_the_old_human_name() -> None:
    text = run("validate", str(EXAMPLES), "-o", "text")
    human = run("validate", str(EXAMPLES), "-o", "human")
    assert text.exit_code == human.exit_code == 0
    assert text.stdout.startswith("ok: ") and human.stdout.startswith("ok: ")
    assert notes(human) == ["note: -o human is deprecated and will be removed in the next "
                            "release; use -o text"]


@pytest.mark.parametrize(("command", "new"), [
    (["crds"], "--out-dir"), (["schema"], "--out-dir"),
    (["codeowners", str(EXAMPLES)], "--out-file"),
])
def test_path_options_moved_off_o(tmp_path: Path, command: list[str], new: str) -> None:
    target = tmp_path / ("CODEOWNERS" if new == "--out-file" else "out")
    old = run(*command, "-o", str(target / "old" if new == "--out-dir" else target))
    assert old.exit_code == 0, old.output
    assert notes(old) == [f"note: -o {target / 'old' if new == '--out-dir' else target} is "
                          "deprecated and will be removed in the next release; use "
                          f"{new} {target / 'old' if new == '--out-dir' else target} "
                          "(-o names an output format)"]
    fresh = target / "new" if new == "--out-dir" else tmp_path / "CODEOWNERS.new"
    now = run(*command, new, str(fresh))
    assert now.exit_code == 0 and notes(now) == []
    if new == "--out-dir":
        assert sorted(p.name for p in (target / "old").iterdir()) == \
            sorted(p.name for p in fresh.iterdir()) != []
    else:
        assert target.read_text() == fresh.read_text() != ""


@pytest.mark.parametrize(("command", "formats"), [
    (["compile"], "yaml|json"), (["validate"], "text|json"),
    (["diff"], "text|markdown|json"), (["status"], "table|wide|json|yaml|name"),
    (["plan"], "text|markdown|json"), (["apply"], "table|wide"),
    (["get"], "table|wide|json|yaml|name"), (["events"], "table|wide|json|yaml"),
    (["explain"], "table|wide|yaml|json"),
    (["history"], "table|wide|json|yaml"), (["version"], "text|json"),
])
def test_help_lists_the_formats_and_what_each_prints(command: list[str], formats: str
                                                     ) -> None:
    result = run(*command, "--help")
    assert result.exit_code == 0
    flat = " ".join(result.output.split())
    assert f"-o, --output {formats}" in flat
    assert all(f"{name}:" in flat for name in formats.split("|"))


def test_an_unknown_format_is_a_usage_error_naming_the_choices() -> None:
    result = run("validate", str(EXAMPLES), "-o", "xml")
    assert result.exit_code == 2
    assert "'xml' is not one of text, json" in result.stderr


def test_explain_tables_fit_the_width_and_wide_keeps_every_reason() -> None:
    args = ["explain", "PinApp/search/search-api", "--root", str(EXAMPLES)]
    narrow = CliRunner().invoke(cli, args, env={"COLUMNS": "80"})
    wide = CliRunner().invoke(cli, [*args, "-o", "wide"], env={"COLUMNS": "80"})
    assert narrow.exit_code == wide.exit_code == 0
    rows = [line for line in narrow.stdout.splitlines() if "project-placement" in line]
    assert rows and all(len(line) <= 80 and line.endswith("…") for line in rows)
    full = [line for line in wide.stdout.splitlines() if "project-placement" in line]
    assert len(full) == len(rows) and all("…" not in line and len(line) > 80 for line in full)
