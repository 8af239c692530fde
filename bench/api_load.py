"""The load generator of bench/api_bench.py: wrk (Debian's ``wrk``, C, epoll), ``clients``
keep-alive connections over two threads, each GETting a random path of a list as soon as
its last answer came back. It spends about a tenth of the server's CPU per request
(measured: :attr:`Load.cpu_ms`), so on a 2-core machine the server, not the clients, runs
out first; 50 aiohttp clients in one Python process spent 0.7-0.8 ms per request, half the
server's, and held it to a third of wrk's rate at the same load.
"""

from __future__ import annotations

import json
import resource
import shutil
import ssl
import statistics
import subprocess
import tempfile
import urllib.request
from dataclasses import dataclass

THREADS = 2
MARK = "WRK-RESULT "
SCRIPT = """
local paths = {%(paths)s}
local threads = 0
function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end
function init(args)
  math.randomseed(1 + id)
%(headers)s
end
function request()
  return wrk.format("GET", paths[math.random(#paths)])
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '%(mark)s{"requests": %%d, "duration_us": %%d, "bytes": %%d, "errors": %%d, ' ..
    '"p50_us": %%d, "p99_us": %%d, "max_us": %%d}\\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
"""


class LoadToolMissing(RuntimeError):
    """wrk is not installed."""


@dataclass(frozen=True)
class Load:
    """What one run of the load generator saw."""

    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    errors: int
    cpu_ms: float
    """wrk's own CPU time (user + system) per request."""

    @property
    def rate(self) -> float:
        return self.requests / self.seconds


def lua_string(text: str) -> str:
    """``text`` as a Lua string literal."""
    return json.dumps(text)  # a JSON string of ASCII is a valid Lua string


def script(paths: list[str], headers: dict[str, str]) -> str:
    """wrk's Lua script: a random one of ``paths`` per request, with ``headers``, and the
    results as one JSON line after :data:`MARK`."""
    return SCRIPT % {
        "paths": ", ".join(lua_string(p) for p in paths), "mark": MARK,
        "headers": "\n".join(f"  wrk.headers[{lua_string(k)}] = {lua_string(v)}"
                             for k, v in headers.items())}


def parse(output: str, cpu_seconds: float) -> Load:
    """The result line of wrk's output (see :func:`script`); wrk used ``cpu_seconds``."""
    for line in output.splitlines():
        if line.startswith(MARK):
            got = json.loads(line[len(MARK):])
            return Load(requests=got["requests"], seconds=got["duration_us"] / 1e6,
                        p50_ms=got["p50_us"] / 1000, p99_ms=got["p99_us"] / 1000,
                        max_ms=got["max_us"] / 1000, errors=got["errors"],
                        cpu_ms=1000 * cpu_seconds / max(1, got["requests"]))
    raise ValueError(f"no result in wrk's output: {output[-500:]!r}")


def run(base: str, paths: list[str], clients: int, seconds: float,
        headers: dict[str, str]) -> Load:
    """``clients`` connections GETting random ``paths`` of ``base`` for ``seconds``."""
    wrk = shutil.which("wrk")
    if wrk is None:
        raise LoadToolMissing("the load generator wrk is not installed "
                              "(Debian: apt-get install wrk)")
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
        lua.write(script(paths, headers))
        lua.flush()
        cpu = children_cpu()
        done = subprocess.run(
            [wrk, f"--threads={min(THREADS, clients)}", f"--connections={clients}",
             f"--duration={max(1, round(seconds))}s", "--timeout=30s",
             f"--script={lua.name}", base],
            capture_output=True, text=True, timeout=seconds + 60, check=False)
        cpu = children_cpu() - cpu
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr[-500:]}")
    return parse(done.stdout, cpu)


def children_cpu() -> float:
    """User + system CPU seconds of this process's children that ended so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def body_bytes(base: str, paths: list[str], headers: dict[str, str], sample: int = 50
               ) -> float:
    """The mean size of the answers' bodies to (up to ``sample`` of) ``paths``; a
    self-signed HTTPS server is not verified (a loopback one this bench started)."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    sizes = []
    for path in paths[:: max(1, len(paths) // sample)][:sample]:
        ask = urllib.request.Request(base + path, headers=headers)
        with urllib.request.urlopen(ask, timeout=30, context=context) as answer:
            sizes.append(len(answer.read()))
    return statistics.mean(sizes)

