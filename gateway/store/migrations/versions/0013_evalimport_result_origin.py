"""eval result origin: a result the gateway ran ('gateway') or one imported from lm-eval output made
elsewhere ('imported', with who imported it and when); an imported result's eval run has no gateway run
; whether an alias policy lets the gateway's gate count imported results (issue 27, item 8)

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 18:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("eval_runs", schema=None) as batch_op:
        batch_op.alter_column("run_id", existing_type=sa.String(length=64), nullable=True)
    with op.batch_alter_table("eval_results", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("origin", sa.String(length=16), nullable=False, server_default="gateway")
        )
        batch_op.add_column(sa.Column("imported_by", sa.String(length=128), nullable=True))
    with op.batch_alter_table("alias_policies", schema=None) as batch_op:
        # whether the gateway's gate for a move may count an imported result (default: it may not)
        batch_op.add_column(
            sa.Column("allow_imported_results", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("alias_policies", schema=None) as batch_op:
        batch_op.drop_column("allow_imported_results")
    with op.batch_alter_table("eval_results", schema=None) as batch_op:
        batch_op.drop_column("imported_by")
        batch_op.drop_column("origin")
    op.execute("DELETE FROM eval_runs WHERE run_id IS NULL")
    with op.batch_alter_table("eval_runs", schema=None) as batch_op:
        batch_op.alter_column("run_id", existing_type=sa.String(length=64), nullable=False)
