"""alias policy: the optional rule "no known advisory of this severity or worse in the training
environment" (issue 30, item 4): the least OSV severity that refuses a move; NULL: no such rule

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-03 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("alias_policies", schema=None) as batch_op:
        batch_op.add_column(sa.Column("advisory_severity", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("alias_policies", schema=None) as batch_op:
        batch_op.drop_column("advisory_severity")
