"""Credentials out of everything ``serve`` shows: the userinfo (``user:token@``) and the
query values (``?access_token=...``) of URLs.

``serve --repo https://user:TOKEN@host/r.git`` must fetch with the token, but the token must
never reach a log line, ``/status``, a metric, the audit log or an Event. Every text those
carry passes through :func:`redact` (structures through :func:`redact_data`), including
error messages that echo the URL (git's stderr does).
"""

from __future__ import annotations

import logging
import re
from typing import Any

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s@]*(?:@[^/?#\s@]*)*@")
"""A URL's scheme followed by userinfo: everything up to the authority's last ``@``."""
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s'\"<>]+")
_QUERY_VALUE = re.compile(r"([?&][^=&#]*=)[^&#]+")
"""A non-empty query value (an empty one hides nothing; redacting twice changes nothing)."""
HIDDEN = "<redacted>"


def _clean(url: re.Match[str]) -> str:
    text = _USERINFO.sub(r"\1", url.group(0))
    return _QUERY_VALUE.sub(rf"\1{HIDDEN}", text) if "?" in text else text


def redact(text: str) -> str:
    """``text`` with the userinfo and the query values of every URL in it removed
    (``https://u:t@host/r?token=x`` becomes ``https://host/r?token=<redacted>``)."""
    return _URL.sub(_clean, text) if "://" in text else text


def redact_data(data: Any) -> Any:
    """A copy of JSON-like ``data`` with every string (and key) :func:`redact`-ed."""
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, dict):
        return {redact_data(k): redact_data(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [redact_data(v) for v in data]
    return data


class RedactingFormatter(logging.Formatter):
    """A log formatter whose every line (tracebacks included) is :func:`redact`-ed."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))
