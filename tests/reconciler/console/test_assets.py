"""The vendored browser assets are the pinned versions, with their licenses, in the
installed package (so the console needs no CDN and no npm at run time)."""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_vendored_htmx_is_the_pinned_version_with_its_license() -> None:
    pinned = re.search(r"^HTMX=(\S+)$", (ROOT / "hack/console-assets.sh").read_text(), re.M)
    assert pinned, "hack/console-assets.sh pins no htmx version"
    static = files("reconciler.console") / "static"
    assert f'version:"{pinned.group(1)}"' in (static / "htmx.min.js").read_text(), \
        "the checked-in htmx is not the pinned one: make console-assets"
    assert f"htmx.org {pinned.group(1)}" in (static / "VENDORED.txt").read_text()
    assert "Permission to use, copy, modify" in (static / "LICENSE.htmx").read_text()


def test_no_page_loads_anything_from_another_site() -> None:
    templates = files("reconciler.console") / "templates"
    for template in templates.iterdir():
        text = template.read_text()
        assert not re.search(r'(src|href)="(https?:)?//', text), template.name


def test_the_vendored_xterm_and_its_fit_addon_are_the_pinned_tarballs_with_their_licenses(
        ) -> None:
    script = (ROOT / "hack/console-assets.sh").read_text()
    static = files("reconciler.console") / "static"
    vendored = (static / "VENDORED.txt").read_text()
    for package, variable, license_file in (("@xterm/xterm", "XTERM", "LICENSE.xterm"),
                                            ("@xterm/addon-fit", "XTERM_FIT",
                                             "LICENSE.xterm-addon-fit")):
        version = re.search(rf"^{variable}=(\S+)$", script, re.M)
        digest = re.search(rf"^{variable}_SHA512=(\S+)$", script, re.M)
        assert version and digest, f"hack/console-assets.sh pins no {package}"
        assert f"{package} {version.group(1)} (npm, sha512-{digest.group(1)})" in vendored
        assert "Permission is hereby granted, free of charge" in (static / license_file).read_text()
    assert "sourceMappingURL" not in (static / "xterm.js").read_text()  # no map shipped
    assert ".xterm-viewport" in (static / "xterm.css").read_text()
