"""Canary probes and SLI samples (``serve --canary``, ``pincompile slo``).

Revision ID: 0004
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "canary_probes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("cluster", sa.String(253), nullable=False),
        sa.Column("tier", sa.String(16), nullable=False),
        sa.Column("started", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ok", sa.Boolean, nullable=False),
        sa.Column("stage", sa.String(16), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("launch_seconds", sa.Float, nullable=True),
        sa.Column("seconds", sa.Float, nullable=False),
        sa.Column("requests", sa.Integer, nullable=False),
    )
    op.create_index("ix_canary_probes_cluster_started", "canary_probes",
                    ["cluster", "started"])
    op.create_index("ix_canary_probes_started", "canary_probes", ["started"])
    op.create_table(
        "sli_samples",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("sli", sa.String(32), nullable=False),
        sa.Column("labels", sa.String(512), nullable=False),
        sa.Column("source", sa.String(253), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("errors", sa.Integer, nullable=False),
        sa.Column("buckets", sa.Text, nullable=False),
        sa.UniqueConstraint("sli", "labels", "source", "at", name="uq_sli_samples_key"),
    )
    op.create_index("ix_sli_samples_sli_at", "sli_samples", ["sli", "at"])
    op.create_index("ix_sli_samples_at", "sli_samples", ["at"])


def downgrade() -> None:
    op.drop_table("sli_samples")
    op.drop_table("canary_probes")
