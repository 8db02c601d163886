"""Every way the call or its reply can fail ends in the fallback judge, with one short reason
logged, against real servers on 127.0.0.1 (tests/grader/judge_server.py)."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from grader.cache import JudgementCache
from grader.llm import LlmJudge

from .judge_server import JudgeServer
from .test_llm import ANSWER

FAILURES = [
    ("garbage", "malformed reply", 1),
    ("envelope-string", "malformed reply", 1),
    ("envelope-empty-choice", "malformed reply", 1),
    ("envelope-null-message", "malformed reply", 1),
    ("envelope-number", "malformed reply", 1),
    ("envelope-list", "malformed reply", 1),
    ("wrong-schema", "invalid output", 1),
    ("429", "rate limited (429)", 2),
    ("500", "HTTP 500", 2),
    ("reset", "connection failed", 2),
    ("slow", "timeout", 1),
]


@pytest.fixture
async def server():
    server = JudgeServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def judge_for(server: JudgeServer, tmp_path, *, fallback, timeout: float = 5.0) -> LlmJudge:
    return LlmJudge(
        model="test-model",
        api_key="sk-test-secret",
        base_url=server.base_url,
        timeout=timeout,
        fallback=fallback,
        cache=JudgementCache(tmp_path / "cache"),
    )


@pytest.mark.parametrize(("behaviour", "reason", "requests"), FAILURES)
async def test_every_failure_falls_back_with_one_short_reason(
    server, offline_judge, rl08, tmp_path, caplog, behaviour, reason, requests
):
    server.behaviour, server.delay = behaviour, 8.0
    judge = judge_for(server, tmp_path, fallback=offline_judge, timeout=3.0)
    started = time.perf_counter()
    with caplog.at_level(logging.INFO, logger="grader.llm"):
        assessment = await judge.assess(rl08, ANSWER, interactive=False)
    elapsed = time.perf_counter() - started
    await judge.close()
    assert assessment.grader == f"offline (LLM judge unavailable: {reason})"
    assert assessment.grade is not None and assessment.grade.judgement.judge == "offline"
    assert len(server.requests) == requests
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and reason in warnings[0].getMessage()
    assert "sk-test-secret" not in caplog.text
    assert elapsed < 3.0 + 3.0  # the judge's timeout covers the retry; the rest is the offline reading


async def test_flaky_succeeds_on_the_retry(server, offline_judge, rl08, tmp_path):
    server.behaviour = "flaky"
    judge = judge_for(server, tmp_path, fallback=offline_judge)
    assessment = await judge.assess(rl08, ANSWER, interactive=False)
    await judge.close()
    assert assessment.grader.startswith("llm:test-model") and len(server.requests) == 2


async def test_concurrent_json_schema_rejections_downgrade_one_step(server, offline_judge, rl08, tmp_path):
    server.behaviour = "no-json-schema"
    judge = judge_for(server, tmp_path, fallback=offline_judge)
    answers = [f"{ANSWER} Variant {i} of the answer." for i in range(5)]
    assessments = await asyncio.gather(
        *(judge.assess(rl08, answer, interactive=False) for answer in answers)
    )
    assert all(a.grader.startswith("llm:test-model") for a in assessments)
    formats = [r.get("response_format", {}).get("type") for r in server.requests]
    assert formats.count("json_schema") == 5 and formats.count("json_object") == 5
    assert judge._format == "json_object"
    # Later requests keep the one step down; they do not drop to plain text.
    await judge.assess(rl08, ANSWER + " Once more.", interactive=False)
    await judge.close()
    assert server.requests[-1]["response_format"] == {"type": "json_object"}


async def test_without_a_fallback_the_reason_still_propagates_as_unavailable(server, rl08, tmp_path):
    from grader.llm import LlmJudgeUnavailable

    server.behaviour = "envelope-null-message"
    judge = judge_for(server, tmp_path, fallback=None)
    with pytest.raises(LlmJudgeUnavailable, match="malformed reply"):
        await judge.assess(rl08, ANSWER, interactive=False)
    await judge.close()


async def test_a_failure_while_checking_the_verdicts_falls_back_too(server, offline_judge, rl08, tmp_path, caplog):
    class BrokenReader:
        def judge(self, card, text, **_):
            raise RuntimeError("the embedding model is gone")

    judge = judge_for(server, tmp_path, fallback=offline_judge)
    judge.reader = BrokenReader()
    with caplog.at_level(logging.WARNING, logger="grader.llm"):
        assessment = await judge.assess(rl08, ANSWER + " A fresh variant.", interactive=False)
    await judge.close()
    assert assessment.grader == "offline (LLM judge unavailable: unexpected error)"
    assert len(caplog.records) == 1 and "RuntimeError" in caplog.records[0].getMessage()
