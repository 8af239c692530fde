"""Events and applied revisions of apps.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "app_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(63), nullable=False),
        sa.Column("project", sa.String(63), nullable=False),
        sa.Column("name", sa.String(253), nullable=False),
        sa.Column("cluster", sa.String(253), nullable=False),
        sa.Column("uid", sa.String(253), nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(128), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("object", sa.String(512), nullable=False),
        sa.Column("count", sa.Integer, nullable=False),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("cluster", "uid", name="uq_app_events_cluster_uid"),
    )
    op.create_index("ix_app_events_app_last_seen", "app_events",
                    ["project", "kind", "name", "last_seen"])
    op.create_index("ix_app_events_last_seen", "app_events", ["last_seen"])
    op.create_table(
        "app_revisions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(63), nullable=False),
        sa.Column("project", sa.String(63), nullable=False),
        sa.Column("name", sa.String(253), nullable=False),
        sa.Column("revision", sa.String(128), nullable=False),
        sa.Column("commit", sa.String(64), nullable=False),
        sa.Column("author", sa.String(253), nullable=False),
        sa.Column("push", sa.String(128), nullable=False),
        sa.Column("result", sa.String(16), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("kind", "project", "name", "revision", "applied_at",
                            name="uq_app_revisions_app_revision_time"),
    )
    op.create_index("ix_app_revisions_app_applied_at", "app_revisions",
                    ["project", "kind", "name", "applied_at"])


def downgrade() -> None:
    op.drop_table("app_revisions")
    op.drop_table("app_events")
