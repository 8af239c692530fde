"""batch/CronJob, judged by its last run: suspended is Suspended; a running Job is
Progressing; never scheduled is Healthy; otherwise Healthy when the last success is not
older than the last schedule, and Degraded when the last scheduled run did not succeed."""

from __future__ import annotations

from datetime import datetime

from reconciler.health.fields import spec, status
from reconciler.model import Health, Obj, Phase


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def health(obj: Obj) -> Health:
    if spec(obj).get("suspend"):
        return Health(Phase.SUSPENDED, "the cron job is suspended")
    st = status(obj)
    active = [ref.get("name", "") for ref in st.get("active") or []]
    if active:
        return Health(Phase.PROGRESSING, f"running: {', '.join(active)}")
    scheduled = _time(st.get("lastScheduleTime"))
    succeeded = _time(st.get("lastSuccessfulTime"))
    if scheduled is None:
        return Health(Phase.HEALTHY, "not run yet")
    if succeeded is not None and succeeded >= scheduled:
        return Health(Phase.HEALTHY)
    since = f"last success at {st['lastSuccessfulTime']}" if succeeded else "never succeeded"
    return Health(Phase.DEGRADED,
                  f"the run scheduled at {st['lastScheduleTime']} did not succeed ({since})")
