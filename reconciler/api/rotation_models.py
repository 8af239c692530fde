"""The API's document about a member cluster's node rotation (its OpenAPI schema)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class RotationAnswer(BaseModel):
    """A member cluster's rotation: what was asked, who paused it, how far it is."""

    cluster: str
    user: str = Field("", description="who made this call")
    message: str = Field("", description="what the call did, for people")
    request: dict[str, Any] | None = Field(
        None, description="the rotation asked for: id, by, pool, batch, pause")
    pausedBy: str | None = Field(None, description="who paused it (None: not paused)")
    status: dict[str, Any] | None = Field(
        None, description="the Cluster's status.rotation: phase, message and each node's "
                          "state, replacement and version (None: not started yet)")
