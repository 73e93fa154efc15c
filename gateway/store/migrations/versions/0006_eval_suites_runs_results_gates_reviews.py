"""eval suites and their versions, eval runs, results (tasks, per-sample scores, files), gates, reviews

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 08:29:15
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "eval_reviews",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("target_type", sa.String(length=16), nullable=False),
        sa.Column("target_id", sa.String(length=64), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        sa.Column("notes", sa.Text(), nullable=False),
        sa.Column("samples", sa.JSON(), nullable=False),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("reviewer", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("supersedes", sa.String(length=64), nullable=True),
        sa.Column("superseded_by", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("eval_reviews", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_eval_reviews_project"), ["project"], unique=False)
        batch_op.create_index(batch_op.f("ix_eval_reviews_reviewer"), ["reviewer"], unique=False)
        batch_op.create_index(batch_op.f("ix_eval_reviews_target_id"), ["target_id"], unique=False)

    op.create_table(
        "eval_suites",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("project", "name", name="uq_eval_suite_name"),
    )
    with op.batch_alter_table("eval_suites", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_eval_suites_project"), ["project"], unique=False)

    op.create_table(
        "eval_suite_versions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("suite_id", sa.String(length=64), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("definition", sa.JSON(), nullable=False),
        sa.Column("prompt_sha256", sa.String(length=64), nullable=False),
        sa.Column("registered_by", sa.String(length=128), nullable=False),
        sa.Column("registered_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["suite_id"], ["eval_suites.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("suite_id", "content_hash", name="uq_eval_suite_version_hash"),
        sa.UniqueConstraint("suite_id", "number", name="uq_eval_suite_version_number"),
    )
    with op.batch_alter_table("eval_suite_versions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_eval_suite_versions_content_hash"), ["content_hash"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_eval_suite_versions_suite_id"), ["suite_id"], unique=False)

    op.create_table(
        "eval_runs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("suite_version_id", sa.String(length=64), nullable=False),
        sa.Column("artifact_sha256", sa.String(length=64), nullable=False),
        sa.Column("artifact_path", sa.Text(), nullable=False),
        sa.Column("artifact_run_id", sa.String(length=64), nullable=True),
        sa.Column("submitted_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["suite_version_id"],
            ["eval_suite_versions.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id"),
    )
    with op.batch_alter_table("eval_runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_eval_runs_artifact_run_id"), ["artifact_run_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_eval_runs_artifact_sha256"), ["artifact_sha256"], unique=False)
        batch_op.create_index(batch_op.f("ix_eval_runs_project"), ["project"], unique=False)
        batch_op.create_index(batch_op.f("ix_eval_runs_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_eval_runs_suite_version_id"), ["suite_version_id"], unique=False)

    op.create_table(
        "eval_suite_datasets",
        sa.Column("suite_version_id", sa.String(length=64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("ref", sa.String(length=256), nullable=False),
        sa.Column("dataset_version_id", sa.String(length=64), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_version_id"],
            ["dataset_versions.id"],
        ),
        sa.ForeignKeyConstraint(["suite_version_id"], ["eval_suite_versions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("suite_version_id", "position"),
    )
    with op.batch_alter_table("eval_suite_datasets", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_eval_suite_datasets_dataset_version_id"), ["dataset_version_id"], unique=False
        )

    op.create_table(
        "eval_results",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("eval_run_id", sa.String(length=64), nullable=False),
        sa.Column("suite_version_id", sa.String(length=64), nullable=False),
        sa.Column("harness", sa.String(length=16), nullable=False),
        sa.Column("harness_version", sa.String(length=64), nullable=True),
        sa.Column("seeds", sa.JSON(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["eval_run_id"], ["eval_runs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["suite_version_id"],
            ["eval_suite_versions.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("eval_run_id"),
    )
    with op.batch_alter_table("eval_results", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_eval_results_suite_version_id"), ["suite_version_id"], unique=False
        )

    op.create_table(
        "eval_result_files",
        sa.Column("result_id", sa.String(length=64), nullable=False),
        sa.Column("path", sa.String(length=1024), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("task", sa.String(length=128), nullable=True),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("artifact_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["artifact_id"], ["artifacts.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["result_id"], ["eval_results.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("result_id", "path"),
    )
    with op.batch_alter_table("eval_result_files", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_eval_result_files_sha256"), ["sha256"], unique=False)

    op.create_table(
        "eval_result_tasks",
        sa.Column("result_id", sa.String(length=64), nullable=False),
        sa.Column("task", sa.String(length=128), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=True),
        sa.Column("n_shot", sa.Integer(), nullable=True),
        sa.Column("task_hash", sa.String(length=128), nullable=True),
        sa.Column("n_original", sa.Integer(), nullable=False),
        sa.Column("n_effective", sa.Integer(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("higher_is_better", sa.JSON(), nullable=False),
        sa.Column("unscored", sa.JSON(), nullable=False),
        sa.Column("sample_count", sa.Integer(), nullable=False),
        sa.Column("sample_ids", sa.LargeBinary(), nullable=True),
        sa.Column("doc_hashes", sa.LargeBinary(), nullable=True),
        sa.Column("prompt_hashes", sa.LargeBinary(), nullable=True),
        sa.Column("target_hashes", sa.LargeBinary(), nullable=True),
        sa.ForeignKeyConstraint(["result_id"], ["eval_results.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("result_id", "task"),
    )
    op.create_table(
        "eval_sample_scores",
        sa.Column("result_id", sa.String(length=64), nullable=False),
        sa.Column("task", sa.String(length=128), nullable=False),
        sa.Column("metric", sa.String(length=160), nullable=False),
        sa.Column("scores", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["result_id"], ["eval_results.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("result_id", "task", "metric"),
    )
    op.create_table(
        "gate_decisions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("suite_version_id", sa.String(length=64), nullable=False),
        sa.Column("candidate_id", sa.String(length=64), nullable=False),
        sa.Column("baseline_id", sa.String(length=64), nullable=True),
        sa.Column("baseline_source", sa.String(length=32), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        sa.Column("decision", sa.JSON(), nullable=False),
        sa.Column("review_ids", sa.JSON(), nullable=False),
        sa.Column("decided_by", sa.String(length=128), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["baseline_id"],
            ["eval_results.id"],
        ),
        sa.ForeignKeyConstraint(
            ["candidate_id"],
            ["eval_results.id"],
        ),
        sa.ForeignKeyConstraint(
            ["suite_version_id"],
            ["eval_suite_versions.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("gate_decisions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_gate_decisions_baseline_id"), ["baseline_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_gate_decisions_candidate_id"), ["candidate_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_gate_decisions_project"), ["project"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_gate_decisions_suite_version_id"), ["suite_version_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("gate_decisions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_gate_decisions_suite_version_id"))
        batch_op.drop_index(batch_op.f("ix_gate_decisions_project"))
        batch_op.drop_index(batch_op.f("ix_gate_decisions_candidate_id"))
        batch_op.drop_index(batch_op.f("ix_gate_decisions_baseline_id"))

    op.drop_table("gate_decisions")
    op.drop_table("eval_sample_scores")
    op.drop_table("eval_result_tasks")
    with op.batch_alter_table("eval_result_files", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_eval_result_files_sha256"))

    op.drop_table("eval_result_files")
    with op.batch_alter_table("eval_results", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_eval_results_suite_version_id"))

    op.drop_table("eval_results")
    with op.batch_alter_table("eval_suite_datasets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_eval_suite_datasets_dataset_version_id"))

    op.drop_table("eval_suite_datasets")
    with op.batch_alter_table("eval_runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_eval_runs_suite_version_id"))
        batch_op.drop_index(batch_op.f("ix_eval_runs_status"))
        batch_op.drop_index(batch_op.f("ix_eval_runs_project"))
        batch_op.drop_index(batch_op.f("ix_eval_runs_artifact_sha256"))
        batch_op.drop_index(batch_op.f("ix_eval_runs_artifact_run_id"))

    op.drop_table("eval_runs")
    with op.batch_alter_table("eval_suite_versions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_eval_suite_versions_suite_id"))
        batch_op.drop_index(batch_op.f("ix_eval_suite_versions_content_hash"))

    op.drop_table("eval_suite_versions")
    with op.batch_alter_table("eval_suites", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_eval_suites_project"))

    op.drop_table("eval_suites")
    with op.batch_alter_table("eval_reviews", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_eval_reviews_target_id"))
        batch_op.drop_index(batch_op.f("ix_eval_reviews_reviewer"))
        batch_op.drop_index(batch_op.f("ix_eval_reviews_project"))

    op.drop_table("eval_reviews")
