"""The compiled examples, scanned by a maintained manifest scanner (checkov, installed by
``hack/scanner.sh``, which ``make test`` runs): no Pod Security finding (root, privilege
escalation, capabilities, seccomp, host namespaces, token automount), and every finding
that remains, or that a spec skips, is listed with why in docs/concepts.md."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest

from pincompile.compiler import compile_path
from pincompile.emit.output import render_files
from tests.support.expand import REPO

#: The scanner's checks of what Pod Security admission decides, or a restricted pod avoids.
POD_SECURITY = {
    "CKV_K8S_16": "privileged container", "CKV_K8S_17": "host PID namespace",
    "CKV_K8S_18": "host IPC namespace", "CKV_K8S_19": "host network namespace",
    "CKV_K8S_20": "privilege escalation", "CKV_K8S_23": "root",
    "CKV_K8S_25": "added capabilities", "CKV_K8S_26": "host ports",
    "CKV_K8S_27": "docker socket", "CKV_K8S_28": "NET_RAW", "CKV_K8S_29": "pod security context",
    "CKV_K8S_30": "container security context", "CKV_K8S_31": "seccomp profile",
    "CKV_K8S_37": "capabilities not dropped", "CKV_K8S_38": "service-account token mounted",
    "CKV_K8S_39": "SYS_ADMIN", "CKV_K8S_40": "a low (host) uid",
}
DOCS = REPO / "docs" / "concepts.md"
SECTION = "### What a manifest scanner still reports"


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    installed = subprocess.run(
        ["sh", str(REPO / "hack" / "scanner.sh")], env={**os.environ, "PYTHON": sys.executable},
        capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr
    out = tmp_path_factory.mktemp("scan") / "out"
    result = compile_path(REPO / "examples", revision="scan")
    assert result.ok
    for rel, text in render_files(result.manifests, "yaml").items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    ran = subprocess.run(
        [installed.stdout.strip(), "-d", str(out), "--framework", "kubernetes", "--compact",
         "--skip-download", "-o", "json"], capture_output=True, text=True, timeout=600)
    assert ran.returncode in (0, 1), ran.stderr[-2000:]  # 1: some check failed
    report: dict[str, Any] = json.loads(ran.stdout)
    return report


def _findings(scan: dict[str, Any], kind: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for r in scan["results"].get(kind, []):
        found.setdefault(r["check_id"], []).append(r["resource"])
    return found


def test_every_object_is_scanned(scan: dict[str, Any]) -> None:
    summary = scan["summary"]
    assert summary["parsing_errors"] == 0
    assert summary["resource_count"] > 200
    passed = _findings(scan, "passed_checks")
    assert set(POD_SECURITY) - {"CKV_K8S_19"} <= set(passed)  # the checks did run


def test_no_pod_security_finding(scan: dict[str, Any]) -> None:
    failed = _findings(scan, "failed_checks")
    assert {check: (POD_SECURITY[check], where) for check, where in failed.items()
            if check in POD_SECURITY} == {}


def test_every_remaining_finding_is_explained_in_the_docs(scan: dict[str, Any]) -> None:
    text = DOCS.read_text()
    assert SECTION in text
    section = text.split(SECTION, 1)[1].split("\n#", 1)[0]
    explained = set(re.findall(r"`(CKV2?_K8S_\d+)`", section))
    remaining = set(_findings(scan, "failed_checks")) | set(_findings(scan, "skipped_checks"))
    assert remaining - explained == set(), f"list these in {DOCS.name}, {SECTION}, with why"
    assert explained - remaining == set(), "no longer reported: take them out of the docs"
