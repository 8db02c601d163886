"""group decks: the decks /trap draws from in a group chat (a Telegram group), chosen by its
admins (issue 41, "Choosing decks"). No row, or NULL decks, means every loaded deck.

Revision ID: i41_group_decks
Revises: r42_push_failures
Create Date: 2026-12-07 06:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "i41_group_decks"
down_revision = "r42_push_failures"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "group_chat",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("chat_id", sa.String(length=64), nullable=False),
        sa.Column("decks", sa.JSON(), nullable=True),
        sa.Column("revision", sa.Integer(), server_default="0", nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_group_chat")),
        sa.UniqueConstraint("platform", "chat_id", name=op.f("uq_group_chat_platform_chat_id")),
    )


def downgrade() -> None:
    op.drop_table("group_chat")
