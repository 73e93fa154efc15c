"""tokens: scope (issue 26 item 5: a metrics-scope token reads GET /metrics and nothing else; every
existing token keeps the scope it always had, "api")

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02 18:45:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("scope", sa.String(length=16), nullable=False, server_default="api"))


def downgrade() -> None:
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.drop_column("scope")
