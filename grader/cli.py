"""``trapbot grader eval`` (agreement with the calibration set), ``trapbot grader record``
(a model's replies to the LLM judge's requests, for replay) and ``trapbot grade`` (one answer).

The grader reads no settings of its own: ``bot.cli`` puts the judge's (``JudgeSettings``) on
the parsed arguments as ``judge_settings``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grader.base import JudgeSettings


def register(subparsers: argparse._SubParsersAction) -> None:
    from grader.calibration.eval import DEFAULT_SET, HELDOUT_SET, SECOND_HELDOUT_SET, SPLITS

    grader = subparsers.add_parser("grader", help="measure the judges against the calibration set")
    commands = grader.add_subparsers(dest="grader_command", required=True)
    evaluate = commands.add_parser(
        "eval",
        help="agreement of a judge with the human grades (QWK, Spearman, pass/fail, injection inflation)",
    )
    evaluate.add_argument(
        "file",
        nargs="?",
        default=None,
        help=f"labelled answers, JSONL (default: the split's files: {DEFAULT_SET.name} for --split "
        f"tune, {HELDOUT_SET.name} for held-out, {SECOND_HELDOUT_SET.name} for held-out-2, all three for all; with --followups, followups.jsonl "
        "for tune, followups-heldout.jsonl for held-out; a file given is read whole)",
    )
    evaluate.add_argument(
        "--followups",
        action="store_true",
        help="the file holds answers to follow-up questions: judge each against its one key "
        "point and print, per kind, the share credited (present or partial)",
    )
    evaluate.add_argument(
        "--grader",
        choices=("offline", "llm", "baseline"),
        default="offline",
        help="offline: MiniLM judge (default); llm: OPENAI_API_KEY / OPENAI_BASE_URL / "
        "TRAPBOT_JUDGE_MODEL, no fallback, failures counted; baseline: best cosine per key point",
    )
    evaluate.add_argument("--split", choices=tuple(SPLITS), default="all")
    evaluate.add_argument(
        "--concurrency", type=int, default=4, help="answers in flight at once (llm)"
    )
    evaluate.add_argument(
        "--replies",
        default=None,
        help="with --grader llm: replay this file of recorded replies (trapbot grader record) "
        "through a loopback endpoint instead of calling a model; prints per style the labels, "
        "the model's own rule grade and the whole judge's grade",
    )
    evaluate.add_argument("--json", action="store_true", help="print the figures as JSON")
    evaluate.set_defaults(func=eval_command)

    recorder = commands.add_parser(
        "record",
        help="send each labelled answer's exact LLM-judge request to the configured endpoint "
        "(OPENAI_BASE_URL, TRAPBOT_JUDGE_MODEL) and store the replies, for --replies",
    )
    recorder.add_argument("file", help="labelled answers, JSONL")
    recorder.add_argument("--out", required=True, help="replies file (JSONL); appended to, resumable")
    recorder.add_argument("--concurrency", type=int, default=4, help="requests in flight at once")
    recorder.add_argument(
        "--made-by", default="trapbot grader record", help="how the replies were made (stored with each)"
    )
    recorder.set_defaults(func=record_command)

    grade = subparsers.add_parser("grade", help="grade one answer to a card, non-interactively")
    grade.add_argument("card_id")
    grade.add_argument("answer", help="the answer text ('-' reads it from standard input)")
    grade.add_argument(
        "--grader",
        choices=("auto", "offline", "llm"),
        default="auto",
        help="auto: the judge TRAPBOT_JUDGE names (its auto: the LLM judge when OPENAI_API_KEY "
        "is set, offline when it fails; else offline, with no network call)",
    )
    grade.add_argument("--json", action="store_true", help="print the grade and verdicts as JSON")
    grade.set_defaults(func=grade_command)


# ----- trapbot grade -----------------------------------------------------------------------------


def judge_settings(args: argparse.Namespace) -> JudgeSettings:
    """The settings ``bot.cli`` handed over; the defaults (offline, no key) when run without it."""
    from grader.base import JudgeSettings

    return getattr(args, "judge_settings", None) or JudgeSettings()


def _judge(choice: str, settings: JudgeSettings, *, with_fallback: bool) -> Any:
    """The judge ``choice`` names; ``auto`` follows the settings' judge (``self`` has nobody to
    ask here, so it is the offline judge)."""
    from grader.offline import OfflineJudge

    if choice == "auto":
        choice = settings.resolved_judge()
        if choice == "self":
            print("TRAPBOT_JUDGE=self: nobody to ask here, so the offline judge grades", file=sys.stderr)
    if choice != "llm":
        return OfflineJudge()
    from grader.llm import LlmJudge

    return LlmJudge.from_settings(settings, fallback=OfflineJudge() if with_fallback else None)


def grade_command(args: argparse.Namespace) -> int:
    from cards.deck import default_deck

    deck = default_deck()
    if args.card_id not in deck:
        print(f"No card {args.card_id!r}; known ids: {', '.join(deck.ids)}", file=sys.stderr)
        return 2
    card = deck.get(args.card_id)
    answer = sys.stdin.read() if args.answer == "-" else args.answer
    try:
        judge = _judge(args.grader, judge_settings(args), with_fallback=True)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2

    async def run():
        try:
            return await judge.assess(card, answer, interactive=False)
        finally:
            if hasattr(judge, "close"):
                await judge.close()

    try:
        assessment = asyncio.run(run())
    except Exception as error:  # noqa: BLE001 - one line, never a traceback
        print(f"grading failed: {getattr(error, 'reason', type(error).__name__)}", file=sys.stderr)
        return 1
    grade = assessment.grade
    if grade is None:
        print(f"grading failed: {assessment.grader} gave no grade", file=sys.stderr)
        return 1
    if args.json:
        print(
            json.dumps(
                {
                    "card_id": card.id,
                    "grader": assessment.grader,
                    "quality": grade.quality,
                    "score": grade.score,
                    "caps": list(grade.caps),
                    "judgement": grade.judgement.to_json(),
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    from grader.base import CREDITED, PointVerdict

    marks = {
        PointVerdict.PRESENT: "+",
        PointVerdict.PARTIAL: "~",
        PointVerdict.ABSENT: "-",
        PointVerdict.CONTRADICTED: "x",
    }
    print(f"{card.id}: {grade.quality}/5 (coverage {grade.score:.2f}) by {assessment.grader}")
    for point in card.key_points:
        verdict = grade.judgement.verdict_for(point.id)
        quote = next((p.quote for p in grade.judgement.points if p.point_id == point.id), "")
        evidence = (
            f'  "{quote}"'
            if quote and verdict in CREDITED
            else ""
        )
        print(f"  [{marks[verdict]}] {point.id}{' (core)' if point.core else ''}{evidence}")
    for misconception in grade.judgement.misconceptions:
        if misconception.asserted:
            print(f'  [!] asserts {misconception.misconception_id}: "{misconception.quote}"')
    for cap in grade.caps:
        print(f"  capped: {cap}")
    if grade.judgement.feedback:
        print(grade.judgement.feedback)
    return 0


# ----- trapbot grader eval -----------------------------------------------------------------------


def eval_command(args: argparse.Namespace) -> int:
    from cards.deck import default_deck
    from grader.calibration.eval import format_metrics, load_set, load_split, metrics

    if args.followups:
        return followups_command(args)
    deck = default_deck()
    try:
        examples = load_set(args.file) if args.file else load_split(args.split)
    except (OSError, ValueError) as error:
        print(error, file=sys.stderr)
        return 2
    missing = sorted({e.card_id for e in examples if e.card_id not in deck})
    examples = [e for e in examples if e.card_id in deck]
    started = time.perf_counter()
    if args.grader == "baseline":
        predicted, errors = _baseline(deck, examples), 0
    else:
        if args.replies:
            return replay_eval(args, deck, examples, missing)
        try:
            judge = _judge(args.grader, judge_settings(args), with_fallback=False)
        except ValueError as error:
            print(error, file=sys.stderr)
            return 2
        predicted, errors = asyncio.run(_grade_all(judge, deck, examples, args.concurrency))
    figures = metrics(examples, predicted)
    figures.update(
        grader=args.grader,
        split=args.split,
        errors=errors,
        seconds=round(time.perf_counter() - started, 1),
    )
    if missing:
        figures["cards_not_in_deck"] = missing
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(format_metrics(f"{args.grader} judge ({args.split})", figures))
        if missing:
            print(f"  skipped answers to cards not in the deck: {', '.join(missing)}")
    return 0


def followups_command(args: argparse.Namespace) -> int:
    """``trapbot grader eval FILE --followups``: the judge on answers to follow-up questions."""
    from cards.deck import default_deck
    from grader.calibration.followups import (
        FOLLOWUP_SET,
        HELDOUT_FOLLOWUP_SET,
        followup_metrics,
        format_followup_metrics,
        judge_followups,
        load_followups,
        problems,
    )

    if args.grader == "baseline":
        print("--followups judges with offline or llm; the baseline grades whole answers", file=sys.stderr)
        return 2
    deck = default_deck()
    sets = {"tune": [FOLLOWUP_SET], "held-out": [HELDOUT_FOLLOWUP_SET], "all": [FOLLOWUP_SET, HELDOUT_FOLLOWUP_SET]}
    if not args.file and args.split not in sets:
        print(f"no follow-up answers for --split {args.split}: one of {', '.join(sets)}", file=sys.stderr)
        return 2
    try:
        answers = (
            load_followups(args.file)
            if args.file
            else [a for path in sets[args.split] for a in load_followups(path)]
        )
    except (OSError, ValueError) as error:
        print(error, file=sys.stderr)
        return 2
    skipped = problems(deck, answers)
    bad = {line.split(":", 1)[0] for line in skipped}
    answers = [a for a in answers if a.id not in bad]
    try:
        judge = _judge(args.grader, judge_settings(args), with_fallback=False)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    started = time.perf_counter()

    async def run() -> Any:
        try:
            return await judge_followups(judge, deck, answers, concurrency=args.concurrency)
        finally:
            if hasattr(judge, "close"):
                await judge.close()

    verdicts, errors = asyncio.run(run())
    figures = followup_metrics(deck, answers, verdicts)
    figures.update(grader=args.grader, errors=errors, seconds=round(time.perf_counter() - started, 1))
    if skipped:
        figures["skipped"] = skipped
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        scope = "" if args.file else f" ({args.split})"
        print(format_followup_metrics(f"{args.grader} judge on follow-up answers{scope}", figures))
        for line in skipped:
            print(f"  skipped {line}")
    return 0


# ----- trapbot grader record / eval --replies ---------------------------------------------------


def record_command(args: argparse.Namespace) -> int:
    from cards.deck import default_deck
    from grader.cache import JudgementCache
    from grader.calibration.eval import load_set
    from grader.llm import LlmJudge
    from grader.replay import record

    deck = default_deck()
    try:
        examples = [e for e in load_set(args.file) if e.card_id in deck]
        judge = LlmJudge.from_settings(judge_settings(args), cache=JudgementCache(disk=False))
    except (OSError, ValueError) as error:
        print(error, file=sys.stderr)
        return 2
    judge.cache = None  # every reply comes from the endpoint

    async def run() -> dict[str, int]:
        try:
            return await record(judge, deck, examples, Path(args.out), made_by=args.made_by, concurrency=args.concurrency)
        finally:
            await judge.close()

    try:
        counts = asyncio.run(run())
    except ValueError as error:  # a malformed replies file to resume
        print(error, file=sys.stderr)
        return 2
    print(f"{counts['recorded']} replies recorded, {counts['skipped']} already there, {counts['failed']} failed -> {args.out}")
    return 1 if counts["failed"] else 0


def replay_eval(args: argparse.Namespace, deck: Any, examples: list, missing: list[str]) -> int:
    """``trapbot grader eval --grader llm --replies FILE``: the model alone and the whole judge."""
    from grader.replay import format_replayed, load_replies, replayed_figures

    if args.grader != "llm":
        print("--replies replays an LLM judge's replies: use it with --grader llm", file=sys.stderr)
        return 2
    try:
        replies = load_replies(args.replies)
    except (OSError, ValueError) as error:
        print(error, file=sys.stderr)
        return 2
    started = time.perf_counter()
    figures = asyncio.run(replayed_figures(deck, examples, replies, concurrency=args.concurrency))
    figures.update(split=args.split, replies=str(args.replies), seconds=round(time.perf_counter() - started, 1))
    if missing:
        figures["cards_not_in_deck"] = missing
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(format_replayed(f"llm judge replayed from {args.replies}", figures))
    return 0


def _baseline(deck: Any, examples: list) -> dict[str, int]:
    from grader.calibration.eval import baseline_quality, baseline_score

    return {e.id: baseline_quality(baseline_score(deck.get(e.card_id), e.answer)) for e in examples}


async def _grade_all(
    judge: Any, deck: Any, examples: list, concurrency: int
) -> tuple[dict[str, int], int]:
    semaphore = asyncio.Semaphore(max(1, concurrency))
    predicted: dict[str, int] = {}
    errors = done = 0
    step = max(1, len(examples) // 20)

    def progress() -> None:
        nonlocal done
        done += 1
        if done % step == 0 or done == len(examples):
            print(f"  graded {done}/{len(examples)}", file=sys.stderr, flush=True)

    async def one(example: Any) -> None:
        nonlocal errors
        async with semaphore:
            try:
                assessment = await judge.assess(
                    deck.get(example.card_id), example.answer, interactive=False
                )
            except Exception as error:  # noqa: BLE001 - counted and reported, never fatal
                errors += 1
                print(f"{example.id}: {error}", file=sys.stderr)
                return
            finally:
                progress()
            if assessment.grade is not None:
                predicted[example.id] = assessment.grade.quality

    try:
        await asyncio.gather(*(one(e) for e in examples))
    finally:
        if hasattr(judge, "close"):
            await judge.close()
    return predicted, errors
