"""Errors the fleet reports to users (never as a traceback)."""

from __future__ import annotations


class FleetError(Exception):
    """A failure starting, stopping or building the fleet (CLI exit code 3)."""

    exit_code = 3

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail
