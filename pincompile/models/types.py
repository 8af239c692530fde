"""Scalar types of the spec language: quantities, durations, names, images, cron, zones."""

from __future__ import annotations

import re
import zoneinfo
from decimal import Decimal
from functools import lru_cache
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, PlainSerializer, WithJsonSchema
from pydantic_core import PydanticCustomError

_QUANTITY = re.compile(
    r"^[+]?(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$")
_DURATION = re.compile(r"^(?:(\d+)(ms|s|m|h|d))+$")
_DURATION_PART = re.compile(r"(\d+)(ms|s|m|h|d)")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_PORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(
    rf"^(?P<name>(?:[a-zA-Z0-9.-]+(?::\d+)?/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>[a-z0-9]+:[a-fA-F0-9]{32,}))?$"
)
_DURATION_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
_UNQUOTED_NUMBER_HINT = "quote the value"


def located_error(message: str, *at: str | int) -> PydanticCustomError:
    """A model validator's error that points at a field below the model (by its YAML name),
    e.g. ``raise located_error("...", "maxReplicas")``; the parse stage locates it there."""
    return PydanticCustomError("value_error", message, {"at": at})


def _number_to_str(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        text = repr(value) if isinstance(value, float) else str(value)
        return text
    return value


def _check_quantity(value: str) -> str:
    if not _QUANTITY.match(value):
        raise ValueError(
            f"'{value}' is not a Kubernetes quantity (examples: 500m, 2, 4Gi, 100Mi)")
    return value


_SUFFIX = re.compile(r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Decimal:
    suffix = _SUFFIX.search(text)
    if suffix is None:  # a plain number, maybe with a decimal exponent (1e3)
        return Decimal(text)
    number = Decimal(text[:suffix.start()])
    unit = suffix.group(1)
    if unit in _BINARY:
        return number * Decimal(1024) ** _BINARY[unit]
    return number * Decimal(10) ** _DECIMAL[unit]


def parse_quantity(value: str | int | float) -> Decimal:
    """A quantity as a Decimal (cores for cpu, bytes for memory): the same value, to the
    digit, as the Kubernetes client's ``parse_quantity`` (tests compare them), without
    importing the client."""
    if isinstance(value, int | float):
        return Decimal(value)
    try:
        return _parse_text(value.strip())
    except ArithmeticError as exc:
        raise ValueError(f"invalid quantity '{value}'") from exc


def _check_duration(value: str) -> str:
    if not is_duration(value):
        raise ValueError(f"'{value}' is not a duration (examples: 30s, 5m, 1h, 1h30m)")
    return value


def is_duration(value: str) -> bool:
    """Whether ``value`` is a duration of the spec language (``30s``, ``500ms``, ``1h30m``,
    ``2d``): the one grammar specs and command-line options share."""
    return bool(_DURATION.match(value))


def duration_seconds(value: str) -> float:
    """Seconds in a duration such as ``1h30m``."""
    return sum(int(n) * _DURATION_UNITS[u] for n, u in _DURATION_PART.findall(value))


def _check_dns_label(max_len: int) -> Any:
    def check(value: str) -> str:
        if len(value) > max_len:
            raise ValueError(f"'{value}' is {len(value)} characters; at most {max_len} allowed")
        if not _DNS_LABEL.match(value):
            raise ValueError(
                f"'{value}' is not a DNS-1123 label: lowercase letters, digits and '-', "
                "starting and ending with a letter or digit")
        return value

    return check


def _check_port_name(value: str) -> str:
    if len(value) > 15 or not _PORT_NAME.match(value) or "--" in value or value.isdigit():
        raise ValueError(
            f"'{value}' is not a valid port name: at most 15 lowercase letters, digits and "
            "'-', with at least one letter and no '--'")
    return value


def _check_label_key(value: str) -> str:
    prefix, _, name = value.rpartition("/")
    if (prefix and (len(prefix) > 253 or not _LABEL_PREFIX.match(prefix))) or (
        len(name) > 63 or not _LABEL_NAME.match(name)
    ):
        raise ValueError(f"'{value}' is not a valid label key")
    return value


def _check_label_value(value: str) -> str:
    if "{{" in value or "{%" in value:  # templated: checked after rendering
        return value
    if value and (len(value) > 63 or not _LABEL_NAME.match(value)):
        raise ValueError(
            f"'{value}' is not a valid label value: at most 63 letters, digits, '-', '_', '.'")
    return value


def _check_env_name(value: str) -> str:
    if not _ENV_NAME.match(value):
        raise ValueError(f"'{value}' is not a valid environment variable name")
    return value


def check_image(value: str) -> str:
    match = _IMAGE.match(value)
    if not match:
        raise ValueError(f"'{value}' is not a valid image reference")
    if match.group("tag") == "latest" and not match.group("digest"):
        raise ValueError(
            f"image '{value}' uses ':latest'; pin a version tag or a digest so rollouts are "
            "reproducible")
    if not match.group("tag") and not match.group("digest"):
        raise ValueError(
            f"image '{value}' has no tag or digest; add one, e.g. '{value}:1.0.0' or "
            f"'{value}@sha256:...'")
    return value


def _check_cron(value: str) -> str:
    from croniter import croniter

    fields = value.split()
    if value.startswith("@"):
        if value not in ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
                         "@hourly"):
            raise ValueError(f"'{value}' is not a known cron macro (@hourly, @daily, ...)")
        return value
    if len(fields) != 5 or not croniter.is_valid(value):
        raise ValueError(
            f"'{value}' is not a valid cron expression: five fields "
            "(minute hour day-of-month month day-of-week), e.g. '*/15 * * * *'")
    return value


@lru_cache(maxsize=1)
def _timezones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def _check_timezone(value: str) -> str:
    if value not in _timezones():
        import difflib

        close = difflib.get_close_matches(value, sorted(_timezones()), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ValueError(f"'{value}' is not an IANA time zone{hint}")
    return value


def _check_percent_or_int(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected a whole number or a percentage such as '25%'")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("must not be negative")
        return value
    if isinstance(value, str) and re.fullmatch(r"\d{1,3}%", value) and int(value[:-1]) <= 100:
        return value
    raise ValueError(f"'{value}' is neither a whole number nor a percentage such as '25%'")


def _reject_unquoted_number(value: Any) -> Any:
    if isinstance(value, float):
        raise ValueError(
            f"{value!r} was read as a number; quote the version, e.g. \"1.30\" (a bare 1.30 "
            "reads as 1.3)")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _check_k8s_version(value: str) -> str:
    if not re.fullmatch(r"1\.\d{1,3}", value):
        raise ValueError(f"'{value}' is not a Kubernetes minor version such as \"1.33\"")
    return value


Quantity = Annotated[
    str,
    BeforeValidator(_number_to_str),
    AfterValidator(_check_quantity),
    WithJsonSchema({
        "anyOf": [{"type": "string", "pattern": _QUANTITY.pattern}, {"type": "number"}],
        "description": "Kubernetes quantity, e.g. 500m, 2, 4Gi",
        "examples": ["500m", "2", "4Gi"],
    }),
]
Duration = Annotated[
    str, AfterValidator(_check_duration),
    Field(json_schema_extra={"pattern": _DURATION.pattern}, examples=["30s", "5m", "1h"]),
]
Name = Annotated[
    str, AfterValidator(_check_dns_label(52)),
    Field(description="DNS-1123 label, at most 52 characters", max_length=52),
]
Label63 = Annotated[str, AfterValidator(_check_dns_label(63)), Field(max_length=63)]
PortName = Annotated[str, AfterValidator(_check_port_name), Field(max_length=15)]
LabelKey = Annotated[str, AfterValidator(_check_label_key)]
LabelValue = Annotated[str, AfterValidator(_check_label_value)]
EnvName = Annotated[str, AfterValidator(_check_env_name)]
Image = Annotated[
    str, AfterValidator(check_image),
    Field(description="Image with a tag or digest; ':latest' is refused",
          examples=["registry.internal/search/api:1.4.2"]),
]
Cron = Annotated[str, AfterValidator(_check_cron), Field(examples=["*/15 * * * *"])]
TimeZone = Annotated[str, AfterValidator(_check_timezone), Field(examples=["Etc/UTC"])]
IntOrPercent = Annotated[
    int | str, BeforeValidator(_check_percent_or_int),
    PlainSerializer(lambda v: v), Field(examples=[1, "25%"]),
]
KubernetesVersion = Annotated[
    str, BeforeValidator(_reject_unquoted_number), AfterValidator(_check_k8s_version),
    Field(description='Kubernetes minor version, quoted: "1.33"', examples=["1.33"]),
]
Port = Annotated[int, Field(ge=1, le=65535)]


_BINARY_SUFFIXES = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def format_quantity(value: Decimal, resource: str) -> str:
    """Render a Decimal as a Kubernetes quantity: cpu as cores or millicores (rounded up),
    byte sizes with the largest exact binary suffix, counts as whole numbers."""
    if resource == "cpu":
        millis = int((value * 1000).to_integral_value(rounding="ROUND_CEILING"))
        return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"
    if resource in ("memory", "ephemeral-storage", "storage"):
        whole = int(value.to_integral_value(rounding="ROUND_CEILING"))
        for suffix, size in _BINARY_SUFFIXES:
            if whole and whole % size == 0:
                return f"{whole // size}{suffix}"
        return str(whole)
    return str(int(value.to_integral_value(rounding="ROUND_CEILING")))
