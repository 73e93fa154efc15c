"""runs, attempts and state events

Revision ID: 0001
Revises:
Create Date: 2026-11-30 04:18:49.434142
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("queue", sa.String(length=64), nullable=False),
        sa.Column("submitter", sa.String(length=128), nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("spec_sha256", sa.String(length=64), nullable=False),
        sa.Column("script", sa.Text(), nullable=False),
        sa.Column("script_sha256", sa.String(length=64), nullable=False),
        sa.Column("template_name", sa.String(length=128), nullable=False),
        sa.Column("template_version", sa.String(length=32), nullable=False),
        sa.Column("run_dir", sa.String(length=1024), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index("ix_runs_created", ["created_at", "id"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_project"), ["project"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_state"), ["state"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_submitter"), ["submitter"], unique=False)

    op.create_table(
        "attempts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("tag", sa.String(length=128), nullable=False),
        sa.Column("job_id", sa.String(length=32), nullable=True),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("slurm_state", sa.String(length=32), nullable=True),
        sa.Column("reason", sa.String(length=256), nullable=True),
        sa.Column("stale", sa.Boolean(), nullable=False),
        sa.Column("node_list", sa.String(length=1024), nullable=True),
        sa.Column("submit_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("start_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("end_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("exit_signal", sa.Integer(), nullable=True),
        sa.Column("elapsed_s", sa.Integer(), nullable=True),
        sa.Column("alloc_tres", sa.JSON(), nullable=False),
        sa.Column("max_rss_kb", sa.BigInteger(), nullable=True),
        sa.Column("cancelled_by_uid", sa.Integer(), nullable=True),
        sa.Column("timelimit_min", sa.Integer(), nullable=True),
        sa.Column("tasks", sa.JSON(), nullable=False),
        sa.Column("array_size", sa.Integer(), nullable=True),
        sa.Column("expected_start", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "number", name="uq_attempt_number"),
        sa.UniqueConstraint("tag"),
    )
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_attempts_job_id"), ["job_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_attempts_run_id"), ["run_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_attempts_state"), ["state"], unique=False)

    op.create_table(
        "run_tags",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("tag", sa.String(length=128), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "tag"),
    )
    with op.batch_alter_table("run_tags", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_run_tags_tag"), ["tag"], unique=False)

    op.create_table(
        "state_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("from_state", sa.String(length=32), nullable=True),
        sa.Column("to_state", sa.String(length=32), nullable=False),
        sa.Column("slurm_state", sa.String(length=32), nullable=True),
        sa.Column("reason", sa.String(length=1024), nullable=True),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("state_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_state_events_attempt_id"), ["attempt_id"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("state_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_state_events_attempt_id"))

    op.drop_table("state_events")
    with op.batch_alter_table("run_tags", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_tags_tag"))

    op.drop_table("run_tags")
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_attempts_state"))
        batch_op.drop_index(batch_op.f("ix_attempts_run_id"))
        batch_op.drop_index(batch_op.f("ix_attempts_job_id"))

    op.drop_table("attempts")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_submitter"))
        batch_op.drop_index(batch_op.f("ix_runs_state"))
        batch_op.drop_index(batch_op.f("ix_runs_project"))
        batch_op.drop_index("ix_runs_created")

    op.drop_table("runs")
