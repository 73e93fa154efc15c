"""handoff: the outbox of MLflow mirror jobs and webhook deliveries, and each try at them (issue 34)

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-03 09:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "handoff_outbox",
        sa.Column("id", sa.String(length=64), primary_key=True),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("subject", sa.String(length=64), nullable=False),
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("target", sa.String(length=64), nullable=False),
        sa.Column("event_type", sa.String(length=32), nullable=False),
        sa.Column("event_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("body", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("done_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("kind", "subject", "target", name="uq_handoff_item"),
    )
    op.create_index("ix_handoff_outbox_subject", "handoff_outbox", ["subject"])
    op.create_index("ix_handoff_outbox_project", "handoff_outbox", ["project"])
    op.create_index("ix_handoff_due", "handoff_outbox", ["status", "next_at"])
    op.create_table(
        "handoff_attempts",
        sa.Column("id", sa.String(length=64), primary_key=True),
        sa.Column("item_id", sa.String(length=64), sa.ForeignKey("handoff_outbox.id"), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("delivery_id", sa.String(length=64), nullable=False),
    )
    op.create_index("ix_handoff_attempts_item_id", "handoff_attempts", ["item_id"])


def downgrade() -> None:
    op.drop_index("ix_handoff_attempts_item_id", table_name="handoff_attempts")
    op.drop_table("handoff_attempts")
    op.drop_index("ix_handoff_due", table_name="handoff_outbox")
    op.drop_index("ix_handoff_outbox_project", table_name="handoff_outbox")
    op.drop_index("ix_handoff_outbox_subject", table_name="handoff_outbox")
    op.drop_table("handoff_outbox")
