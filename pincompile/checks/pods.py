"""Pod rules: containers, ports, volumes, env, resources, probes, config and services of
a pod template agree with each other and with the platform."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from pincompile.catalog import Entry
from pincompile.checks.specs import (
    CONFIG_KEY,
    CONFIG_MOUNT_PATH,
    RESERVED_ENV_PREFIX,
    LazyLocation,
    Path,
    Specs,
    by_position,
    did_you_mean,
    pods,
    used_by,
    where,
)
from pincompile.diagnostics import Diagnostic
from pincompile.injection import defaults_of, managed_sidecars, missing_requests
from pincompile.models import (
    PinApp,
    PinterestJobSet,
    PinterestService,
)
from pincompile.models.types import parse_quantity
from pincompile.parse import dotted


def container_names(specs: Specs) -> Iterator[Diagnostic]:
    """Container names are unique within a pod, including the runtime profile's init
    containers and the managed sidecars injected into it."""
    runtime = specs.runtime
    for pod in pods(specs):
        taken: dict[str, tuple[str, Entry[Any] | None]] = {}  # name → (user, its spec)
        if runtime is not None:
            for init in runtime.resource.spec.init_containers:
                taken[init.name] = ("the RuntimeProfile's init container", runtime)
        for sc in specs.injected(pod):
            name = sc.resource.spec.container.name or sc.resource.name
            taken.setdefault(name, (f"managed sidecar '{sc.resource.name}'", sc))
        for i, c in enumerate(pod.template.containers):
            if c.name in taken:
                yield pod.at("containers", i, "name").error(
                    "duplicate-container",
                    f"container name '{c.name}' is already used by {used_by(taken[c.name])}",
                    "container names must be unique within a pod")
            else:
                taken[c.name] = (dotted((*pod.path, "containers", i)), None)


def port_names(specs: Specs) -> Iterator[Diagnostic]:
    """Port names and port numbers are unique within a pod (containers share its network),
    including the ports of injected managed sidecars."""
    for pod in pods(specs):
        names: dict[str, str] = {}
        numbers: dict[tuple[int, str], str] = {}
        for sc in specs.injected(pod):
            owner = f"managed sidecar '{sc.resource.name}'"
            for p in sc.resource.spec.container.ports:
                names.setdefault(p.name, owner)
                numbers.setdefault((p.container_port, p.protocol), owner)
        for i, c in enumerate(pod.template.containers):
            owner = f"container '{c.name}'"
            for j, p in enumerate(c.ports):
                if p.name in names:
                    yield pod.at("containers", i, "ports", j, "name").error(
                        "duplicate-port-name",
                        f"port name '{p.name}' is already used by {names[p.name]}",
                        "port names must be unique within a pod")
                else:
                    names[p.name] = owner
                number = (p.container_port, p.protocol)
                if number in numbers:
                    yield pod.at("containers", i, "ports", j, "containerPort").error(
                        "duplicate-port",
                        f"port {p.container_port}/{p.protocol} is already used by "
                        f"{numbers[number]}", "containers of a pod share one network")
                else:
                    numbers[number] = owner


def volumes(specs: Specs) -> Iterator[Diagnostic]:
    """Volume names and mount paths are unique within a pod, including the runtime profile's
    volumes and mounts, injected sidecars' volumes and the config files' mount."""
    runtime = specs.runtime
    for pod in pods(specs):
        names: dict[str, tuple[str, Entry[Any] | None]] = {}  # name → (user, its spec)
        mounts: dict[str, str] = {}
        if runtime is not None:
            for v in runtime.resource.spec.volumes:
                names[v.name] = ("the RuntimeProfile", runtime)
            for m in runtime.resource.spec.volume_mounts:
                mounts[m.mount_path] = f"the RuntimeProfile's mount '{m.name}'"
        for sc in specs.injected(pod):
            for v in sc.resource.spec.volumes:
                names.setdefault(v.name, (f"managed sidecar '{sc.resource.name}'", None))
        w = pod.entry.resource
        if pod.template.config or (isinstance(w, PinterestJobSet) and w.spec.config_templates):
            mounts[CONFIG_MOUNT_PATH] = "the config files"
        items: list[tuple[Path, str, str]] = [
            ((*pod.path, "volumes", i), v.name, v.mount_path)
            for i, v in enumerate(pod.template.volumes)]
        if isinstance(w, PinterestJobSet):
            items += [(("spec", "volumeClaimTemplates", i), v.name, v.mount_path)
                      for i, v in enumerate(w.spec.volume_claim_templates)]
        for full, name, mount in items:
            if name in names:
                yield pod.entry.at(*full, "name").error(
                    "duplicate-volume",
                    f"volume name '{name}' is already used by {used_by(names[name])}",
                    "volume names must be unique within a pod")
            else:
                names[name] = (dotted(full), None)
            mount = mount.rstrip("/") or "/"
            if mount in mounts:
                yield pod.entry.at(*full, "mountPath").error(
                    "duplicate-mount-path",
                    f"mountPath '{mount}' is already used by {mounts[mount]}",
                    "mount each volume at a path of its own")
            else:
                mounts[mount] = dotted(full)


def env_names(specs: Specs) -> Iterator[Diagnostic]:
    """Env names are unique within a container and do not take the platform's
    ``PINCOMPUTE_*`` identity variables."""
    for pod in pods(specs):
        for i, c in enumerate(pod.template.containers):
            seen: set[str] = set()
            for j, env in enumerate(c.env):
                loc = LazyLocation(pod.entry, (*pod.path, "containers", i, "env", j, "name"))
                if env.name.startswith(RESERVED_ENV_PREFIX):
                    yield loc.error("reserved-env",
                                    f"env '{env.name}' is set by the platform "
                                    f"({RESERVED_ENV_PREFIX}* variables identify the workload)",
                                    "choose another name")
                elif env.name in seen:
                    yield loc.error("duplicate-env",
                                    f"env '{env.name}' is already set in container '{c.name}'")
                seen.add(env.name)


def resource_limits(specs: Specs) -> Iterator[Diagnostic]:
    """Limits are not below requests (Kubernetes refuses such a pod)."""
    for pod in pods(specs):
        for i, c in enumerate(pod.template.containers):
            res = c.resources
            if res.limits is None:
                continue
            for field in ("cpu", "memory"):
                request, limit = getattr(res, field), getattr(res.limits, field)
                if request is None or limit is None:
                    continue
                if quantity(limit) < quantity(request):
                    yield pod.at("containers", i, "resources", "limits", field).error(
                        "invalid-limits",
                        f"limits.{field} ({limit}) is below the {field} request ({request})",
                        f"raise limits.{field} to at least {request}")


_MISSING_HINT = ("set resources: {{cpu: ..., memory: ...}} here, or give the RuntimeProfile "
                 "spec.defaultResources (every project namespace has a ResourceQuota, which "
                 "refuses pods without {what} requests)")


def missing_resources(specs: Specs) -> Iterator[Diagnostic]:
    """Every container of a workload pod has cpu and memory requests, its own or the
    RuntimeProfile's ``defaultResources`` (the namespace's ResourceQuota refuses a pod
    without them). Managed sidecars and the profile's init containers are reported once, where
    they are defined."""
    defaults = defaults_of(specs.catalog)
    for pod in pods(specs):
        for i, c in enumerate(pod.template.containers):
            missing = missing_requests(c.resources, defaults)
            if missing:
                field = ("containers", i, "resources") if "resources" in c.model_fields_set \
                    else ("containers", i, "name")
                what = " and ".join(missing)
                yield pod.at(*field).error(
                    "missing-resources",
                    f"container '{c.name}' has no {what} request and no default applies",
                    _MISSING_HINT.format(what=what))
    for name, sc in specs.sidecars.items():
        if sc.resource.spec.mode != "sidecar":
            continue  # daemon sidecars run in the platform's own namespace, without quota
        missing = missing_requests(sc.resource.spec.container.resources, defaults)
        if missing:
            what = " and ".join(missing)
            yield sc.at("spec", "container").error(
                "missing-resources",
                f"managed sidecar '{name}' has no {what} request and no default applies; every "
                "pod it is injected into would be refused", _MISSING_HINT.format(what=what))
    runtime = specs.runtime
    if runtime is not None:
        for i, init in enumerate(runtime.resource.spec.init_containers):
            missing = missing_requests(init.resources, defaults)
            if missing:
                what = " and ".join(missing)
                yield runtime.at("spec", "initContainers", i, "name").error(
                    "missing-resources",
                    f"init container '{init.name}' has no {what} request and no default "
                    "applies; every workload pod would be refused",
                    _MISSING_HINT.format(what=what))


def quantity(value: str) -> Decimal:
    try:
        return parse_quantity(value)
    except (ValueError, ArithmeticError):
        return Decimal(0)


def probe_ports(specs: Specs) -> Iterator[Diagnostic]:
    """A probe's named port is a port of its container."""
    for pod in pods(specs):
        for i, c in enumerate(pod.template.containers):
            if c.probes is None:
                continue
            own = [p.name for p in c.ports]
            for kind in ("readiness", "liveness", "startup"):
                probe = getattr(c.probes, kind)
                if probe is None or not isinstance(probe.port, str) or probe.port in own:
                    continue
                yield pod.at("containers", i, "probes", kind, "port").error(
                    "unknown-port",
                    f"{kind} probe port '{probe.port}' is not a port of container '{c.name}'",
                    did_you_mean(probe.port, own, f"ports of '{c.name}'"))


def config_keys(specs: Specs) -> Iterator[Diagnostic]:
    """``config`` (and a JobSet's ``configTemplates``) keys are valid ConfigMap keys (file
    names) and do not collide."""
    for pod in pods(specs):
        w = pod.entry.resource
        tables: list[tuple[Path, dict[str, str]]] = [((*pod.path, "config"), pod.template.config)]
        if isinstance(w, PinterestJobSet):
            tables.append((("spec", "configTemplates"), w.spec.config_templates))
        seen: set[str] = set()
        for path, table in tables:
            for key in table:
                loc = LazyLocation(pod.entry, (*path, key), key=True)
                if (not CONFIG_KEY.match(key) or len(key) > 253 or key in (".", "..")
                        or key.startswith("..")):
                    yield loc.error("invalid-config-key",
                                    f"config key '{key}' is not a valid file name: letters, "
                                    "digits, '-', '_' and '.', at most 253 characters",
                                    "files are mounted flat in /etc/pincompute/config")
                elif key in seen:
                    yield loc.error("duplicate-config-key",
                                    f"config key '{key}' is also in config; both would be the "
                                    "same file")
                seen.add(key)


def service_ports(specs: Specs) -> Iterator[Diagnostic]:
    """Service ports are unique; a named ``targetPort`` is a port of the pod; the ingress
    routes to a service port."""
    for entry in specs.workloads:
        w = entry.resource
        if not isinstance(w, PinApp | PinterestService) or w.spec.service is None:
            continue
        pod_ports = [p.name for c in w.spec.template.containers for p in c.ports]
        for sc in managed_sidecars(w.kind, w.spec.template, specs.sidecars):
            pod_ports += [p.name for p in sc.resource.spec.container.ports]
        names: dict[str, int] = {}
        numbers: dict[tuple[int, str], int] = {}
        service = w.spec.service
        for i, p in enumerate(service.ports):
            base = ("spec", "service", "ports", i)
            if p.name in names:
                yield entry.at(*base, "name").error(
                    "duplicate-service-port",
                    f"service port name '{p.name}' is already used by ports[{names[p.name]}]")
            names.setdefault(p.name, i)
            if (p.port, p.protocol) in numbers:
                yield entry.at(*base, "port").error(
                    "duplicate-service-port",
                    f"service port {p.port}/{p.protocol} is already used by "
                    f"ports[{numbers[(p.port, p.protocol)]}]")
            numbers.setdefault((p.port, p.protocol), i)
            if isinstance(p.target_port, str) and p.target_port not in pod_ports:
                yield entry.at(*base, "targetPort").error(
                    "unknown-port",
                    f"targetPort '{p.target_port}' is not a port name of any container",
                    did_you_mean(p.target_port, pod_ports, "container ports"))
        ingress = service.ingress
        if ingress is not None and ingress.port is not None:
            known = ingress.port in names if isinstance(ingress.port, str) else (
                ingress.port in {port for port, _ in numbers})
            if not known:
                yield entry.at("spec", "service", "ingress", "port").error(
                    "unknown-port", f"ingress port '{ingress.port}' is not a service port",
                    did_you_mean(str(ingress.port), [str(n) for n in names], "service ports"))


def ingress_hosts(specs: Specs) -> Iterator[Diagnostic]:
    """Two services may not claim the same ingress host and path."""
    first: dict[tuple[str, str], Entry[Any]] = {}
    for entry in by_position(specs.workloads):
        w = entry.resource
        if not isinstance(w, PinApp | PinterestService) or w.spec.service is None:
            continue
        ingress = w.spec.service.ingress
        if ingress is None:
            continue
        other = first.setdefault((ingress.host.lower(), ingress.path), entry)
        if other is not entry:
            yield entry.at("spec", "service", "ingress", "host").error(
                "duplicate-ingress",
                f"ingress host '{ingress.host}' path '{ingress.path}' is already routed to "
                f"{other.resource.kind} '{other.resource.name}' at {where(other)}")
