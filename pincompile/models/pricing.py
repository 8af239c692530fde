"""A member cluster's price table (``Cluster.spec.prices``): what an hour of a core, of a
GiB of memory and of a GPU costs in each tier it sells. ``pincompile cost`` charges each
app the larger of what it requests and what it uses at these prices."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, ValidationInfo, field_validator

from pincompile.models.base import Strict

Price = Annotated[float, Field(ge=0, le=1_000_000, allow_inf_nan=False)]
"""An hourly price, in the table's currency (a JSON number, as the host's CRD stores it)."""


class TierPrices(Strict):
    """Hourly prices of one tier."""

    cpu: Price = 0.0
    """Per core-hour."""
    memory: Price = 0.0
    """Per GiB-hour."""
    gpu: Price = Field(0.0, alias="nvidia.com/gpu")
    """Per GPU-hour."""


class Prices(Strict):
    """Per tier, what an hour of each resource costs here; a tier left out is not priced
    (its apps' cost is reported as unknown). Preemptible capacity is never dearer than
    another tier's."""

    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")] = "USD"
    """ISO 4217 code, shown with every cost."""
    reserved: TierPrices | None = None
    ondemand: TierPrices | None = None
    preemptible: TierPrices | None = None

    @field_validator("preemptible")
    @classmethod
    def _cheapest(cls, value: TierPrices | None, info: ValidationInfo) -> TierPrices | None:
        if value is None:
            return value
        for tier in ("ondemand", "reserved"):
            other: Any = info.data.get(tier)
            if other is None:
                continue
            for name in ("cpu", "memory", "gpu"):
                if getattr(value, name) > getattr(other, name):
                    shown = "nvidia.com/gpu" if name == "gpu" else name
                    raise ValueError(
                        f"preemptible {shown} costs {getattr(value, name)} an hour, more "
                        f"than {tier}'s {getattr(other, name)}: preemptible capacity is "
                        "the cheapest")
        return value
