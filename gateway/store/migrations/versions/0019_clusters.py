"""several Slurm clusters (issue 33): the cluster on each attempt and on each queue; NULL: the
site's first cluster (every attempt and queue recorded before clusters existed was on it)

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-03 15:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("cluster", sa.String(length=64), nullable=True))
        batch_op.create_index("ix_attempts_cluster_job_id", ["cluster", "job_id"])
    with op.batch_alter_table("queues", schema=None) as batch_op:
        batch_op.add_column(sa.Column("cluster", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("queues", schema=None) as batch_op:
        batch_op.drop_column("cluster")
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_index("ix_attempts_cluster_job_id")
        batch_op.drop_column("cluster")
