"""Apps' requests and usage per member cluster over time, and the clusters' allocatable
and idle capacity (cost and forecast).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

PRICES = ("price_cpu", "price_memory", "price_gpu")


def _common() -> list[sa.Column[object]]:
    return [sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("t", sa.Float, nullable=False),
            sa.Column("seconds", sa.Float, nullable=False),
            sa.Column("cluster", sa.String(253), nullable=False)]


def _amounts(*names: str, nullable: bool = False) -> list[sa.Column[object]]:
    return [sa.Column(name, sa.Float, nullable=nullable) for name in names]


def upgrade() -> None:
    op.create_table(
        "usage_samples", *_common(),
        sa.Column("kind", sa.String(63), nullable=False),
        sa.Column("project", sa.String(63), nullable=False),
        sa.Column("name", sa.String(253), nullable=False),
        sa.Column("tier", sa.String(16), nullable=False),
        sa.Column("pods", sa.Integer, nullable=False),
        *_amounts("cpu_request", "memory_request", "gpu_request", "cpu_charged",
                  "memory_charged"),
        *_amounts("cpu_usage", "memory_usage", *PRICES, nullable=True),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.UniqueConstraint("cluster", "kind", "project", "name", "t",
                            name="uq_usage_samples_app_t"),
    )
    op.create_index("ix_usage_samples_project_t", "usage_samples", ["project", "t"])
    op.create_index("ix_usage_samples_t", "usage_samples", ["t"])
    op.create_table(
        "cluster_samples", *_common(),
        *_amounts("cpu_allocatable", "memory_allocatable", "gpu_allocatable",
                  "cpu_request", "memory_request", "gpu_request", "cpu_charged",
                  "memory_charged"),
        *_amounts("cpu_usage", "memory_usage", *PRICES, nullable=True),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.UniqueConstraint("cluster", "t", name="uq_cluster_samples_cluster_t"),
    )
    op.create_index("ix_cluster_samples_t", "cluster_samples", ["t"])


def downgrade() -> None:
    op.drop_table("cluster_samples")
    op.drop_table("usage_samples")
