"""PinScalers' replicas over time (the console's scaling chart).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "scale_samples",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(63), nullable=False),
        sa.Column("project", sa.String(63), nullable=False),
        sa.Column("name", sa.String(253), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("desired", sa.Integer, nullable=False),
        sa.Column("ready", sa.Integer, nullable=False),
        sa.Column("floor", sa.Integer, nullable=False),
        sa.UniqueConstraint("kind", "project", "name", "at", name="uq_scale_samples_app_at"),
    )
    op.create_index("ix_scale_samples_at", "scale_samples", ["at"])


def downgrade() -> None:
    op.drop_table("scale_samples")
