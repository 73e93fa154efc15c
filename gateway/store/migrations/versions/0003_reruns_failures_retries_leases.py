"""reruns, failures, retries, leases

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 05:00:08.520431
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "leases",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("holder", sa.String(length=128), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("failure", sa.JSON(), nullable=True))
        batch_op.add_column(
            sa.Column("origin", sa.String(length=16), nullable=False, server_default="submit")
        )
        batch_op.add_column(sa.Column("excluded_nodes", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("slurm_record", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("superseded", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column("retry_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index("ix_attempts_retry_at", ["retry_at"], unique=False)

    with op.batch_alter_table("queues", schema=None) as batch_op:
        batch_op.add_column(sa.Column("retry", sa.JSON(), nullable=True))

    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("parent_run_id", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("derived_diff", sa.JSON(), nullable=True))
        batch_op.create_index(batch_op.f("ix_runs_parent_run_id"), ["parent_run_id"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_parent_run_id"))
        batch_op.drop_column("derived_diff")
        batch_op.drop_column("parent_run_id")

    with op.batch_alter_table("queues", schema=None) as batch_op:
        batch_op.drop_column("retry")

    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_index("ix_attempts_retry_at")
        batch_op.drop_column("retry_at")
        batch_op.drop_column("superseded")
        batch_op.drop_column("slurm_record")
        batch_op.drop_column("excluded_nodes")
        batch_op.drop_column("origin")
        batch_op.drop_column("failure")

    op.drop_table("leases")
