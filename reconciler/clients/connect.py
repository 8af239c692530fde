"""One connection per kubeconfig context, with every request going through one hook.

The hook (``_Hook``) wraps the REST client that the official ``kubernetes`` client sends
every request through, so it sees all of them — LIST, GET, dry-run and real writes,
watches — and it is the one place that:

* counts requests by verb (:class:`~reconciler.clients.stats.RequestStats`), which is how
  tests and ``apply`` know that a pass made zero writes and at most one LIST per kind;
* rate-limits them client-side (a token bucket per cluster);
* paces the writes: no more in flight than the cluster takes (:mod:`reconciler.clients.pace`),
  told each one's answer time, 429 and priority level;
* retries on 429, 5xx and connection errors with exponential back-off and full jitter,
  honouring ``Retry-After``.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import urllib3
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import DynamicApiError, NotFoundError, ResourceNotFoundError

from reconciler.clients.access import FIELD_MANAGER, Listed, WatchEvent, ref_of
from reconciler.clients.discovery import Discoverer
from reconciler.clients.lean import decode_list
from reconciler.clients.pace import CEILING, PRIORITY_LEVEL_HEADER, Pacer, seats_of
from reconciler.clients.record import access_request, recorder
from reconciler.clients.stats import WRITE_VERBS, ListTiming, RequestStats
from reconciler.kinds import KindInfo
from reconciler.model import Obj

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
PACED_VERBS = WRITE_VERBS | {"dry-run"}
CONNECT_ERRORS = (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError)


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
    """Wraps ``RESTClientObject.request``: count, rate-limit, pace writes, retry."""

    def __init__(self, inner: Any, stats: RequestStats, bucket: TokenBucket,
                 retry: RetryPolicy, timeout: tuple[float, float],
                 record: Callable[[str, str], None] | None = None,
                 pacer: Pacer | None = None) -> None:
        self.inner, self.stats, self.bucket, self.retry = inner, stats, bucket, retry
        self.timeout = timeout
        self.record = record
        """Set when requests are recorded (``$PINCOMPILE_RECORD_REQUESTS``)."""
        self.pacer = pacer or Pacer()
        self.priority_level: str | None = None
        """The uid of the priority level the server's flow control last put us in."""

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
            response, delay = self._attempt(resource if verb in PACED_VERBS else None, last,
                                            attempt, method, url, *args, **kwargs)
            if delay is None:
                return response
            time.sleep(delay)
            attempt += 1

    def _attempt(self, paced: str | None, last: bool, attempt: int, *call: Any, **kwargs: Any
                 ) -> tuple[Any, float | None]:
        """One request: (its response, None), or (None, the delay before retrying it);
        ``paced``: the resource of a write, which waits for the pacer."""
        if paced is not None:
            self.pacer.acquire()
        started, retry_after = time.monotonic(), None
        status = 0
        try:
            response = self.inner(*call, **kwargs)
        except ApiException as exc:
            status, retry_after = exc.status or 0, (exc.headers or {}).get("Retry-After")
            self._heard(exc.headers or {})
            if status not in RETRY_STATUSES or last:
                raise
            return None, self.retry.delay(attempt, retry_after)
        except CONNECT_ERRORS as exc:
            if last:
                raise ClusterUnreachable(_reason(exc)) from exc
            return None, self.retry.delay(attempt)
        finally:
            if paced is not None:
                self.pacer.release(time.monotonic() - started, paced, throttled=status == 429,
                                   retry_after=_seconds(retry_after))
        self._heard(getattr(response, "headers", None) or {})
        if getattr(response, "status", 200) not in RETRY_STATUSES or last:
            return response, None
        response.read()
        return None, self.retry.delay(attempt, response.getheader("Retry-After"))

    def _heard(self, headers: Any) -> None:
        level = headers.get(PRIORITY_LEVEL_HEADER) if hasattr(headers, "get") else None
        if level:
            self.priority_level = str(level)


def _seconds(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    return str(reason).split(": ", 1)[-1][:300]


POOL_SIZE = CEILING + 32
"""Kept-alive connections per cluster: one for every thread that may talk to it at once —
a watch per managed kind (``serve``'s cache, 19 kinds), the pass's writers (as many as
its pacer lets write at once, :data:`~reconciler.clients.pace.CEILING` at most), its
readers and the status writers. The client's default is 5 per CPU (10
on 2 cores): every request over it opened a new TLS connection and threw it away
(``Connection pool is full, discarding connection``). Connections open only when used."""


class Connection:
    """A client for one kubeconfig context (or a ``configuration`` of its own: in-cluster):
    typed API client, dynamic client and stats; the real
    :class:`~reconciler.clients.access.ClusterAccess` (its verbs below)."""

    def __init__(self, name: str, context: str, kubeconfig: str | None, *,
                 qps: float = 100.0, burst: int = 200, retry: RetryPolicy | None = None,
                 timeout: tuple[float, float] = (3.0, 30.0), pool_size: int = POOL_SIZE,
                 configuration: k8s.Configuration | None = None) -> None:
        self.name, self.context = name, context
        self.stats = RequestStats()
        cfg = configuration or load_configuration(kubeconfig, context)
        cfg.retries = 0  # retries happen in the hook, once, with back-off
        cfg.connection_pool_maxsize = max(pool_size, cfg.connection_pool_maxsize or 0)
        self.api = k8s.ApiClient(cfg)
        rest = self.api.rest_client
        self.pacer = Pacer()
        """How many writes it is sent at once (:mod:`reconciler.clients.pace`)."""
        self._hook = hook = _Hook(rest.request, self.stats, TokenBucket(qps, burst),
                                  retry or RetryPolicy(), timeout, recorder(name), self.pacer)
        rest.request = hook  # type: ignore[method-assign]
        self._sized = False
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
                except (AttributeError, KeyError, TypeError, ValueError) as exc:
                    # the client reads discovery's answer as JSON without a check: a web
                    # server that is not an API server (200, HTML) fails it this way
                    raise ClusterUnreachable(
                        f"{self.api.configuration.host} is not a Kubernetes API server: "
                        f"its discovery answer (/api, /apis) is not an API group list "
                        f"({type(exc).__name__})") from exc
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

    def pace_for(self, writes: int) -> int:
        """Threads to give a batch of ``writes`` writes: as many as the pacer may let write
        at once. Before the first batch worth it, the pacer is capped at the seats of the
        priority level the server's flow control puts us in, when it says them."""
        if writes > 2 * self.pacer.allowed and not self._sized:
            self._sized = True
            level = self._hook.priority_level
            if level:
                seats = self._seats(level)
                if seats is not None:
                    self.pacer.cap(seats)
        return max(1, min(writes, self.pacer.ceiling))

    def _seats(self, level: str) -> int | None:
        """The seats of priority level ``level`` (None when the server does not say)."""
        try:
            levels = self.resource("flowcontrol.apiserver.k8s.io/v1",
                                   "PriorityLevelConfiguration").get(serializer=plain)
            answer = self.dynamic.request("GET", "/metrics", serialize=False)
            metrics = answer.data.decode("utf-8", "replace")
        except (DynamicApiError, ResourceNotFoundError, *CONNECT_ERRORS):
            return None
        return seats_of(list(levels.get("items") or []), level, metrics)

    # --- ClusterAccess (reconciler.clients.access): every verb a pass uses ---------------

    def serves(self, api_version: str, kind: str) -> bool:
        try:
            self.resource(api_version, kind)
        except ResourceNotFoundError:
            return False
        return True

    def list(self, kind: KindInfo, *, namespace: str | None = None,
             label_selector: str | None = None, field_selector: str | None = None,
             limit: int | None = None, lean: bool = False) -> Listed:
        """One LIST, its body parsed by orjson, or ``lean`` by msgspec without
        managedFields (:mod:`reconciler.clients.lean`): both several times faster than
        the client's ``json.loads``, and no ``ResourceInstance`` per object. Timed in
        :attr:`stats`."""
        resource = self.resource(kind.api_version, kind.kind)
        started = time.monotonic()
        body = resource.get(**_query(namespace=namespace, label_selector=label_selector,
                                     field_selector=field_selector, limit=limit),
                            serialize=False).data
        asked = time.monotonic()
        data: Obj = decode_list(body) if lean else orjson.loads(body)
        items: list[Obj] = data.get("items") or []
        for item in items:
            item.setdefault("apiVersion", kind.api_version)
            item.setdefault("kind", kind.kind)
        self.stats.timed(ListTiming(resource.name, asked - started, time.monotonic() - asked,
                                    len(body), len(items)))
        return {"items": items,
                "resourceVersion": str((data.get("metadata") or {}).get("resourceVersion") or "")}

    def get(self, ref: Obj) -> Obj | None:
        api_version, kind, name, namespace = ref_of(ref)
        try:
            live: Obj = self.resource(api_version, kind).get(
                name=name, namespace=namespace, serializer=plain)
        except NotFoundError:
            return None
        return live

    def apply(self, obj: Obj, *, manager: str = FIELD_MANAGER, dry_run: bool = False,
              subresource: str | None = None) -> Obj:
        api_version, kind, name, namespace = ref_of(obj)
        resource = self.resource(api_version, kind)
        if subresource:
            resource = resource.subresources[subresource]
        extra: dict[str, Any] = {"dry_run": "All"} if dry_run else {}
        result: Obj = self.dynamic.server_side_apply(
            resource, body=obj, name=name, namespace=namespace, field_manager=manager,
            force_conflicts=True, serializer=plain, **extra)
        return result

    def patch(self, ref: Obj, patch: Obj, *, manager: str = FIELD_MANAGER,
              subresource: str | None = None) -> Obj:
        api_version, kind, name, namespace = ref_of(ref)
        resource = self.resource(api_version, kind)
        if subresource:
            resource = resource.subresources[subresource]
        patched: Obj = resource.patch(body=patch, name=name, namespace=namespace,
                                      content_type="application/merge-patch+json",
                                      field_manager=manager, serializer=plain)
        return patched

    def create(self, obj: Obj, *, subresource: str | None = None,
               of: KindInfo | None = None) -> Obj:
        meta = obj.get("metadata") or {}  # an Event has a generateName, not a name
        created: Obj
        if subresource:
            if of is None:
                raise ValueError(f"a create of subresource {subresource} names no kind")
            created = self.resource(of.api_version, of.kind).subresources[subresource].create(
                body=obj, name=meta["name"], namespace=meta.get("namespace"),
                serializer=plain)
        else:
            created = self.resource(obj["apiVersion"], obj["kind"]).create(
                body=obj, namespace=meta.get("namespace"), serializer=plain)
        return created

    def delete(self, ref: Obj, *, propagation: str = "Background") -> bool:
        api_version, kind, name, namespace = ref_of(ref)
        try:
            self.resource(api_version, kind).delete(
                name=name, namespace=namespace, propagation_policy=propagation)
        except NotFoundError:
            return False
        return True

    def watch(self, kind: KindInfo, *, resource_version: str, timeout_seconds: int,
              namespace: str | None = None, label_selector: str | None = None,
              field_selector: str | None = None) -> Iterator[WatchEvent]:
        """What ``DynamicClient.watch`` does, without wrapping each event's object in a
        ``ResourceInstance`` (nobody reads it: ~8x the cost of parsing the event, in the
        threads that share the GIL with a pass, for every status change of every
        object)."""
        resource = self.resource(kind.api_version, kind.kind)
        stream = k8s_watch.Watch().stream(
            resource.get, **_query(namespace=namespace, label_selector=label_selector,
                                   field_selector=field_selector),
            resource_version=resource_version, serialize=False,
            timeout_seconds=timeout_seconds, allow_watch_bookmarks=True)
        for event in stream:
            yield {"type": str(event.get("type")), "object": event.get("raw_object") or {}}

    def close(self) -> None:
        self.api.close()


def _query(**given: str | int | None) -> dict[str, str | int]:
    """The query arguments of a LIST or WATCH that are given."""
    return {k: v for k, v in given.items() if v}


def plain(_client: Any, data: Obj) -> Obj:
    """A response as the parsed JSON itself (``serializer=plain``): the dynamic client's
    attribute wrappers cost more than the parse."""
    return data


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
