"""Settings from the environment or a ``.env`` file. Every one is in the README's table."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from platformdirs import user_data_dir
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

if TYPE_CHECKING:
    from grader.base import JudgeSettings


def default_database_url() -> str:
    directory = Path(user_data_dir("trapbot", appauthor=False))
    return f"sqlite:///{directory / 'trapbot.db'}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    database_url: str = Field(default_factory=default_database_url)
    telegram_bot_token: SecretStr | None = None
    telegram_base_url: str | None = None
    telegram_webhook_url: str | None = None
    telegram_webhook_port: int = 8443
    discord_bot_token: SecretStr | None = None
    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    trapbot_judge: Literal["auto", "llm", "offline", "self"] = "auto"
    trapbot_judge_model: str = "gpt-4o-mini"
    trapbot_judge_timeout: float = 20.0
    trapbot_sim_cache_dir: str | None = None
    trapbot_grader_cache_dir: str | None = None
    trapbot_plots: bool = True
    trapbot_metrics_port: int | None = None
    trapbot_new_per_day: int = 1
    #: Extra deck folders beside the built-in deck, separated by the OS path separator (":" or ";").
    trapbot_decks: str = ""
    trapbot_log_level: str = "INFO"
    trapbot_log_format: Literal["text", "json"] = "text"

    def secrets(self) -> list[str]:
        """Every configured secret, so logs can mask them."""
        found = [self.telegram_bot_token, self.discord_bot_token, self.openai_api_key]
        return [secret.get_secret_value() for secret in found if secret is not None]

    def judge_settings(self) -> JudgeSettings:
        """The grader's settings; the grader never reads the environment itself."""
        from grader.base import JudgeSettings

        key = self.openai_api_key.get_secret_value() if self.openai_api_key is not None else None
        return JudgeSettings(
            judge=self.trapbot_judge,
            model=self.trapbot_judge_model,
            api_key=key or None,
            base_url=self.openai_base_url or None,
            timeout=self.trapbot_judge_timeout,
            cache_dir=self.trapbot_grader_cache_dir,
        )

    @property
    def deck_dirs(self) -> list[Path]:
        """The folders ``TRAPBOT_DECKS`` lists, in its order."""
        return [Path(part).expanduser() for part in self.trapbot_decks.split(os.pathsep) if part.strip()]

    @property
    def transports(self) -> list[str]:
        """The chat platforms that have a token configured."""
        found = []
        if self.telegram_bot_token:
            found.append("telegram")
        if self.discord_bot_token:
            found.append("discord")
        return found


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
