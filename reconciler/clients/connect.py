"""One connection per kubeconfig context, with every request going through one hook.

The hook (``_Hook``) wraps the REST client that the official ``kubernetes`` client sends
every request through, so it sees all of them — LIST, GET, dry-run and real writes,
watches — and it is the one place that:

* counts requests by verb (:class:`RequestStats`), which is how tests and ``apply`` know
  that a pass made zero writes and at most one LIST per kind;
* rate-limits them client-side (a token bucket per cluster);
* retries on 429, 5xx and connection errors with exponential back-off and full jitter,
  honouring ``Retry-After``.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from reconciler.clients.discovery import Discoverer
from reconciler.clients.record import access_request, recorder

FIELD_MANAGER = "pincompile"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
CONNECT_ERRORS = (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError)
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


class ClusterUnreachable(Exception):
    """The cluster's API server did not answer (after retries)."""


class KubeconfigError(Exception):
    """The kubeconfig cannot be used: no such file, not a kubeconfig, or no such context."""


def _kubeconfig_paths(kubeconfig: str | None) -> str:
    """The file(s) the kubernetes client reads for ``kubeconfig`` (None: the default)."""
    return kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"


def load_configuration(kubeconfig: str | None, context: str) -> k8s.Configuration:
    """The client configuration of ``context``; a :class:`KubeconfigError` saying what is
    wrong with the kubeconfig instead of the client's ConfigException (or a YAML error)."""
    names = contexts(kubeconfig)
    named = _kubeconfig_paths(kubeconfig)
    if context not in names:
        raise KubeconfigError(f"context '{context}' is not in kubeconfig {named} (its "
                              f"contexts: {', '.join(names) or 'none'})")
    cfg = k8s.Configuration()
    try:
        loader = k8s_config.kube_config.KubeConfigLoader(
            config_dict=_parsed(kubeconfig).config, config_base_path=None,
            active_context=context)
        loader.load_and_set(cfg)
    except Exception as exc:  # ConfigException, a missing certificate file, bad base64 ...
        raise KubeconfigError(f"kubeconfig {named}, context '{context}': "
                              f"{_config_reason(exc)}") from exc
    return cfg


_PARSED: dict[tuple[str, tuple[tuple[int, int], ...]], Any] = {}
_PARSED_LOCK = threading.Lock()


def _parsed(kubeconfig: str | None) -> Any:
    """The kubeconfig's file(s) read and merged (the client's ``KubeConfigMerger``, which
    keeps each file's path for certificates named relative to it), once per process while
    the files are unchanged: a pass connects to every cluster, and each connection read
    and parsed the whole file twice (a fleet's kubeconfig holds every cluster's
    certificates)."""
    named = _kubeconfig_paths(kubeconfig)
    files = [Path(p).expanduser() for p in named.split(os.pathsep) if p]
    key = (named, tuple((s.st_mtime_ns, s.st_size) if (s := _stat(f)) else (0, -1)
                        for f in files))
    with _PARSED_LOCK:
        if key not in _PARSED:
            if len(_PARSED) > 8:
                _PARSED.clear()
            _PARSED[key] = k8s_config.kube_config.KubeConfigMerger(named)
        return _PARSED[key]


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def _config_reason(exc: BaseException) -> str:
    """One line: a YAML error's position and problem, else the exception's message."""
    mark = getattr(exc, "problem_mark", None)
    if isinstance(exc, yaml.MarkedYAMLError) and mark is not None:
        return f"not YAML: line {mark.line + 1}, column {mark.column + 1}: {exc.problem}"
    if isinstance(exc, TypeError | KeyError | AttributeError | IndexError):
        return "not a kubeconfig (a mapping of clusters, users and contexts)"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text.removeprefix("Invalid kube-config file. ")[:300]


LISTS_KEPT = 256
"""Timed LISTs a connection keeps (a long-running ``serve`` relists now and then)."""


@dataclass(frozen=True)
class ListTiming:
    """One LIST: the request (sent to the whole body read), its parse, and its size."""

    resource: str
    seconds: float
    parse_seconds: float
    size: int
    """Bytes of the response body."""
    objects: int


@dataclass
class RequestStats:
    """Requests made to one cluster, by verb and resource (thread-safe)."""

    by_verb: Counter[str] = field(default_factory=Counter)
    lists: Counter[str] = field(default_factory=Counter)
    """LIST requests per resource (``deployments``, ``pods``, ...)."""
    writes_by_resource: Counter[str] = field(default_factory=Counter)
    listed: deque[ListTiming] = field(default_factory=lambda: deque(maxlen=LISTS_KEPT))
    """The last LISTs of managed objects, timed (:func:`reconciler.clients.read.list_managed`)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, verb: str, resource: str) -> None:
        with self._lock:
            self.by_verb[verb] += 1
            if verb == "list":
                self.lists[resource] += 1
            if verb in WRITE_VERBS:
                self.writes_by_resource[resource] += 1

    @property
    def writes(self) -> int:
        return sum(self.by_verb[v] for v in WRITE_VERBS)

    def timed(self, timing: ListTiming) -> None:
        with self._lock:
            self.listed.append(timing)

    def reset(self) -> None:
        with self._lock:
            self.by_verb.clear()
            self.lists.clear()
            self.writes_by_resource.clear()
            self.listed.clear()


def classify(method: str, url: str) -> tuple[str, str]:
    """(verb, resource) of one request, the way the API server's audit log names them.

    ``dry-run`` is a PATCH/POST with ``dryRun=All`` (it persists nothing); ``discovery``
    is a GET of ``/api`` or ``/apis`` paths that name no resource.
    """
    request = access_request("", method, url)
    if not request.resource:
        api = request.path.split("/")[1:2] in (["api"], ["apis"])
        return ("discovery" if api else "other"), request.path
    return ("dry-run" if request.dry_run else request.verb), request.resource


class TokenBucket:
    """Client-side rate limit: ``qps`` requests a second with bursts up to ``burst``."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps, self.burst = qps, burst
        self.tokens = float(burst)
        self.stamp = time.monotonic()
        self.lock = threading.Lock()

    def take(self) -> None:
        """Take a token, waiting for one."""
        while wait := self.try_take():
            time.sleep(wait)

    def try_take(self) -> float:
        """Take a token if there is one (0.0); else the seconds until there will be."""
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.qps)
            self.stamp = now
            if self.tokens >= 1:
                self.tokens -= 1
                return 0.0
            return (1 - self.tokens) / self.qps


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential back-off with full jitter; ``Retry-After`` wins when the server sends it."""

    attempts: int = 4
    base: float = 0.25
    cap: float = 4.0

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), 30.0)
            except ValueError:
                pass
        return random.uniform(0, min(self.cap, self.base * 2 ** attempt))


class _Hook:
    """Wraps ``RESTClientObject.request``: count, rate-limit, retry."""

    def __init__(self, inner: Any, stats: RequestStats, bucket: TokenBucket,
                 retry: RetryPolicy, timeout: tuple[float, float],
                 record: Callable[[str, str], None] | None = None) -> None:
        self.inner, self.stats, self.bucket, self.retry = inner, stats, bucket, retry
        self.timeout = timeout
        self.record = record
        """Set when requests are recorded (``$PINCOMPILE_RECORD_REQUESTS``)."""

    def __call__(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        verb, resource = classify(method, url)
        if kwargs.get("_request_timeout") is None and verb != "watch":
            kwargs["_request_timeout"] = self.timeout
        attempt = 0
        while True:
            self.bucket.take()
            self.stats.record(verb, resource)
            if self.record is not None:
                self.record(method, url)
            last = attempt + 1 >= self.retry.attempts
            try:
                response = self.inner(method, url, *args, **kwargs)
            except ApiException as exc:
                if exc.status not in RETRY_STATUSES or last:
                    raise
                delay = self.retry.delay(attempt, (exc.headers or {}).get("Retry-After"))
            except CONNECT_ERRORS as exc:
                if last:
                    raise ClusterUnreachable(_reason(exc)) from exc
                delay = self.retry.delay(attempt)
            else:
                if getattr(response, "status", 200) not in RETRY_STATUSES or last:
                    return response
                response.read()
                delay = self.retry.delay(attempt, response.getheader("Retry-After"))
            time.sleep(delay)
            attempt += 1


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    return str(reason).split(": ", 1)[-1][:300]


POOL_SIZE = 64
"""Kept-alive connections per cluster: one for every thread that may talk to it at once —
a watch per managed kind (``serve``'s cache, 19 kinds), the pass's workers (8 per step,
two steps at once at most) and the status writers. The client's default is 5 per CPU (10
on 2 cores): every request over it opened a new TLS connection and threw it away
(``Connection pool is full, discarding connection``). Connections open only when used."""


class Connection:
    """A client for one kubeconfig context: typed API client, dynamic client and stats."""

    def __init__(self, name: str, context: str, kubeconfig: str | None, *,
                 qps: float = 100.0, burst: int = 200, retry: RetryPolicy | None = None,
                 timeout: tuple[float, float] = (3.0, 30.0), pool_size: int = POOL_SIZE
                 ) -> None:
        self.name, self.context = name, context
        self.stats = RequestStats()
        cfg = load_configuration(kubeconfig, context)
        cfg.retries = 0  # retries happen in the hook, once, with back-off
        cfg.connection_pool_maxsize = max(pool_size, cfg.connection_pool_maxsize or 0)
        self.api = k8s.ApiClient(cfg)
        rest = self.api.rest_client
        hook = _Hook(rest.request, self.stats, TokenBucket(qps, burst),
                     retry or RetryPolicy(), timeout, recorder(name))
        rest.request = hook  # type: ignore[method-assign]
        self._dynamic: DynamicClient | None = None
        self._lock = threading.Lock()
        self._discovery = threading.Lock()
        self._rediscovered = -1.0
        self._resources: dict[tuple[str, str], Any] = {}

    @property
    def dynamic(self) -> DynamicClient:
        """The dynamic client (discovery runs once, on first use)."""
        with self._lock:
            if self._dynamic is None:
                try:
                    self._dynamic = DynamicClient(self.api, discoverer=Discoverer)
                except CONNECT_ERRORS as exc:
                    raise ClusterUnreachable(_reason(exc)) from exc
            return self._dynamic

    def resource(self, api_version: str, kind: str) -> Any:
        """The dynamic client's resource for ``apiVersion``/``kind``, looked up once (the
        client's lookup searches every discovered group, under a lock: a pass asks for
        each kind again and again) until :meth:`rediscover`."""
        found = self._resources.get((api_version, kind))
        if found is not None:
            return found
        dynamic = self.dynamic
        with self._discovery:  # never while another thread rediscovers
            found = dynamic.resources.get(api_version=api_version, kind=kind)
            self._resources[(api_version, kind)] = found
            return found

    def rediscover(self) -> None:
        """Forget what discovery found (a CRD was installed since), at most once a second:
        the dynamic client's cache is rebuilt in place, so lookups wait meanwhile (from
        several threads at once it broke with KeyError 'resources')."""
        dynamic = self.dynamic
        with self._discovery:
            if time.monotonic() - self._rediscovered >= 1.0:
                self._resources.clear()
                dynamic.resources.invalidate_cache()
                self._rediscovered = time.monotonic()

    def close(self) -> None:
        self.api.close()


def contexts(kubeconfig: str | None) -> list[str]:
    """Context names in a kubeconfig (:class:`KubeconfigError` when it cannot be read)."""
    named = _kubeconfig_paths(kubeconfig)
    if not any(Path(p).expanduser().is_file() for p in named.split(os.pathsep) if p):
        hint = "" if kubeconfig or os.environ.get("KUBECONFIG") else \
            " (pass --kubeconfig, set $KUBECONFIG, or start a local fleet: pincompile fleet up)"
        raise KubeconfigError(f"kubeconfig {named}: no such file{hint}")
    try:
        merged = _parsed(kubeconfig).config
        if merged is None:
            raise k8s_config.ConfigException("No configuration found.")
        return [str(c["name"]) for c in
                k8s_config.kube_config.KubeConfigLoader(config_dict=merged).list_contexts()]
    except Exception as exc:  # not YAML, not a mapping, no contexts list ...
        raise KubeconfigError(f"kubeconfig {named} is not a usable "
                              f"kubeconfig: {_config_reason(exc)}") from exc
