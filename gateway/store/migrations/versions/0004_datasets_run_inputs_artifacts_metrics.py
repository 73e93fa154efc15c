"""datasets, run inputs, artifacts, metrics

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 07:34:31.700112
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "datasets",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("project", "name", name="uq_dataset_name"),
    )
    with op.batch_alter_table("datasets", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_datasets_project"), ["project"], unique=False)

    op.create_table(
        "dataset_shares",
        sa.Column("dataset_id", sa.String(length=64), nullable=False),
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("shared_by", sa.String(length=128), nullable=False),
        sa.Column("shared_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("dataset_id", "project"),
    )
    with op.batch_alter_table("dataset_shares", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_dataset_shares_project"), ["project"], unique=False)

    op.create_table(
        "dataset_versions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("dataset_id", sa.String(length=64), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("path", sa.Text(), nullable=True),
        sa.Column("source_uri", sa.Text(), nullable=False),
        sa.Column("file_count", sa.Integer(), nullable=False),
        sa.Column("total_bytes", sa.BigInteger(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("license", sa.Text(), nullable=False),
        sa.Column("registered_by", sa.String(length=128), nullable=False),
        sa.Column("registered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("parent_id", sa.String(length=64), nullable=True),
        sa.Column("made_by_run_id", sa.String(length=64), nullable=True),
        sa.Column("made_by_command", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["parent_id"],
            ["dataset_versions.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("dataset_id", "digest", name="uq_dataset_version_digest"),
        sa.UniqueConstraint("dataset_id", "number", name="uq_dataset_version_number"),
    )
    with op.batch_alter_table("dataset_versions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_dataset_versions_dataset_id"), ["dataset_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_dataset_versions_digest"), ["digest"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_dataset_versions_made_by_run_id"), ["made_by_run_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_dataset_versions_parent_id"), ["parent_id"], unique=False)

    op.create_table(
        "artifacts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("artifacts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_artifacts_attempt_id"), ["attempt_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_artifacts_run_id"), ["run_id"], unique=False)
        batch_op.create_index("ix_artifacts_run_path", ["run_id", "path"], unique=False)
        batch_op.create_index(batch_op.f("ix_artifacts_sha256"), ["sha256"], unique=False)

    op.create_table(
        "dataset_files",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("version_id", sa.String(length=64), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(["version_id"], ["dataset_versions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("dataset_files", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_dataset_files_sha256"), ["sha256"], unique=False)
        batch_op.create_index(batch_op.f("ix_dataset_files_version_id"), ["version_id"], unique=False)

    op.create_table(
        "run_inputs",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("ref", sa.String(length=256), nullable=False),
        sa.Column("version_id", sa.String(length=64), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("verify", sa.String(length=16), nullable=False),
        sa.Column("env_var", sa.String(length=128), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["dataset_versions.id"],
        ),
        sa.PrimaryKeyConstraint("run_id", "position"),
    )
    with op.batch_alter_table("run_inputs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_run_inputs_version_id"), ["version_id"], unique=False)

    op.create_table(
        "run_metrics",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("step", sa.BigInteger(), nullable=True),
        sa.Column("value", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("run_metrics", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_run_metrics_run_id"), ["run_id"], unique=False)

    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("outputs_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("outputs_note", sa.String(length=1024), nullable=True))
        batch_op.create_index(batch_op.f("ix_attempts_outputs_at"), ["outputs_at"], unique=False)

    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("code", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("environment", sa.JSON(), nullable=True))


def downgrade() -> None:

    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("environment")
        batch_op.drop_column("code")

    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_attempts_outputs_at"))
        batch_op.drop_column("outputs_note")
        batch_op.drop_column("outputs_at")

    with op.batch_alter_table("run_metrics", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_metrics_run_id"))

    op.drop_table("run_metrics")
    with op.batch_alter_table("run_inputs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_inputs_version_id"))

    op.drop_table("run_inputs")
    with op.batch_alter_table("dataset_files", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_dataset_files_version_id"))
        batch_op.drop_index(batch_op.f("ix_dataset_files_sha256"))

    op.drop_table("dataset_files")
    with op.batch_alter_table("artifacts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_artifacts_sha256"))
        batch_op.drop_index("ix_artifacts_run_path")
        batch_op.drop_index(batch_op.f("ix_artifacts_run_id"))
        batch_op.drop_index(batch_op.f("ix_artifacts_attempt_id"))

    op.drop_table("artifacts")
    with op.batch_alter_table("dataset_versions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_dataset_versions_parent_id"))
        batch_op.drop_index(batch_op.f("ix_dataset_versions_made_by_run_id"))
        batch_op.drop_index(batch_op.f("ix_dataset_versions_digest"))
        batch_op.drop_index(batch_op.f("ix_dataset_versions_dataset_id"))

    op.drop_table("dataset_versions")
    with op.batch_alter_table("dataset_shares", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_dataset_shares_project"))

    op.drop_table("dataset_shares")
    with op.batch_alter_table("datasets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_datasets_project"))

    op.drop_table("datasets")
