"""Knowledge bases (Coze datasets): datasets, their documents, the documents' chunks with
their embeddings, and the ingestion queue (one row per document waiting to be processed).

Full text per dialect: an FTS5 table kept by triggers on SQLite, a generated ``tsvector``
column with a GIN index on PostgreSQL, a FULLTEXT index on MySQL/MariaDB.

Revision ID: 0015
Revises: 0022
Create Date: 2026-12-01 14:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

from coze_lab.store.types import UTCDateTime

revision = "0015"
down_revision = "0022"
branch_labels = None
depends_on = None

_BLOB = sa.LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb")
_TEXT = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "datasets",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("space_id", sa.BigInteger(), nullable=False),
        sa.Column("owner_id", sa.BigInteger(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=2000), nullable=False),
        sa.Column("format_type", sa.Integer(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("chunk_strategy", sa.JSON(), nullable=True),
        sa.Column("icon_file_id", sa.BigInteger(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_datasets_space_id", "datasets", ["space_id", "id"])
    op.create_table(
        "dataset_documents",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("dataset_id", sa.BigInteger(), nullable=False),
        sa.Column("space_id", sa.BigInteger(), nullable=False),
        sa.Column("owner_id", sa.BigInteger(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("file_type", sa.String(length=16), nullable=False),
        sa.Column("source_type", sa.Integer(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("char_count", sa.BigInteger(), nullable=False),
        sa.Column("slice_count", sa.Integer(), nullable=False),
        sa.Column("hit_count", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("progress", sa.Integer(), nullable=False),
        sa.Column("failure", sa.Text(), nullable=True),
        sa.Column("chunk_strategy", sa.JSON(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_dataset_documents_dataset", "dataset_documents", ["dataset_id", "id"])
    op.create_table(
        "dataset_chunks",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("document_id", sa.BigInteger(), nullable=False),
        sa.Column("dataset_id", sa.BigInteger(), nullable=False),
        sa.Column("space_id", sa.BigInteger(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("content", _TEXT, nullable=False),
        sa.Column("embedding", _BLOB, nullable=True),
        sa.ForeignKeyConstraint(["document_id"], ["dataset_documents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_dataset_chunks_document", "dataset_chunks", ["document_id", "seq"])
    op.create_index("ix_dataset_chunks_dataset", "dataset_chunks", ["dataset_id", "id"])
    op.create_table(
        "knowledge_jobs",
        sa.Column("document_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("payload", _BLOB, nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(length=64), nullable=True),
        sa.Column("lease_until", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["document_id"], ["dataset_documents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("document_id"),
    )
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        op.execute(
            "CREATE VIRTUAL TABLE dataset_chunks_fts USING fts5(content, tokenize='unicode61')"
        )
        # document frequencies of the indexed terms: searches leave out the very common
        op.execute(
            "CREATE VIRTUAL TABLE dataset_chunks_fts_vocab USING fts5vocab(dataset_chunks_fts, row)"
        )
        op.execute(
            "CREATE TRIGGER dataset_chunks_fts_insert AFTER INSERT ON dataset_chunks BEGIN "
            "INSERT INTO dataset_chunks_fts(rowid, content) VALUES (new.id, new.content); END"
        )
        op.execute(
            "CREATE TRIGGER dataset_chunks_fts_delete AFTER DELETE ON dataset_chunks BEGIN "
            "DELETE FROM dataset_chunks_fts WHERE rowid = old.id; END"
        )
    elif dialect == "postgresql":
        op.execute(
            "ALTER TABLE dataset_chunks ADD COLUMN tsv tsvector "
            "GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED"
        )
        op.execute("CREATE INDEX ix_dataset_chunks_tsv ON dataset_chunks USING gin (tsv)")
    elif dialect in ("mysql", "mariadb"):
        op.execute("CREATE FULLTEXT INDEX ft_dataset_chunks_content ON dataset_chunks (content)")


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS dataset_chunks_fts_insert")
        op.execute("DROP TRIGGER IF EXISTS dataset_chunks_fts_delete")
        op.execute("DROP TABLE IF EXISTS dataset_chunks_fts_vocab")
        op.execute("DROP TABLE IF EXISTS dataset_chunks_fts")
    op.drop_table("knowledge_jobs")
    op.drop_table("dataset_chunks")
    op.drop_table("dataset_documents")
    op.drop_table("datasets")
