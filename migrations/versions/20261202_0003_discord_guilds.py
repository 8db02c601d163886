"""discord guilds: a server's trap of the day and its opt-in streak leaderboard

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 10:06:53.573767
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "discord_guild",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guild_id", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("channel_id", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("post_time", sa.Time(), nullable=False),
        sa.Column("timezone", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("enabled", sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.Column("configured_by", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("last_posted_on", sa.Date(), nullable=True),
        sa.Column("last_card_id", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
        sa.Column("last_message_id", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column("last_error", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_discord_guild")),
        sa.UniqueConstraint("guild_id", name=op.f("uq_discord_guild_guild_id")),
    )
    op.create_table(
        "discord_leaderboard",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guild_id", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("learner_id", sa.Integer(), nullable=False),
        sa.Column("joined_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["learner_id"],
            ["learner.id"],
            name=op.f("fk_discord_leaderboard_learner_id_learner"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_discord_leaderboard")),
        sa.UniqueConstraint(
            "guild_id", "learner_id", name=op.f("uq_discord_leaderboard_guild_id_learner_id")
        ),
    )
    with op.batch_alter_table("discord_leaderboard", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_discord_leaderboard_guild_id"), ["guild_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("discord_leaderboard", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_discord_leaderboard_guild_id"))

    op.drop_table("discord_leaderboard")
    op.drop_table("discord_guild")
