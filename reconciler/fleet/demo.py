"""The last line of ``make demo``: did every app of the examples end Healthy?

``python -m reconciler.fleet.demo [KUBECONFIG]`` reads the status ``pincompile apply``
stored on the local fleet's host cluster for every app and PinScaler and prints one line:
how many are Healthy (a finished job is Healthy), how many the examples suspend on purpose
(paused or stopped: Suspended), and every other one with its phase and reason. Exit code 0 when no
app is in another phase, 1 otherwise, 3 when the host cannot be reached.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from reconciler.model import Phase

OK_PHASES = (Phase.HEALTHY.value, Phase.SUSPENDED.value)


def summary(rows: Iterable[dict[str, Any]]) -> tuple[str, bool]:
    """(the line, whether every app is Healthy or Suspended) for ``pincompile status`` rows."""
    apps = [r for r in rows if r["kind"] != "Cluster"]
    healthy = [r for r in apps if r["status"].get("phase") == Phase.HEALTHY.value]
    suspended = [r for r in apps if r["status"].get("phase") == Phase.SUSPENDED.value]
    others = [r for r in apps if r["status"].get("phase") not in OK_PHASES]
    line = (f"demo: {len(healthy)} of {len(apps)} apps Healthy, {len(suspended)} Suspended "
            "on purpose (paused or stopped in the examples)")
    if not others:
        return f"{line}; every app is Healthy or Suspended", True
    worst = "; ".join(
        f"{r['kind']}/{r['project']}/{r['name']} {r['status'].get('phase', 'Unknown')}"
        + (f" ({r['status']['message']})" if r["status"].get("message") else "")
        for r in others)
    return f"{line}; NOT Healthy: {worst}", False


def main(argv: list[str]) -> int:
    from pincompile.models import WORKLOAD_KINDS
    from reconciler.clients.connect import ClusterUnreachable, Connection
    from reconciler.commands.common import default_kubeconfig
    from reconciler.host import app_key, read_apps, spec_kinds

    kinds = [k for k in spec_kinds() if k.kind in (*WORKLOAD_KINDS, "PinScaler")]
    conn = Connection("host", "host", argv[0] if argv else default_kubeconfig())
    try:
        rows = [{"kind": key[0], "project": key[1], "name": key[2],
                 "status": cr.get("status") or {}}
                for key, cr in sorted(read_apps(conn, kinds).items(),
                                      key=lambda i: app_key(i[1]))]
    except ClusterUnreachable as exc:
        print(f"demo: the fleet's host cluster cannot be reached: {exc}")
        return 3
    finally:
        conn.close()
    line, ok = summary(rows)
    print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
