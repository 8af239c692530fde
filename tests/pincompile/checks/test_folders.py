"""Folders bind owners: ``apps/<project>/`` holds only that project's workloads, platform
kinds live only under ``platform/``; ``pincompile.yaml`` moves the folders. Every way a
tree is compiled reports a violation: validate, compile, diff, the cache's incremental
check and compile, and the in-memory :class:`~pincompile.compiler.Compiler` (serve's)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pincompile.cli import cli
from pincompile.compiler import Compiler
from pincompile.source.readahead import read_ahead
from tests.support.specs import REPO_ROOT, doc, files, triples, validate, write_tree

PROJECT = doc("""
    apiVersion: pincompute.io/v1
    kind: Project
    metadata: {name: pwn}
    spec:
      policy: {allowHostNetwork: true, allowPrivileged: true, allowDaemons: true,
               allowHostPath: true}
    """)
#: Item 1 (a): a Project with every allow* on and a privileged host daemon in it.
ATTACK_PROJECT = PROJECT + "---\n" + doc("""
    apiVersion: pincompute.io/v1
    kind: PinterestDaemon
    metadata: {name: rootkit, project: pwn}
    spec:
      template:
        network: host
        tolerations: [{operator: Exists}]
        containers:
          - name: main
            image: registry.internal/pwn:1.0
            privileged: true
            resources: {cpu: 10m, memory: 16Mi}
        volumes: [{name: root, type: hostPath, path: /}]
    """)
#: Item 1 (b): a workload of another project, in the tenant's folder.
ATTACK_PROJECT_ADS = doc("""
    apiVersion: pincompute.io/v1
    kind: PinApp
    metadata: {name: reader, project: ads}
    spec:
      replicas: 1
      template:
        containers:
          - {name: main, image: "registry.internal/x:1.0", resources: {cpu: 10m, memory: 16Mi}}
    """)
#: Item 1 (c): a sidecar injected into every pod of every project.
ATTACK_SIDECAR = doc("""
    apiVersion: pincompute.io/v1
    kind: PinterestSideCar
    metadata: {name: everywhere}
    spec:
      inject: always
      container:
        name: everywhere
        image: registry.internal/pwn:1.0
        resources: {cpu: 10m, memory: 16Mi}
    """)
ATTACKS = {
    "project-and-daemon": (ATTACK_PROJECT, "apps/search/evil.yaml:2:7"),
    "other-project": (ATTACK_PROJECT_ADS, "apps/search/evil.yaml:3:35"),
    "sidecar-always": (ATTACK_SIDECAR, "apps/search/evil.yaml:2:7"),
}
SHOP_POD = doc("""
    apiVersion: pincompute.io/v1
    kind: PinPod
    metadata: {name: stray, project: infra}
    spec:
      containers: [{name: main, image: "registry.internal/app:1.0"}]
    """)


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout + result.stderr


def test_a_platform_kind_in_a_project_folder_is_refused() -> None:
    assert triples(validate(files({"apps/shop/pwn.yaml": PROJECT}))) == [
        ("apps/shop/pwn.yaml:2:7", "wrong-folder",
         "Project is a platform kind: it is declared under platform/, not in apps/shop/ "
         "(the folder of project 'shop')")]


def test_a_workload_of_another_project_is_refused_in_a_project_folder() -> None:
    assert triples(validate(files({"apps/shop/stray.yaml": SHOP_POD}))) == [
        ("apps/shop/stray.yaml:3:34", "wrong-folder",
         "apps/shop/ holds the specs of project 'shop'; this PinPod is in project 'infra'")]
    assert validate(files({"apps/infra/stray.yaml": SHOP_POD})) == []


@pytest.mark.parametrize("name", ["apps/stray.yaml", "tools/stray.yaml"])
def test_a_workload_outside_its_project_folder_is_refused(name: str) -> None:
    assert triples(validate(files({name: SHOP_POD}))) == [
        (f"{name}:3:34", "wrong-folder",
         "PinPod 'stray' of project 'infra' lies outside its project's folder apps/infra/")]


def test_a_platform_kind_outside_the_platform_folder_is_refused() -> None:
    assert triples(validate(files({"tenants/pwn.yaml": PROJECT}))) == [
        ("tenants/pwn.yaml:2:7", "wrong-folder",
         "Project is a platform kind: it is declared under platform/, not in "
         "tenants/pwn.yaml")]


def test_pincompile_yaml_moves_the_folders() -> None:
    moved = {name.replace("platform/", "infra/"): text for name, text in files().items()}
    assert validate({**moved, "pincompile.yaml": "platformFolder: infra\n"}) == []
    # without the file, the default folders bind: the platform specs are misplaced
    assert {d.code for d in validate(moved)} == {"wrong-folder"}
    both = {name.replace("apps/", "teams/apps/"): text for name, text in moved.items()}
    config = "platformFolder: infra\nappsFolder: teams/apps\n"
    assert validate({**both, "pincompile.yaml": config}) == []
    assert {d.code for d in validate({**both, "pincompile.yaml": "platformFolder: infra\n"})
            } == {"wrong-folder"}


def test_a_tree_without_either_folder_is_not_bound_unless_configured() -> None:
    flat = {f"flat-{i}.yaml": text for i, text in enumerate(files().values())}
    assert validate(flat) == []
    assert {d.code for d in validate({**flat, "pincompile.yaml": "{}\n"})} == {"wrong-folder"}


@pytest.mark.parametrize(("config", "expected"), [
    ("platformFolder: ../etc\n", ("pincompile.yaml:1:17", "platformFolder is '../etc'")),
    ("appsFolder: platform/apps\n", ("pincompile.yaml:1:13", "the apps folder 'platform/apps'")),
    ("platfromFolder: x\n", ("pincompile.yaml:1:1", "unknown setting 'platfromFolder'")),
    ("ownerHandle: acme\n", ("pincompile.yaml:1:14", "ownerHandle is 'acme'")),
    ("platformOwners: '@acme/platform'\n", ("pincompile.yaml:1:17", "platformOwners is a list")),
    ("ownerHandles: {team-shop: shop}\n", ("pincompile.yaml:1:27", "the handle of 'team-shop'")),
    ("appsFolder: [\n", ("pincompile.yaml:2:1", "")),
])
def test_an_invalid_pincompile_yaml_is_a_located_error(config: str, expected: tuple[str, str]
                                                       ) -> None:
    from pincompile.pipeline import run
    from tests.support.specs import load

    result = run(load(files({"pincompile.yaml": config})), revision="test")
    assert [(d.location(), d.message[:len(expected[1])]) for d in result.diagnostics] == [
        expected]


# --- the attacks of issue 24 item 1, on a copy of examples/, through every command ------------

@pytest.fixture
def examples(tmp_path: Path) -> Path:
    return Path(shutil.copytree(REPO_ROOT / "examples", tmp_path / "examples"))


@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("command", ["validate", "compile"])
def test_each_attack_exits_1_with_a_located_error(examples: Path, tmp_path: Path,
                                                  attack: str, command: str) -> None:
    text, where = ATTACKS[attack]
    write_tree(examples, {"apps/search/evil.yaml": text})
    args = [command, str(examples), "--no-cache"]
    if command == "compile":
        args += ["--out-dir", str(tmp_path / "out")]
    code, out = invoke(*args)
    assert code == 1
    assert f"{where}: error[wrong-folder]" in out
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["validate", "compile"])
def test_the_cache_reports_an_app_moved_to_another_project(examples: Path, tmp_path: Path,
                                                           command: str) -> None:
    """A clean run leaves a snapshot; an app file then edited into another project is
    checked incrementally, and the rule still holds."""
    cache = tmp_path / "cache"
    args = [command, str(examples), "--cache-dir", str(cache)]
    if command == "compile":
        args += ["--out-dir", str(tmp_path / "out")]
    assert invoke(*args)[0] == 0
    notebook = examples / "apps" / "search" / "relevance-notebook.yaml"
    notebook.write_text(notebook.read_text().replace("project: search", "project: ads"))
    code, out = invoke(*args)
    assert code == 1
    assert "apps/search/relevance-notebook.yaml:" in out and "error[wrong-folder]" in out


def test_the_cache_compiles_again_when_pincompile_yaml_changes(examples: Path,
                                                                tmp_path: Path) -> None:
    args = ["validate", str(examples), "--cache-dir", str(tmp_path / "cache")]
    assert invoke(*args)[0] == 0
    (examples / "pincompile.yaml").write_text("platformFolder: infra\n")
    code, out = invoke(*args)
    assert code == 1 and "platform/runtime.yaml:3:7: error[wrong-folder]" in out


def test_the_in_memory_compiler_reports_it_after_a_clean_compile(examples: Path) -> None:
    compiler = Compiler()
    assert compiler.compile(read=read_ahead(examples, None, 1), revision="a").ok
    notebook = examples / "apps" / "search" / "relevance-notebook.yaml"
    notebook.write_text(notebook.read_text().replace("project: search", "project: ads"))
    result = compiler.compile(read=read_ahead(examples, None, 1), revision="b")
    assert compiler.reused  # checked incrementally
    assert [(d.file, d.code) for d in result.diagnostics] == [
        ("apps/search/relevance-notebook.yaml", "wrong-folder")]
