"""The insight documents of the API (their OpenAPI schema): projects and clusters."""

from __future__ import annotations

from pydantic import BaseModel, Field

Quantities = dict[str, str]
"""Resource → Kubernetes quantity (``cpu``, ``memory``, ``nvidia.com/gpu``, ``pods``)."""


class Failover(BaseModel):
    phase: str = Field(description="Reachable, Unreachable, Lost or Returning")
    reason: str = ""
    since: str | None = None


class Amounts(BaseModel):
    allocatable: Quantities | None = None
    requested: Quantities | None = Field(None, description="what running pods on the "
                                         "nodes request, as the scheduler counts it")
    used: Quantities | None = Field(None, description="what they use (metrics API); null "
                                    "when it cannot be read")
    requestedByTier: dict[str, Quantities] = Field(
        {}, description="reserved, ondemand, preemptible, other (pods of no tier)")
    usedByTier: dict[str, Quantities | None] = {}


class NodePool(Amounts):
    name: str
    nodes: int
    ready: int
    tiers: list[str] = Field(description="the tiers its nodes serve (pincompute.io/tier-*)")


class NodeCount(BaseModel):
    total: int
    ready: int


class ClusterInsight(Amounts):
    """A member cluster: its spec's capacity, the reconciler's failover state, and what
    this server reads of it now."""

    name: str
    region: str | None = None
    zone: str | None = None
    capacity: Quantities = Field(description="as its Cluster spec says")
    failover: Failover
    reachable: bool
    problem: str = ""
    readAt: str | None = None
    nodes: NodeCount | None = None
    pending: Quantities | None = Field(None, description="pods not on a node yet")
    pools: list[NodePool] = []


class ClusterList(BaseModel):
    items: list[ClusterInsight]


class ClusterQuota(BaseModel):
    hard: Quantities | None = Field(None, description="the tier's ResourceQuota there")
    requested: Quantities | None = None
    used: Quantities | None = None


class TierQuota(BaseModel):
    limit: Quantities | None = Field(description="the Project's quota for the tier, across "
                                     "the fleet; null: the tier allows nothing")
    requested: Quantities | None = None
    used: Quantities | None = None
    clusters: dict[str, ClusterQuota] = {}


class ProjectInsight(BaseModel):
    name: str
    namespace: str
    owners: list[str] = []
    tiers: dict[str, TierQuota]
    unreadable: list[str] = Field([], description="member clusters that could not be read")


class ProjectList(BaseModel):
    items: list[ProjectInsight]


class Hours(BaseModel):
    cpuCoreHours: float
    memoryGiBHours: float
    gpuHours: float | None = None


class Efficiency(BaseModel):
    cpu: float | None = Field(description="used ÷ requested while usage was measured")
    memory: float | None


class AppCost(BaseModel):
    app: str = Field(description="KIND/PROJECT/NAME")
    tier: str
    cost: float = Field(description="max(request, usage) x price per hour, pod by pod")
    costByResource: dict[str, float]
    requested: Hours
    used: Hours
    efficiency: Efficiency
    unpricedHours: float = Field(description="hours in clusters or tiers without prices")


class ProjectCostEntry(BaseModel):
    project: str
    cost: float
    byTier: dict[str, float]
    requested: Hours | None = None
    used: Hours | None = None
    efficiency: Efficiency | None = None
    unpricedHours: float = 0.0
    apps: list[AppCost]


class IdleCost(BaseModel):
    cluster: str
    capacityCost: float = Field(description="what its allocatable capacity costs")
    idleCost: float = Field(description="allocatable no pod is charged for, at its "
                            "ondemand prices; never attributed to projects")
    idleShare: float | None
    unpricedHours: float = 0.0


class CostReport(BaseModel):
    since: str
    until: str
    currency: str
    projects: list[ProjectCostEntry]
    idle: list[IdleCost]


class ProjectCost(ProjectCostEntry):
    since: str
    until: str
    currency: str
    idle: list[IdleCost]


class FitExplained(BaseModel):
    points: int
    trendPerDay: float
    seasonality: str = Field(description="weekly, daily or none")
    seasonalAmplitude: float
    residualStd: float
    r2: float | None


class DailyValue(BaseModel):
    at: str
    value: float


class SeriesForecast(BaseModel):
    resource: str
    unit: str = Field(description="cores or GiB")
    limit: float | None = Field(description="the quota (projects) or allocatable (clusters)")
    last: float = Field(description="the fitted value at the last point")
    model: FitExplained
    runsOut: str | None = Field(description="the first hour the forecast exceeds the limit")
    overAlready: bool
    daily: list[DailyValue]


class ProjectSeries(SeriesForecast):
    tier: str
    measure: str = Field(description="requested or used")


class ProjectForecast(BaseModel):
    project: str
    series: list[ProjectSeries]


class ClusterForecast(SeriesForecast):
    cluster: str


class ForecastReport(BaseModel):
    since: str
    until: str
    bucketSeconds: float
    horizonDays: float
    model: str
    projects: list[ProjectForecast]
    clusters: list[ClusterForecast] | None = Field(
        description="null: the caller may not list clusters")
