"""decks: the decks a learner studies and a Discord server's trap of the day draws from (issue 41)

NULL in both means every loaded deck, so existing learners and servers keep what they had.

Revision ID: i41_decks
Revises: i15_interview
Create Date: 2026-12-07 04:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "i41_decks"
down_revision = "i15_interview"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("learner", schema=None) as batch_op:
        batch_op.add_column(sa.Column("decks", sa.JSON(), nullable=True))
    with op.batch_alter_table("discord_guild", schema=None) as batch_op:
        batch_op.add_column(sa.Column("decks", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("discord_guild", schema=None) as batch_op:
        batch_op.drop_column("decks")
    with op.batch_alter_table("learner", schema=None) as batch_op:
        batch_op.drop_column("decks")
