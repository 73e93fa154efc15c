"""runs: requested_by (issue 26: a rerun of another person's run runs as its owner; the caller who
asked is recorded here, the owner stays the submitter)

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02 17:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("requested_by", sa.String(length=128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("requested_by")
