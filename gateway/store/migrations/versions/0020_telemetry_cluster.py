"""several Slurm clusters (issue 33): the cluster on each attempt's GPU telemetry, so a node name
(g1 on both clusters) says which machine it was; NULL: harvested before clusters existed, on the
site's first cluster. Accounting records already carry sacct's Cluster in their key (0008).

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-03 15:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempt_telemetry", schema=None) as batch_op:
        batch_op.add_column(sa.Column("cluster", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attempt_telemetry", schema=None) as batch_op:
        batch_op.drop_column("cluster")
