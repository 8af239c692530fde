"""Progress of the first build of the fleet binaries: what is built, how far, how long.

The build runs ``go build -v``, which prints each package's import path as it compiles it,
into a log file. :func:`read_build_log` turns that log into a :class:`BuildProgress`, so a
process waiting for somebody else's build can report the same progress as the builder.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

#: first line(s) of a build log that carry the number of packages the build needs
TOTAL_PREFIX = "# packages to build: "
_IMPORT_PATH = re.compile(r"^[A-Za-z0-9_.~+-]+(?:/[A-Za-z0-9_.~+-]+)*$")


def format_elapsed(seconds: float) -> str:
    """``75.2`` -> ``1m15s``; ``9.4`` -> ``9s``."""
    whole = int(seconds)
    minutes, secs = divmod(whole, 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


@dataclass(frozen=True)
class BuildProgress:
    """How far a build is, read from its log."""

    compiled: int
    total: int
    current: str
    elapsed: float
    waiting: bool = False

    def line(self) -> str:
        """One line, e.g. ``building the fleet binaries: 812/2688 packages, 3m12s ...``."""
        who = ("waiting for another process building the fleet binaries" if self.waiting
               else "building the fleet binaries")
        if self.waiting and not self.compiled and not self.total:  # a log without -v
            return f"{who}: {format_elapsed(self.elapsed)} elapsed"
        count = f"{self.compiled}/{self.total}" if self.total else str(self.compiled)
        step = ("linking" if self.total and self.compiled >= self.total
                else f"compiling {self.current}" if self.current else "starting")
        return f"{who}: {count} packages, {format_elapsed(self.elapsed)} elapsed ({step})"


def read_build_log(log: Path, elapsed: float, waiting: bool = False) -> BuildProgress:
    """Progress of the build writing ``log`` (``go build -v`` output after a header)."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        text = ""
    total, compiled, current = 0, 0, ""
    for line in text.splitlines():
        if line.startswith(TOTAL_PREFIX):
            total = int(line[len(TOTAL_PREFIX):].strip() or 0)
        elif _IMPORT_PATH.match(line):
            compiled += 1
            current = line
    return BuildProgress(compiled=compiled, total=total, current=current, elapsed=elapsed,
                         waiting=waiting)


class StatusLine:
    """Progress for a terminal (one line rewritten in place, every second) or for a log
    (a plain line every ``plain_every`` seconds).

    Pass :meth:`echo` as the ``echo`` and :meth:`status` as the ``progress`` of a long
    operation, and :attr:`every` as its reporting interval.
    """

    def __init__(self, stream: TextIO | None = None, tty: bool | None = None,
                 plain_every: float = 30.0) -> None:
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self.every = 1.0 if self.tty else plain_every
        self._open = False

    def status(self, line: str) -> None:
        """Show ``line`` as the current progress."""
        if self.tty:
            self.stream.write(f"\r\033[K{line}")
            self._open = True
        else:
            self.stream.write(f"{line}\n")
        self.stream.flush()

    def echo(self, message: str) -> None:
        """Print ``message`` on a line of its own (replacing an unfinished status line)."""
        if self._open:
            self.stream.write("\r\033[K")
            self._open = False
        self.stream.write(f"{message}\n")
        self.stream.flush()

    def close(self) -> None:
        """End an unfinished status line."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False
