"""sweep tasks' metrics stored (issue 31, item 4): each array task's metrics, recorded by the harvest
when the task ends (``task_metrics``), and the mark that a task was harvested, with why a metrics
file was not read (``task_outputs``); the tasks compare page reads them instead of every task's files

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-04 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "task_outputs",
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("task_index", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("harvested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("attempt_id", "task_index"),
    )
    with op.batch_alter_table("task_outputs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_task_outputs_run_id"), ["run_id"], unique=False)
    op.create_table(
        "task_metrics",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("task_index", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("step", sa.BigInteger(), nullable=True),
        sa.Column("value", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("task_metrics", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_task_metrics_run_id"), ["run_id"], unique=False)
        batch_op.create_index("ix_task_metrics_attempt_task", ["attempt_id", "task_index"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("task_metrics", schema=None) as batch_op:
        batch_op.drop_index("ix_task_metrics_attempt_task")
        batch_op.drop_index(batch_op.f("ix_task_metrics_run_id"))
    op.drop_table("task_metrics")
    with op.batch_alter_table("task_outputs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_task_outputs_run_id"))
    op.drop_table("task_outputs")
