"""PinScaler at run time (pure logic, no cluster I/O): scheduled floors of the HPAs and
rebalancing of their bounds across clusters (:mod:`reconciler.scaling.rebalance`)."""

from reconciler.scaling import rebalance
from reconciler.scaling.schedules import (
    Floor,
    Schedule,
    ScheduleError,
    Window,
    evaluate,
    hpa_floor,
    parse_schedules,
    with_scheduled_floor,
)

__all__ = [
    "Floor", "Schedule", "ScheduleError", "Window", "evaluate", "hpa_floor", "parse_schedules",
    "rebalance", "with_scheduled_floor",
]
