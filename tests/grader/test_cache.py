"""The judgement cache: memory first, then a SQLite file that outlives the process."""

from __future__ import annotations

from grader.base import Judgement, PointJudgement, PointVerdict
from grader.cache import CACHE_FILE, JudgementCache, cache_key


def sample(judge: str = "llm:m") -> Judgement:
    return Judgement(
        judge=judge, points=(PointJudgement("a", PointVerdict.PRESENT, "quote"),), feedback="ok"
    )


def test_round_trip_through_memory_and_disk(tmp_path, rl08):
    key = cache_key(rl08, "an answer", "llm:m|v1")
    cache = JudgementCache(tmp_path)
    assert cache.get(key) is None
    cache.put(key, sample())
    assert cache.get(key) == sample()
    assert (tmp_path / CACHE_FILE).exists()
    assert JudgementCache(tmp_path).get(key) == sample()  # a new process reads the file


def test_keys_change_with_card_version_answer_and_judge(rl08):
    base = cache_key(rl08, "an answer", "llm:m")
    assert base == cache_key(rl08, "an answer", "llm:m")
    assert base != cache_key(rl08, "another answer", "llm:m")
    assert base != cache_key(rl08, "an answer", "llm:other")
    assert base != cache_key(rl08.model_copy(update={"version": "changed"}), "an answer", "llm:m")


def test_the_memory_layer_is_bounded(tmp_path):
    cache = JudgementCache(disk=False, memory_size=2)
    for key in ("k1", "k2", "k3"):
        cache.put(key, sample())
    assert cache.get("k1") is None and cache.get("k3") == sample()


def test_an_unusable_directory_degrades_to_memory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = JudgementCache(blocker / "sub")
    assert cache.path is None
    cache.put("k", sample())
    assert cache.get("k") == sample()


def test_the_directory_comes_from_the_bots_settings_not_from_the_grader(tmp_path, monkeypatch):
    """The bot reads TRAPBOT_GRADER_CACHE_DIR and hands it over; the grader reads no environment."""
    from bot.config import Settings
    from grader.llm import LlmJudge

    monkeypatch.setenv("TRAPBOT_GRADER_CACHE_DIR", str(tmp_path / "env"))
    settings = Settings(_env_file=None, openai_api_key="sk-test").judge_settings()
    assert settings.cache_dir == str(tmp_path / "env")
    judge = LlmJudge.from_settings(settings)
    assert judge.cache is not None and judge.cache.path == tmp_path / "env" / CACHE_FILE
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert JudgementCache().path == tmp_path / "xdg" / "trapbot" / CACHE_FILE
