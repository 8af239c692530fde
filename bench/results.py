"""bench/RESULTS.md: each script replaces (or appends) its own section there."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
HEADER = ("# Benchmark results\n\nWritten by the scripts in bench/ (`--results`); do not edit "
          "by hand.\n")


def write_section(marker: str, title: str, command: str, lines: list[str]) -> None:
    """Put ``lines`` under ``## title`` and the command that made them, between the
    ``<!-- marker -->`` comments (an older section with that marker is replaced)."""
    text = RESULTS.read_text() if RESULTS.exists() else HEADER
    begin, end = f"<!-- {marker} -->", f"<!-- /{marker} -->"
    section = "\n".join([begin, f"## {title}", "", f"`{command}`", "", *lines, end])
    if begin in text and end in text:
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    RESULTS.write_text(text)
