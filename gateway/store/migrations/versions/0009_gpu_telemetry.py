"""GPU telemetry: attempt_telemetry (one row per harvested attempt) and gpu_summaries (one per GPU)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 14:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "attempt_telemetry",
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("note", sa.String(length=1024), nullable=True),
        sa.Column("gpus_sampled", sa.Integer(), nullable=False),
        sa.Column("idle_threshold_pct", sa.Float(), nullable=False),
        sa.Column("allocated_gpu_hours", sa.Float(), nullable=True),
        sa.Column("idle_fraction", sa.Float(), nullable=True),
        sa.Column("idle_gpu_hours", sa.Float(), nullable=True),
        sa.Column("energy_wh", sa.Float(), nullable=True),
        sa.Column("harvested_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("attempt_id"),
    )
    with op.batch_alter_table("attempt_telemetry", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_attempt_telemetry_run_id"), ["run_id"], unique=False)

    op.create_table(
        "gpu_summaries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("node", sa.String(length=128), nullable=False),
        sa.Column("gpu_index", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.String(length=96), nullable=False),
        sa.Column("name", sa.String(length=96), nullable=False),
        sa.Column("samples", sa.Integer(), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=False),
        sa.Column("util_mean_pct", sa.Float(), nullable=True),
        sa.Column("util_max_pct", sa.Float(), nullable=True),
        sa.Column("idle_fraction", sa.Float(), nullable=True),
        sa.Column("mem_peak_mib", sa.Float(), nullable=True),
        sa.Column("mem_total_mib", sa.Float(), nullable=True),
        sa.Column("energy_wh", sa.Float(), nullable=True),
        sa.Column("power_mean_w", sa.Float(), nullable=True),
        sa.Column("temp_max_c", sa.Float(), nullable=True),
        sa.Column("series", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempt_telemetry.attempt_id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("gpu_summaries", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_gpu_summaries_attempt_id"), ["attempt_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("gpu_summaries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_gpu_summaries_attempt_id"))
    op.drop_table("gpu_summaries")
    with op.batch_alter_table("attempt_telemetry", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_attempt_telemetry_run_id"))
    op.drop_table("attempt_telemetry")
