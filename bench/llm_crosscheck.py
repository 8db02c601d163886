"""What the LLM judge's checks add to a grade, on recorded replies (issue 36's 50 ms goal).

    PYTHONPATH=. .venv/bin/python bench/llm_crosscheck.py [--set FILE --replies FILE] [--limit N]

Per answer with a stored reply, median and 90th percentile of:

- ``checks``: the cross-check of the model's evidence and the second-reading rule
  (``grader.crosscheck.verify`` + ``grader.llm.second_reading``), what runs after the reply;
- ``offline reading``: the offline judge's reading of the whole answer, which ``LlmJudge``
  runs while the model is answering (so it adds to a grade only what it outlasts the model);
- ``assess - reply``: the whole ``LlmJudge.assess`` against a loopback replay server minus the
  same request's reply alone, the offline reading already done (as when the model takes longer
  than it): what a grade waits for after the model's reply. When the model answers faster than
  the offline reading, add the difference (at worst ``offline reading`` itself).

Wall and CPU (process time) are both printed: the machine is shared, so wall is inflated.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from cards.deck import default_deck
from grader.calibration.eval import SECOND_HELDOUT_SET, load_set
from grader.crosscheck import reading_of, verify
from grader.llm import LlmJudge, build_messages, parse_output, second_reading
from grader.offline import OfflineJudge
from grader.replay import ReplayServer, key_for, load_replies
from grader.scoring import grade_from_judgement

DEFAULT_REPLIES = ROOT / "grader" / "calibration" / "replies" / "heldout-2.jsonl"


def quantiles(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"median {statistics.median(ordered):7.1f} ms   p90 {p90:7.1f} ms   (n={len(ordered)})"


async def main(set_path: Path, replies_path: Path, limit: int | None) -> None:
    deck = default_deck()
    replies = load_replies(replies_path)
    examples = [e for e in load_set(set_path) if e.card_id in deck and key_for(deck.get(e.card_id), e.answer) in replies]
    examples = examples[:limit] if limit else examples
    reader = OfflineJudge()
    await reader.warm(deck)
    timings: dict[str, list[float]] = {"checks wall": [], "checks cpu": [], "offline wall": [], "offline cpu": [], "assess - reply": []}
    async with ReplayServer(replies) as server:
        judge = LlmJudge(model="replay", api_key="replay", base_url=server.base_url, timeout=60.0, cache=None, reader=reader)
        for i, e in enumerate(examples, 1):
            card = deck.get(e.card_id)
            content = replies[key_for(card, e.answer)].content
            judgement = parse_output(card, content, judge.name)
            wall, cpu = time.perf_counter(), time.process_time()
            offline = reading_of(card, e.answer, reader)
            timings["offline wall"].append((time.perf_counter() - wall) * 1000)
            timings["offline cpu"].append((time.process_time() - cpu) * 1000)
            wall, cpu = time.perf_counter(), time.process_time()
            check = verify(card, judgement, e.answer, reader)
            second_reading(judge.name, card, e.answer, grade_from_judgement(card, check.judgement, e.answer), offline, interactive=False)
            timings["checks wall"].append((time.perf_counter() - wall) * 1000)
            timings["checks cpu"].append((time.process_time() - cpu) * 1000)
            # the same answer once more, end to end, against the reply alone (readings now
            # remembered, so this is the call and the checks; the first pass measured the rest)
            wall = time.perf_counter()
            await judge.reply(card, build_messages(card, e.answer))
            alone = time.perf_counter() - wall
            wall = time.perf_counter()
            await judge.assess(card, e.answer, interactive=False)
            timings["assess - reply"].append((time.perf_counter() - wall - alone) * 1000)
            if i % 25 == 0 or i == len(examples):
                print(f"  {i}/{len(examples)}", file=sys.stderr, flush=True)
        await judge.close()
    for name, values in timings.items():
        print(f"{name:16} {quantiles(values)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=SECOND_HELDOUT_SET)
    parser.add_argument("--replies", type=Path, default=DEFAULT_REPLIES)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    asyncio.run(main(args.set, args.replies, args.limit))
