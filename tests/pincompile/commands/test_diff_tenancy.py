"""``pincompile diff`` and tenancy: a change that breaks the folder rule does not compile;
the review aid names the projects and owners a change touches and calls out what widens a
project's rights."""

from __future__ import annotations

import json

from click.testing import CliRunner, Result

from pincompile.cli import cli
from tests.support.tiny_repo import CART_V2, PROJECT, Repo

PWN = PROJECT.replace("name: shop", "name: pwn")


def diff(repo: Repo, *args: str) -> Result:
    return CliRunner().invoke(cli, ["diff", *args, str(repo.root / "specs")],
                              catch_exceptions=False)


def test_a_platform_kind_in_a_project_folder_fails_the_diff(repo: Repo) -> None:
    repo.write({"specs/apps/shop/pwn.yaml": PWN})
    result = diff(repo, "--base", "HEAD")
    assert result.exit_code == 1
    assert "head (working tree) does not compile: 1 error" in result.output
    assert "apps/shop/pwn.yaml:2:7: error[wrong-folder]: Project is a platform kind" in (
        result.output)


WIDER = PROJECT.replace('ondemand: {cpu: "32", memory: 64Gi}',
                        'ondemand: {cpu: "48", memory: 64Gi}\n  policy: {allowPrivileged: true}')
SIDECAR = """\
apiVersion: pincompute.io/v1
kind: PinterestSideCar
metadata: {name: tap}
spec:
  inject: always
  container:
    name: tap
    image: registry.internal/tap:1.0.0
    resources: {cpu: 10m, memory: 16Mi}
"""


def test_the_pr_comment_starts_with_what_widens_a_project(repo: Repo) -> None:
    base = repo.git("rev-parse", "HEAD")
    repo.commit({"specs/platform/project.yaml": WIDER}, "shop: privileged, more cpu")
    result = diff(repo, "--base", base, "--head", "HEAD", "-o", "markdown")
    assert result.exit_code == 0, result.output
    top = result.output.split("\n#### ", 1)[0]  # before the first cluster's table
    assert "> [!WARNING]\n> **This change widens what tenants may do:**\n" in top
    assert "> - Project 'shop' turns on allowPrivileged\n" in top
    assert "> - Project 'shop' quota ondemand cpu: 32 → 48\n" in top
    assert "**Touches** project `shop` (owners: `team-shop`)" in top
    assert top.index("[!WARNING]") < top.index("**Touches**")

    data = json.loads(diff(repo, "--base", base, "--head", "HEAD", "-o", "json").output)
    assert data["review"] == {
        "projects": [{"name": "shop", "owners": ["team-shop"]}], "platform": None,
        "widens": ["Project 'shop' turns on allowPrivileged",
                   "Project 'shop' quota ondemand cpu: 32 → 48"]}


def test_an_inject_always_sidecar_is_called_out_with_the_platform_owners(repo: Repo) -> None:
    base = repo.commit({"specs/pincompile.yaml": "platformOwners: ['@acme/platform']\n"},
                       "settings")
    repo.write({"specs/platform/tap.yaml": SIDECAR})
    result = diff(repo, "--base", base, "--color", "never")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == ("touches: project shop (owners: team-shop); "
                        "the platform (owners: @acme/platform)")
    assert lines[1] == ("WIDENS: PinterestSideCar 'tap' is added with inject: always: it goes "
                        "into every pod (PinPod, PinApp, PinterestService, PinterestJobSet, "
                        "PinterestTrainingJob, PinterestCronJob, PinterestDaemon) of every "
                        "project")
    assert lines[3].startswith("cluster east-a:")


def test_an_app_change_names_its_project_and_widens_nothing(repo: Repo) -> None:
    repo.write({"specs/apps/shop/cart.yaml": CART_V2})
    data = json.loads(diff(repo, "--base", "HEAD", "-o", "json").output)
    assert data["review"] == {"projects": [{"name": "shop", "owners": ["team-shop"]}],
                              "platform": None, "widens": []}
    text = diff(repo, "--base", "HEAD", "--color", "never").output
    assert text.startswith("touches: project shop (owners: team-shop)\n\ncluster ")
    assert "WIDENS" not in text


def test_a_new_project_and_a_sidecar_switched_to_always_are_called_out(repo: Repo) -> None:
    base = repo.commit({"specs/platform/tap.yaml": SIDECAR.replace("inject: always",
                                                                  "inject: opt-in")}, "tap")
    repo.write({
        "specs/platform/tap.yaml": SIDECAR,
        "specs/platform/pwn.yaml": PWN.replace("quota:", "policy: {allowDaemons: true}\n  quota:"),
    })
    data = json.loads(diff(repo, "--base", base, "-o", "json").output)
    assert data["review"]["widens"] == [
        "new Project 'pwn' has allowDaemons: true",
        "new Project 'pwn' quota ondemand cpu: none → 32",
        "new Project 'pwn' quota ondemand memory: none → 64Gi",
        "PinterestSideCar 'tap' changes to inject: always: it goes into every pod (PinPod, "
        "PinApp, PinterestService, PinterestJobSet, PinterestTrainingJob, PinterestCronJob, "
        "PinterestDaemon) of every project"]
    assert [p["name"] for p in data["review"]["projects"]] == ["pwn", "shop"]
    assert data["review"]["platform"] == {"owners": []}
