"""The loader: strict where YAML is lax, silent about YAML that is not ours."""

from __future__ import annotations

import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from pincompile.compiler import compile_path
from pincompile.source.loader import (
    MAX_CAREFUL_BYTES,
    MAX_EXPANDED_BYTES,
    MAX_EXPANDED_NODES,
    MAX_FILE_BYTES,
    MAX_INT_DIGITS,
    load_text,
    load_tree,
)
from tests.support.specs import FIXTURE, doc, files, triples, validate, write_tree

POD = doc("""
    apiVersion: pincompute.io/v1
    kind: PinPod
    metadata: {name: NAME, project: shop}
    spec:
      containers: [{name: main, image: "registry.internal/app:1.0"}]
    """)


def pod(name: str) -> str:
    return POD.replace("NAME", name)


# --- what the YAML itself may be ---------------------------------------------------------

def test_duplicate_key_names_both_lines() -> None:
    text = doc("""
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata:
          name: one
          project: shop
          name: two
        spec:
          containers: [{name: main, image: "registry.internal/app:1.0"}]
        """)
    result = load_text("dup.yaml", text)
    assert triples(result.diagnostics) == [
        ("dup.yaml:6:3", "duplicate-key", 'duplicate key "name" (first defined at line 4)')]
    assert result.diagnostics[0].hint == "each key may appear once in a mapping"


def test_duplicate_key_in_flow_mapping() -> None:
    text = "apiVersion: pincompute.io/v1\nmetadata: {name: a, project: b, name: c}\n"
    assert triples(load_text("dup.yaml", text).diagnostics) == [
        ("dup.yaml:2:33", "duplicate-key", 'duplicate key "name" (first defined at line 2)')]


def test_non_utf8_is_located_at_the_byte() -> None:
    raw = b"apiVersion: pincompute.io/v1\nkind: PinPod\nmetadata: {name: caf\xe9}\n"
    result = load_text("latin1.yaml", raw)
    assert triples(result.diagnostics) == [
        ("latin1.yaml:3:21", "not-utf8", "file is not valid UTF-8 (byte 0xe9)")]
    assert result.documents == []


def test_binary_file_is_refused() -> None:
    raw = b"apiVersion: pincompute.io/v1\nkind: \x00\x01\x02"
    result = load_text("blob.yaml", raw)
    assert triples(result.diagnostics) == [
        ("blob.yaml:2:7", "binary-file", "file is binary (contains a NUL byte), not YAML text")]


def test_utf8_byte_order_mark_is_accepted() -> None:
    result = load_text("bom.yaml", "\ufeff".encode() + pod("bom").encode())
    assert result.diagnostics == []
    assert result.documents[0].data["metadata"]["name"] == "bom"


def test_file_too_large_is_refused_without_parsing() -> None:
    result = load_text("huge.yaml", b"#" * (MAX_FILE_BYTES + 1))
    assert [d.code for d in result.diagnostics] == ["file-too-large"]


HEADER = "apiVersion: pincompute.io/v1\nkind: PinApp\nmetadata: {name: big}\nspec:\n"


def _big(tail: str, size: int = 4 * MAX_CAREFUL_BYTES) -> str:
    """A spec of ``size`` bytes of plain keys, then ``tail``."""
    lines, written, i = [HEADER + "  env:"], 0, 0
    while written < size:
        lines.append(f"    k{i}: value-{i}")
        written, i = written + len(lines[-1]) + 1, i + 1
    return "\n".join(lines) + "\n" + tail


@pytest.mark.parametrize(("tail", "code"), [
    ("    k0: again\n", "duplicate-key"),
    ("    m: &m {a: 1}\n    n: {<<: *m, b: 2}\n", "file-too-large"),
    ("    x: [1, 2\n", "yaml-syntax"),
])
def test_a_large_file_the_fast_reader_gives_up_on_costs_at_most_a_second(
        tail: str, code: str) -> None:
    """Over MAX_CAREFUL_BYTES, what needs the slow reference reader (a duplicate key, a
    merge key, a syntax error) is a located error from the fast one: 1 MB took 9-18 CPU
    seconds in the reference reader, a 16 MB file minutes. This 4 MB file takes the fast
    one about 0.9 CPU-s; the bound leaves room for a CPU shared with CI's fleets."""
    text = _big(tail)
    started = time.process_time()
    result = load_text("big.yaml", text.encode())
    took = time.process_time() - started
    (problem,) = result.diagnostics
    assert problem.code == code, problem
    assert problem.file == "big.yaml" and problem.line >= text.count("\n") - 1, problem
    if code == "duplicate-key":
        assert problem.message == 'duplicate key "k0"'
    assert took < 3.0, f"{took:.1f} CPU-s for {len(text)} bytes"


def test_a_large_file_that_is_not_a_spec_is_still_not_ours() -> None:
    text = _big("    k0: again\n").replace("pincompute.io/v1", "v1").replace("PinApp", "Foo")
    assert load_text("other.yaml", text.encode()).diagnostics == []


def test_yaml_syntax_error_is_located() -> None:
    text = "apiVersion: pincompute.io/v1\nkind: PinPod\nmetadata:\n\tname: tabbed\n"
    result = load_text("tab.yaml", text)
    assert [(d.location(), d.code) for d in result.diagnostics] == [("tab.yaml:4:1", "yaml-syntax")]
    assert "'\\t'" in result.diagnostics[0].message


def test_yaml_version_directive_is_read() -> None:
    result = load_text("v11.yaml", "%YAML 1.1\n---\n" + pod("old-yaml"))
    assert result.diagnostics == []
    assert result.documents[0].line == 3


def test_deep_flow_nesting_is_refused_quickly() -> None:
    text = "apiVersion: pincompute.io/v1\nkind: PinPod\nspec: " + "[" * 5000 + "]" * 5000
    started = time.perf_counter()
    result = load_text("deep.yaml", text)
    assert time.perf_counter() - started < 0.5
    assert triples(result.diagnostics) == [
        ("deep.yaml:3:107", "yaml-too-deep",
         "YAML nesting is too deep: more than 100 levels of [ ] and { }")]


def test_deep_block_nesting_is_an_error_not_a_crash() -> None:
    text = "apiVersion: pincompute.io/v1\nkind: PinPod\nspec:\n" + "".join(
        " " * (i + 1) + "a:\n" for i in range(1200))
    assert [d.code for d in load_text("deep.yaml", text).diagnostics] == ["yaml-too-deep"]


def test_unsupported_tag_in_a_spec() -> None:
    text = pod("tagged").replace('image: "registry', 'image: !docker "registry')
    assert triples(validate(files({"apps/shop/tagged.yaml": text}))) == [
        ("apps/shop/tagged.yaml:5:36", "yaml-tag",
         "YAML tag '!docker' is not supported in specs")]


def test_plain_tags_are_accepted() -> None:
    text = pod("tagged").replace("spec:", "spec: !!map")
    assert validate(files({"apps/shop/tagged.yaml": text})) == []


def test_anchors_and_aliases_within_bounds_are_fine() -> None:
    text = doc("""
        apiVersion: pincompute.io/v1
        kind: PinPod
        metadata: {name: anchored, project: shop, labels: &labels {team: shop}}
        spec:
          containers:
            - {name: main, image: "registry.internal/app:1.0", resources: &res {cpu: "1"}}
            - {name: helper, image: "registry.internal/helper:1.0", resources: *res}
        """)
    assert validate(files({"apps/shop/anchored.yaml": text})) == []


# --- billion laughs ---------------------------------------------------------------------------

BILLION_LAUGHS = doc("""
    apiVersion: pincompute.io/v1
    kind: PinPod
    metadata: {name: lol, project: shop}
    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
    h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
    i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
    spec: {containers: [{name: main, image: "registry.internal/app:1.0", args: *i}]}
    """)


def test_billion_laughs_is_refused_fast_and_small(tmp_path: Path) -> None:
    compile_path(write_tree(tmp_path / "warm-up", files()), revision="test")  # imports
    write_tree(tmp_path / "repo", {"lol.yaml": BILLION_LAUGHS})
    started = time.perf_counter()
    result = compile_path(tmp_path / "repo", revision="test")
    assert time.perf_counter() - started < 0.5
    tracemalloc.start()
    started = time.perf_counter()
    try:
        result = compile_path(tmp_path / "repo", revision="test")
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert triples(result.diagnostics) == [
        ("lol.yaml:1:1", "alias-bomb",
         f"document expands to more than {MAX_EXPANDED_NODES} nodes through YAML aliases; "
         "refused")]
    assert elapsed < 1.0  # tracing allocations slows Python down
    assert peak < 50 * 2**20


def test_alias_bomb_in_a_later_document_keeps_the_earlier_ones() -> None:
    result = load_text("two.yaml", pod("first") + "---\n" + BILLION_LAUGHS)
    assert [d.data["metadata"]["name"] for d in result.documents] == ["first"]
    assert [(d.location(), d.code) for d in result.diagnostics] == [("two.yaml:7:1", "alias-bomb")]


# --- documents in files -----------------------------------------------------------------------

def test_multi_document_file_with_empty_documents() -> None:
    text = "# header comment\n---\n" + pod("one") + "---\n---\n# only a comment\n---\n" + pod("two")
    result = load_text("multi.yaml", text)
    assert result.diagnostics == []
    assert [(d.data["metadata"]["name"], d.line) for d in result.documents] == [
        ("one", 3), ("two", 12)]
    broken = text.replace("name: two", "name: Two")
    assert [d.location() for d in validate(files({"apps/shop/multi.yaml": broken}))] == [
        "apps/shop/multi.yaml:14:18"]


def test_empty_and_comment_only_files_are_fine() -> None:
    for text in ("", "\n\n", "# nothing here\n", "---\n", "--- \n...\n"):
        result = load_text("empty.yaml", text)
        assert (result.documents, result.diagnostics) == ([], []), text


def test_each_error_of_a_multi_document_file_is_reported() -> None:
    text = pod("Bad-One") + "---\n" + pod("good") + "---\n" + pod("bad-two").replace(
        "project: shop", "project: nope")
    assert [(d.location(), d.code) for d in validate(files({"apps/shop/m.yaml": text}))] == [
        ("apps/shop/m.yaml:3:18", "invalid-value"), ("apps/shop/m.yaml:15:36", "unknown-project")]


# --- the tree ---------------------------------------------------------------------------------

FOREIGN = {
    "ci/workflow.yaml": doc("""
        name: ci
        on: {push: {branches: [main]}}
        jobs:
          test: {runs-on: ubuntu-latest, steps: [{run: make test}]}
        """),
    "deploy/deployment.yaml": doc("""
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        spec: {replicas: 2, template: {spec: {containers: [{name: web, image: nginx}]}}}
        """),
    "deploy/kustomization.yml": "resources: [deployment.yaml]\n",
    "chart/templates/svc.yaml": doc("""
        apiVersion: v1
        kind: Service
        metadata:
          name: {{ include "chart.fullname" . }}
        {{- with .Values.labels }}
          labels: {{ toYaml . | nindent 4 }}
        {{- end }}
        """),
    "ansible/site.yml": "- hosts: all\n  roles: [common]\n",
    "cfn/stack.yaml": "Resources:\n  Bucket:\n    Type: AWS::S3::Bucket\n"
                      "    Properties: {BucketName: !Ref Name}\n",
    "docs/notes.yaml": "just a sentence\n",
    "dup/config.yaml": "a: 1\na: 2\n",
}


def test_foreign_yaml_is_ignored(tmp_path: Path) -> None:
    write_tree(tmp_path, {**files(), **FOREIGN})
    result = compile_path(tmp_path, revision="test")
    assert result.diagnostics == []
    assert len(result.catalog.entries) == 17


def test_non_yaml_and_hidden_files_are_ignored(tmp_path: Path) -> None:
    broken = "apiVersion: pincompute.io/v1\nkind: PinPod\nmetadata: [\n"
    write_tree(tmp_path, {
        **files(),
        "README.md": broken, "apps/spec.json": broken, "apps/spec.yaml.bak": broken,
        "apps/.draft.yaml": broken, ".github/workflows/ci.yaml": broken,
    })
    assert compile_path(tmp_path, revision="test").diagnostics == []


def test_yml_suffix_is_read(tmp_path: Path) -> None:
    write_tree(tmp_path, {"a/one.yml": pod("one"), "a/two.yaml": pod("two")})
    assert sorted(d.data["metadata"]["name"] for d in load_tree(tmp_path).documents) == [
        "one", "two"]


def test_symlink_outside_root_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_tree(outside, {"secret.yaml": pod("secret")})
    root = write_tree(tmp_path / "repo", files())
    (root / "apps" / "link.yaml").symlink_to(outside / "secret.yaml")
    result = compile_path(root, revision="test")
    assert triples(result.diagnostics) == [
        ("apps/link.yaml:1:1", "symlink-outside-root",
         "symlink points outside the repository; not followed")]
    assert "secret" not in {e.resource.name for e in result.catalog.entries}


def test_a_symlink_to_a_file_the_walk_does_not_read_is_refused(tmp_path: Path) -> None:
    """A spec behind a symlink must be read where it lies too, or changes to it would
    escape the code owners of the symlink's folder (a hidden file has none)."""
    root = write_tree(tmp_path, {**files(), ".shared/common.yaml": pod("shared"),
                                 "docs/pod.txt": pod("text")})
    (root / "apps" / "shop" / "shared.yaml").symlink_to(root / ".shared" / "common.yaml")
    (root / "apps" / "shop" / "text.yaml").symlink_to("../../docs/pod.txt")
    result = compile_path(root, revision="test")
    assert triples(result.diagnostics) == [
        ("apps/shop/shared.yaml:1:1", "symlink-unread-target",
         "symlink leads to .shared/common.yaml, a file the walk does not read; not followed"),
        ("apps/shop/text.yaml:1:1", "symlink-unread-target",
         "symlink leads to docs/pod.txt, a file the walk does not read; not followed")]
    assert not {"shared", "text"} & {e.resource.name for e in result.catalog.entries}


def test_a_symlinked_directory_outside_the_root_is_a_warning(tmp_path: Path) -> None:
    outside = write_tree(tmp_path / "outside", {"x.yaml": pod("Not-Valid")})
    root = write_tree(tmp_path / "repo", files())
    (root / "linked").symlink_to(outside, target_is_directory=True)
    result = compile_path(root, revision="test")
    assert result.diagnostics == []
    assert triples(result.warnings) == [
        ("linked:1:1", "folder-symlink-outside-root",
         "folder symlink points outside the repository; skipped")]


def test_a_symlinked_directory_into_a_hidden_folder_is_skipped(tmp_path: Path) -> None:
    """apps/newp -> ../.x would deploy .x's specs as project newp's, reviewed by nobody."""
    root = write_tree(tmp_path, {**files(), ".shared/pods/one.yaml": pod("one")})
    (root / "apps" / "pods").symlink_to("../.shared/pods", target_is_directory=True)
    result = compile_path(root, revision="test")
    assert result.diagnostics == []
    assert triples(result.warnings) == [
        ("apps/pods:1:1", "folder-symlink-hidden", "folder symlink leads into the hidden "
         "folder .shared/pods, which the walk skips; skipped")]
    assert "one" not in {e.resource.name for e in result.catalog.entries}


def test_symlink_loops_are_warnings_and_the_walk_ends(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {**files(), "apps/shop/pods/one.yaml": pod("one")})
    (root / "apps" / "shop" / "pods" / "up").symlink_to("..", target_is_directory=True)
    (root / "apps" / "shop" / "pods" / "root").symlink_to("../../..",
                                                           target_is_directory=True)
    for n in range(20):  # two links to each next level: a walk without memory doubles
        level = root / "chain" / f"l{n}"
        level.mkdir(parents=True)
        (level / "a").symlink_to(f"../l{n + 1}", target_is_directory=True)
        (level / "b").symlink_to(f"../l{n + 1}", target_is_directory=True)
    (root / "chain" / "l20").mkdir()
    started = time.perf_counter()
    result = compile_path(root, revision="test")
    assert time.perf_counter() - started < 10
    assert result.diagnostics == []
    codes = {(w.file, w.code) for w in result.warnings}
    assert ("apps/shop/pods/root", "folder-symlink-loop") in codes
    assert ("apps/shop/pods/up", "folder-symlink-loop") in codes
    assert {e.resource.name for e in result.catalog.entries} >= {"one"}


def test_a_single_file_can_be_loaded() -> None:
    path = FIXTURE / "apps" / "shop" / "checkout.yml"
    result = load_tree(path)
    assert (result.diagnostics, [d.file for d in result.documents]) == ([], ["checkout.yml"])


def test_broken_spec_yaml_is_reported_but_broken_foreign_yaml_is_not() -> None:
    broken_spec = "apiVersion: pincompute.io/v1\nkind: PinPod\nmetadata: {name: [\n"
    assert [(d.location(), d.code) for d in load_text("s.yaml", broken_spec).diagnostics] == [
        ("s.yaml:4:1", "yaml-syntax")]
    assert load_text("t.yaml", FOREIGN["chart/templates/svc.yaml"]).diagnostics == []


# --- aliases bounded in bytes, integers in digits, tags refused where they stand ------------

def alias_repeater(size: int) -> str:
    """A PinPod of about ``size`` bytes whose args repeat one 100 KB string by alias."""
    text = pod("rep").replace('image: "registry.internal/app:1.0"}',
                              'image: "registry.internal/app:1.0", args: *args}')
    head, spec = text.split("spec:\n")
    head += f'x-long: &s "{"x" * 100_000}"\nx-args: &args\n'
    lines = (size - len(head) - len(spec)) // 5
    return head + "- *s\n" * lines + "spec:\n" + spec


def peak_rss_mib(*command: str) -> tuple[int, str, float]:
    """(exit code, stderr, peak RSS in MiB) of ``command`` run in a child process."""
    probe = ("import resource, subprocess, sys\n"
             "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
             "sys.stdout.write(str(done.returncode) + '\\n' + str("
             "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) + '\\n' + done.stderr)")
    out = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    code, kib, stderr = out.split("\n", 2)
    return int(code), stderr, int(kib) / 1024


@pytest.mark.parametrize("size", [1_000_000, 4_000_000])
def test_aliases_repeating_a_long_string_are_refused_fast_and_small(
        tmp_path: Path, size: int) -> None:
    root = write_tree(tmp_path / "repo", files({"apps/rep.yaml": alias_repeater(size)}))
    started = time.perf_counter()
    code, stderr, peak = peak_rss_mib(sys.executable, "-m", "pincompile.cli", "compile",
                                      str(root), "--out-dir", str(tmp_path / "out"))
    assert time.perf_counter() - started < 20
    assert code == 1
    assert stderr.splitlines()[0] == (
        f"apps/rep.yaml:1:1: error[alias-bomb]: document expands to more than "
        f"{MAX_EXPANDED_BYTES} bytes through YAML aliases; refused")
    assert peak < 250, f"peak RSS {peak:.0f} MiB"


def test_the_reference_loader_bounds_bytes_too() -> None:
    text = alias_repeater(110_000).replace("x-long:", "x-long: !!str")  # a tag: ruamel reads it
    result = load_text("rep.yaml", text)
    assert triples(result.diagnostics) == [
        ("rep.yaml:1:1", "alias-bomb", f"document expands to more than {MAX_EXPANDED_BYTES} "
         "bytes through YAML aliases; refused")]


def test_a_large_file_without_aliases_is_not_refused() -> None:
    text = pod("big") + "x-data: [" + ", ".join(["y" * 1000] * 5000) + "]\n"
    assert len(text) > MAX_EXPANDED_BYTES
    result = load_text("big.yaml", text)
    assert result.diagnostics == [] and len(result.documents) == 1


@pytest.mark.parametrize("value", ["9" * 5000, "0x" + "f" * 4000, "-" + "1" * 1001])
def test_an_integer_too_long_is_a_located_error(value: str) -> None:
    text = pod("huge").replace("spec:\n", f"spec:\n  replicas: {value}\n")
    for extra in ("", "x-tagged: !!int 1\n"):  # the libyaml loader and the reference one
        assert triples(validate(files({"apps/huge.yaml": text + extra}))) == [
            ("apps/huge.yaml:5:13", "yaml-number",
             f"integer of {len(value)} characters; the limit is {MAX_INT_DIGITS}")]


@pytest.mark.parametrize("tagged", [
    "spec: !!omap [{containers: []}]", "spec: !!python/object:os.system {}",
    "spec: !!set {a: null}", "spec: !!binary aGVsbG8=", "spec: !custom x"])
def test_an_unknown_tag_is_a_located_yaml_tag_error(tagged: str) -> None:
    text = pod("tagged").replace("spec:\n", "x-spec:\n") + tagged + "\n"
    tag = tagged.split()[1]
    assert triples(validate(files({"apps/tagged.yaml": text}))) == [
        ("apps/tagged.yaml:6:7", "yaml-tag", f"YAML tag '{tag}' is not supported in specs")]


def test_a_tag_on_the_document_is_located() -> None:
    text = "--- !!python/object:os.system\n" + pod("tagged")
    assert triples(validate(files({"apps/tagged.yaml": text}))) == [
        ("apps/tagged.yaml:1:5", "yaml-tag",
         "YAML tag '!!python/object:os.system' is not supported in specs")]
