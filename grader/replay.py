"""Recorded replies of a model acting as the LLM judge, and a loopback endpoint that replays them.

A replies file holds one JSON object a line::

    {"request_key": "<hex>", "prompt_version": "llm-1", "card_id": "rl-01",
     "answer_id": "<id of the labelled answer>", "answer_sha256": "<sha256 of the answer, utf-8>",
     "model": "<who wrote it>", "made_by": "<how it was made>", "content": "<the reply text>"}

``request_key`` identifies the exact request: the sha256 of the JSON list of its message texts
with the random delimiter renamed ``answer-000000000000``. So a reply is found again only for
the same prompt, card version and answer; a change to any of them leaves the answer without a
reply (counted, never guessed). ``ReplayServer`` speaks the chat-completions protocol on
127.0.0.1 and answers each request with its stored reply (404 when it has none), so the whole
``LlmJudge`` runs unchanged, offline: in tests and in ``trapbot grader eval --replies``.
``record`` makes such a file from a live endpoint (``trapbot grader record``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiohttp import web

    from cards.schema import Card

FIXED_TAG = "answer-000000000000"
_TAG = re.compile(r"<(answer-[0-9a-f]+)>")
FIELDS = ("request_key", "prompt_version", "card_id", "answer_id", "answer_sha256", "model", "made_by", "content")


def request_key(messages: Iterable[dict[str, str]]) -> str:
    """The key of a request: its message texts with the delimiter renamed ``FIXED_TAG``, hashed."""
    contents = [m["content"] for m in messages]
    # The last message's last opening tag is the delimiter: the answer inside it is escaped,
    # so no tag-like text of the learner's can be taken for it.
    tags = _TAG.findall(contents[-1]) if contents else []
    if tags:
        tag = tags[-1]
        contents = [
            text.replace(f"<{tag}>", f"<{FIXED_TAG}>").replace(f"</{tag}>", f"</{FIXED_TAG}>")
            for text in contents
        ]
    material = json.dumps(contents, ensure_ascii=False)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def key_for(card: Card, answer: str) -> str:
    """The request key of ``answer`` to ``card`` under today's prompt."""
    from grader.llm import build_messages

    return request_key(build_messages(card, answer, tag=FIXED_TAG))


def answer_sha256(answer: str) -> str:
    return hashlib.sha256(answer.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class StoredReply:
    request_key: str
    prompt_version: str
    card_id: str
    answer_id: str
    answer_sha256: str
    model: str
    made_by: str
    content: str

    def to_json(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in FIELDS}


def load_replies(path: Path | str) -> dict[str, StoredReply]:
    """Stored replies by request key; ``ValueError`` naming the line of a malformed one. A key
    seen twice keeps its last reply (a re-recording appended to the file wins)."""
    replies: dict[str, StoredReply] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            reply = StoredReply(**{name: str(data[name]) for name in FIELDS})
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{path}:{number}: not a stored reply ({error})") from error
        replies[reply.request_key] = reply
    return replies


def chat_completion(content: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-replay",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
    }


@dataclass
class ReplayServer:
    """A chat-completions endpoint on 127.0.0.1 that answers each request with its stored reply."""

    replies: dict[str, StoredReply]
    requests: int = 0
    missed: list[str] = field(default_factory=list)  # request keys with no stored reply
    base_url: str = ""
    _runner: web.AppRunner | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        self.requests += 1
        body = await request.json()
        key = request_key(body.get("messages", ()))
        found = self.replies.get(key)
        if found is None:
            self.missed.append(key)
            return web.json_response(
                {"error": {"message": f"no stored reply for request {key[:12]}", "type": "replay", "code": 404}},
                status=404,
            )
        return web.json_response(chat_completion(found.content, body.get("model", found.model)))

    async def start(self) -> str:
        from aiohttp import web

        app = web.Application(client_max_size=4 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self.handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ReplayServer:  # noqa: PYI034 - never subclassed
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


async def record(
    judge: Any,
    deck: Any,
    examples: list[Any],
    out: Path,
    *,
    made_by: str,
    concurrency: int = 4,
    progress: Callable[[str], None] | None = None,
) -> dict[str, int]:
    """Send each labelled answer's exact request through ``judge`` (an ``LlmJudge``) and append
    its reply to ``out``; answers whose request already has a reply there are skipped, so an
    interrupted run resumes. Returns counts: recorded, skipped, failed."""
    from grader.llm import PROMPT_VERSION, build_messages

    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    done_keys = set(load_replies(out)) if out.exists() else set()
    todo = [e for e in examples if key_for(deck.get(e.card_id), e.answer) not in done_keys]
    counts = {"recorded": 0, "skipped": len(examples) - len(todo), "failed": 0}
    semaphore = asyncio.Semaphore(max(1, concurrency))
    lock = asyncio.Lock()
    step = max(1, len(todo) // 20)
    finished = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    say(f"recording {len(todo)} replies ({counts['skipped']} already in {out})")

    async def one(example: Any) -> None:
        nonlocal finished
        card = deck.get(example.card_id)
        messages = build_messages(card, example.answer)
        async with semaphore:
            try:
                content = await judge.reply(card, messages)
            except Exception as error:  # noqa: BLE001 - counted and named, the run goes on
                counts["failed"] += 1
                say(f"  {example.id}: no reply ({getattr(error, 'reason', type(error).__name__)})")
                content = None
        if content is not None:
            stored = StoredReply(
                request_key=request_key(messages),
                prompt_version=PROMPT_VERSION,
                card_id=card.id,
                answer_id=example.id,
                answer_sha256=answer_sha256(example.answer),
                model=judge.model,
                made_by=made_by,
                content=content,
            )
            async with lock:
                with out.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(stored.to_json(), ensure_ascii=False) + "\n")
                counts["recorded"] += 1
        finished += 1
        if finished % step == 0 or finished == len(todo):
            say(f"  {finished}/{len(todo)} sent, {counts['failed']} failed")

    await asyncio.gather(*(one(e) for e in todo))
    return counts


# ----- the model alone and the whole judge, on replayed replies ----------------------------------


def model_alone(card: Card, answer: str, content: str) -> int | None:
    """The model's own rule grade: its reply through ``grader.scoring`` only (quotes checked
    against the answer, nothing else); None when the reply does not validate."""
    from grader.llm import parse_output
    from grader.scoring import grade_from_judgement

    try:
        judgement = parse_output(card, content, "replay")
    except ValueError:
        return None
    return grade_from_judgement(card, judgement, answer).quality


def _agreement(truth: list[int], guess: list[int]) -> dict[str, Any]:
    from grader.calibration.eval import PASS_QUALITY, quadratic_weighted_kappa

    n = len(truth)
    if not n:
        return {"qwk": None, "pass_fail": None, "exact": None}
    return {
        "qwk": round(quadratic_weighted_kappa(truth, guess), 4) if len(set(truth) | set(guess)) > 1 else None,
        "pass_fail": round(sum((a >= PASS_QUALITY) == (b >= PASS_QUALITY) for a, b in zip(truth, guess, strict=True)) / n, 4),
        "exact": round(sum(a == b for a, b in zip(truth, guess, strict=True)) / n, 4),
    }


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Figures for rows that have both grades: labels, model alone, pipeline, and agreements."""
    labels = [r["label"] for r in rows]
    model = [r["model"] for r in rows]
    pipeline = [r["pipeline"] for r in rows]
    n = len(rows)

    def mean(values: list[int]) -> float | None:
        return round(sum(values) / n, 2) if n else None

    return {
        "n": n,
        "mean_label": mean(labels),
        "mean_model": mean(model),
        "mean_pipeline": mean(pipeline),
        "model_vs_labels": _agreement(labels, model),
        "pipeline_vs_labels": _agreement(labels, pipeline),
        "pipeline_vs_model": _agreement(model, pipeline),
    }


async def replayed_figures(
    deck: Any, examples: list[Any], replies: dict[str, StoredReply], *, concurrency: int = 4, reader: Any = None
) -> dict[str, Any]:
    """Every labelled answer's stored reply graded two ways: by the model alone and by the whole
    ``LlmJudge`` (cross-check and second reading) against a ``ReplayServer``; per style."""
    from grader.crosscheck import default_reader
    from grader.llm import LlmJudge

    rows: dict[str, dict[str, Any]] = {}
    no_reply, invalid, other_answer = [], [], []
    for e in examples:
        card = deck.get(e.card_id)
        stored = replies.get(key_for(card, e.answer))
        if stored is None:
            no_reply.append(e.id)
            continue
        if stored.answer_sha256 != answer_sha256(e.answer):
            other_answer.append(e.id)  # same request, an answer differing only in outer spaces
        grade = model_alone(card, e.answer, stored.content)
        if grade is None:
            invalid.append(e.id)
            continue
        rows[e.id] = {"id": e.id, "card_id": e.card_id, "kind": e.kind, "label": e.grade, "model": grade}
    reader = reader or default_reader()
    await reader.warm([deck.get(e.card_id) for e in examples])
    failed: dict[str, str] = {}
    async with ReplayServer(replies) as server:
        judge = LlmJudge(
            model="replay", api_key="replay", base_url=server.base_url, timeout=120.0,
            fallback=None, cache=None, reader=reader,
        )
        semaphore = asyncio.Semaphore(max(1, concurrency))
        done, step = 0, max(1, len(rows) // 20)
        by_id = {e.id: e for e in examples}

        async def one(row: dict[str, Any]) -> None:
            nonlocal done
            e = by_id[row["id"]]
            async with semaphore:
                try:
                    assessment = await judge.assess(deck.get(e.card_id), e.answer, interactive=False)
                except Exception as error:  # noqa: BLE001 - counted, never fatal
                    failed[e.id] = getattr(error, "reason", type(error).__name__)
                else:
                    row["pipeline"] = assessment.grade.quality if assessment.grade else None
                    row["grader"] = assessment.grader
            done += 1
            if done % step == 0 or done == len(rows):
                print(f"  graded {done}/{len(rows)}", file=sys.stderr, flush=True)

        try:
            await asyncio.gather(*(one(r) for r in rows.values()))
        finally:
            await judge.close()
    graded = [r for r in rows.values() if r.get("pipeline") is not None]
    per_kind = {
        kind: _summary([r for r in graded if r["kind"] == kind]) for kind in sorted({r["kind"] for r in graded})
    }
    changed = [r for r in graded if r["pipeline"] != r["model"]]
    return {
        "answers": len(examples),
        "no_reply": len(no_reply),
        "no_reply_ids": no_reply,
        "invalid_reply": invalid,
        "reply_for_other_spacing": other_answer,
        "judge_failed": failed,
        "all": _summary(graded),
        "per_kind": per_kind,
        "second_reading": {
            reason: sum(reason in r.get("grader", "") for r in graded)
            for reason in ("the offline reading disagrees", "the offline reading finds a misconception")
        },
        "changed_by_pipeline": changed,
    }


def format_replayed(name: str, figures: dict[str, Any]) -> str:
    """The per-style table: labels, the model alone, the pipeline, and how far each agrees."""
    whole = figures["all"]
    lines = [
        (
            f"{name}: {figures['answers']} answers, {whole['n']} graded both ways; "
            f"no reply for {figures['no_reply']}, invalid reply {len(figures['invalid_reply'])}, "
            f"judge failed on {len(figures['judge_failed'])}"
        ),
        (
            "  mean grade (label / model alone / pipeline); QWK and pass/fail at 3 against the labels; "
            "pipeline = model on exact grade and on pass/fail"
        ),
    ]
    kinds = figures["per_kind"]
    width = max([14, *(len(k) for k in kinds)])
    lines.append(
        f"    {'style':<{width}}    n   label model  pipe   QWK model/pipe   p/f model/pipe   pipe=model exact  p/f"
    )

    def fmt(value: float | None, pattern: str) -> str:
        return "n/a" if value is None else format(value, pattern)

    for kind, row in [*kinds.items(), ("ALL", whole)]:
        if not row["n"]:
            continue
        m, p, pm = row["model_vs_labels"], row["pipeline_vs_labels"], row["pipeline_vs_model"]
        lines.append(
            f"    {kind:<{width}} {row['n']:>4}   {row['mean_label']:>4.2f}  {row['mean_model']:>4.2f}  {row['mean_pipeline']:>4.2f}"
            f"   {fmt(m['qwk'], '.2f'):>4} / {fmt(p['qwk'], '.2f'):<4}    {fmt(m['pass_fail'], '.1%'):>6} / {fmt(p['pass_fail'], '.1%'):<6}"
            f"       {fmt(pm['exact'], '.1%'):>6}   {fmt(pm['pass_fail'], '.1%'):>6}"
        )
    shown = figures["second_reading"]
    lines.append(
        f"  second reading shown: disagrees {shown['the offline reading disagrees']}, "
        f"finds a misconception (grade lowered) {shown['the offline reading finds a misconception']}"
    )
    for r in figures["changed_by_pipeline"][:40]:
        lines.append(f"    changed {r['id']} ({r['kind']}): label {r['label']}, model {r['model']}, pipeline {r['pipeline']} by {r['grader']}")
    return "\n".join(lines)
