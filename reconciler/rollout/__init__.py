"""Zone-by-zone rollout: :mod:`.plan` decides which zone gets the new template (pure);
:mod:`.step` is the pass's step (holds later zones, advances, records halts)."""

from reconciler.rollout.plan import (
    COMPLETE,
    HALTED,
    HEALTH_TIMEOUT_ANNOTATION,
    PROGRESSING,
    STRATEGY_ANNOTATION,
    TEMPLATE_HASH_ANNOTATION,
    ZONE_BY_ZONE,
    AppRollout,
    State,
    advance,
    begin,
    health_timeout,
    hold,
    is_zone_by_zone,
    rolled_out,
    stamp,
    template_hash,
)

__all__ = [
    "COMPLETE", "HALTED", "HEALTH_TIMEOUT_ANNOTATION", "PROGRESSING", "STRATEGY_ANNOTATION",
    "TEMPLATE_HASH_ANNOTATION", "ZONE_BY_ZONE", "AppRollout", "State", "advance", "begin",
    "health_timeout", "hold", "is_zone_by_zone", "rolled_out", "stamp", "template_hash",
]
