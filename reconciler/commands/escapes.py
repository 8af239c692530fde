"""Text from a cluster made safe for a terminal: a log line may hold escape sequences
(ANSI colours, cursor moves, OSC window titles, hyperlinks or clipboard writes) that a
terminal would obey. ``pincompile logs`` prints them through :func:`printable` when its
output is a terminal (a pipe or a file gets the bytes as they were)."""

from __future__ import annotations

import re

_SEQUENCES = re.compile(
    r"\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC ... BEL or ST (or cut short)
    r"|\x1b[P^_X][^\x1b\x9c]*(?:\x1b\\|\x9c)?"      # DCS, PM, APC, SOS ... ST
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"           # CSI (ESC [ or its C1 byte)
    r"|\x1b[ -/]*[0-~]?"                            # any other escape
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]")              # other C0 and C1 controls, DEL


def printable(line: bytes) -> bytes:
    """``line`` without escape sequences and control characters (tab and newline kept);
    invalid UTF-8 shows as U+FFFD."""
    return _SEQUENCES.sub("", line.decode("utf-8", "replace")).encode()
