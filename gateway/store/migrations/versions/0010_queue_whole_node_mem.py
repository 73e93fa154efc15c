"""queues: whole_node_mem (gw sbatch --mem=0 is allowed only where a queue says so)

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 14:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("queues", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("whole_node_mem", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("queues", schema=None) as batch_op:
        batch_op.drop_column("whole_node_mem")
