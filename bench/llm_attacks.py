"""Issue 12's measurements: the LLM judge against models on 127.0.0.1 that misbehave on purpose.

    .venv/bin/python bench/llm_attacks.py [--json] [--set FILE]

1. Obedient model, the calibration set's injection pairs: injection inflation (mean grade
   injected minus twin) and how many injected answers get 3 or more.
2. The attack table: every attack style appended to every card's trap answer, graded against
   the obedient model (grades per style: how many of the cards reach 0, 1, 2, 3+).
3. Forged, trivial and empty quotes: the highest grade any empty or off-topic answer gets on
   any card.
4. Honest model (the labelled verdicts, real quotes) on the calibration set's answers: how
   often the cross-check takes credit back, by answer style, and what the learner is given.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "grader")]

from attacks import ATTACK_STYLES, attacked, payload
from judge_server import JudgeServer, calibration_setup

from cards.deck import default_deck
from grader.base import PointVerdict
from grader.calibration.eval import load_set
from grader.llm import LlmJudge
from grader.offline import OfflineJudge

FAILURES: dict[str, str] = {}
EMPTY_OR_OFF_TOPIC = (
    "I don't know.",
    "no idea",
    "The weather in Lisbon is mild in spring and the food is excellent.",
    "Transformers use attention; convolutional networks use shared filters over local patches.",
)


async def grade_all(server: JudgeServer, items: list[tuple[str, object, str]], reader) -> dict[str, object]:
    judge = LlmJudge(
        model="fake", api_key="sk-test", base_url=server.base_url, timeout=30.0, fallback=None,
        cache=None, reader=reader,
    )
    semaphore = asyncio.Semaphore(4)
    out: dict[str, object] = {}

    async def one(key, card, answer):
        async with semaphore:
            try:
                out[key] = await judge.assess(card, answer, interactive=False)
            except Exception as error:  # noqa: BLE001 - counted: a judge failure is a finding
                FAILURES[key] = str(error)

    await asyncio.gather(*(one(*item) for item in items))
    await judge.close()
    return out


async def main(as_json: bool, path: str | None) -> None:
    deck = default_deck()
    reader = OfflineJudge()
    await reader.warm(deck)
    examples = [e for e in (load_set(path) if path else load_set()) if e.card_id in deck]
    server = JudgeServer(behaviour="obedient")
    calibration_setup(server, path)
    await server.start()
    figures: dict[str, object] = {}

    # 1. injection pairs against the obedient model
    pairs = [e for e in examples if e.kind == "injection" and e.twin_of]
    by_id = {e.id: e for e in examples}
    items = [(e.id, deck.get(e.card_id), e.answer) for e in pairs]
    items += [(e.twin_of, deck.get(e.card_id), by_id[e.twin_of].answer) for e in pairs]
    graded = await grade_all(server, items, reader)
    pairs = [e for e in pairs if e.id in graded and e.twin_of in graded]
    diffs = [graded[e.id].grade.quality - graded[e.twin_of].grade.quality for e in pairs]
    figures["obedient_injection_pairs"] = len(pairs)
    figures["obedient_injection_inflation"] = round(sum(diffs) / len(diffs), 3)
    figures["obedient_injected_passing"] = sum(graded[e.id].grade.quality >= 3 for e in pairs)
    figures["obedient_injected_grades"] = dict(Counter(graded[e.id].grade.quality for e in pairs))
    figures["obedient_twin_grades"] = dict(Counter(graded[e.twin_of].grade.quality for e in pairs))

    # 2. the attack table
    server.payloads = [payload(style, card) for style in ATTACK_STYLES for card in deck]
    items = [
        (f"{style}|{card.id}", card, attacked(style, card, card.trap))
        for style in ATTACK_STYLES
        for card in deck
    ]
    graded = await grade_all(server, items, reader)
    table: dict[str, Counter] = defaultdict(Counter)
    for key, assessment in graded.items():
        style = key.split("|")[0]
        q = assessment.grade.quality
        table[style]["3+" if q >= 3 else str(q)] += 1
    figures["attack_table"] = {style: dict(table[style]) for style in ATTACK_STYLES}

    # 3. lying about evidence
    worst = {}
    for behaviour in ("forged", "trivial", "empty"):
        server.behaviour = behaviour
        items = [
            (f"{card.id}|{i}", card, answer)
            for card in deck
            for i, answer in enumerate(EMPTY_OR_OFF_TOPIC)
        ]
        items += [(f"{e.id}", deck.get(e.card_id), e.answer) for e in examples if e.kind == "off-topic"]
        graded = await grade_all(server, items, reader)
        worst[behaviour] = {
            "answers": len(items),
            "max_grade": max(a.grade.quality for a in graded.values()),
            "passing": sum(a.grade.quality >= 3 for a in graded.values()),
        }
    figures["lying_evidence"] = worst

    # 4. honest model: the labelled verdicts, with real quotes. In a set without per-point
    #    labels, grade-5 expert answers get every point present and grade-4 ones the core
    #    present and the rest partial (a guess).
    from judge_server import read_prompt

    from grader.crosscheck import verify
    from grader.llm import build_messages, parse_output
    from grader.scoring import grade_from_judgement

    server.behaviour = "honest"
    labelled = [e for e in examples if e.kind != "injection" and (e.points is not None or e.kind == "expert")]
    graded = await grade_all(server, [(e.id, deck.get(e.card_id), e.answer) for e in labelled], reader)
    honest: dict[str, Counter] = defaultdict(Counter)
    for e in labelled:
        card = deck.get(e.card_id)
        body = {"messages": build_messages(card, e.answer)}
        raw = parse_output(card, json.dumps(server.verdicts(read_prompt(body))), "honest")
        check = verify(card, raw, e.answer, reader)
        unchecked = grade_from_judgement(card, raw, e.answer).quality
        checked = grade_from_judgement(card, check.judgement, e.answer).quality
        final = graded.get(e.id)
        if final is None:
            continue
        for row in (honest[e.kind], honest["all"]):
            row["answers"] += 1
            row["points_credited"] += sum(p.verdict in (PointVerdict.PRESENT, PointVerdict.PARTIAL) for p in raw.points)
            row["points_taken_back"] += len(check.taken_back)
            row["core_points_taken_back"] += sum(p.core for p in card.key_points if p.id in check.taken_back)
            row["grade_lowered_by_crosscheck"] += checked < unchecked
            row["pass_lost_by_crosscheck"] += checked < 3 <= unchecked
            row["disagreement_shown"] += final.second_reading is not None
            row["final_below_3_while_labelled_3_up"] += final.grade.quality < 3 <= e.grade
            row["final_exact"] += final.grade.quality == e.grade
    figures["honest_by_kind"] = {kind: dict(row) for kind, row in sorted(honest.items())}
    figures["judge_failures"] = FAILURES
    await server.stop()

    if as_json:
        print(json.dumps(figures, indent=2))
        return
    for key, value in figures.items():
        if key != "attack_table":
            print(f"{key}: {value}")
    print("\nattack style        grades over the 26 cards (obedient model)")
    for style, counts in figures["attack_table"].items():
        print(f"  {style:18} {', '.join(f'{g}: {n}' for g, n in sorted(counts.items()))}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--set", help="labelled answers, JSONL (default: the calibration set)")
    args = parser.parse_args()
    asyncio.run(main(args.json, args.set))
