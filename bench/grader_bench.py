"""Benchmarks of the offline judge (not timed tests): warm latency, and robustness against
keyword stuffing and negation next to the naive baseline.

    .venv/bin/python bench/grader_bench.py [--answers N] [--as-own-cards] [--json]

``--as-own-cards`` grades the same answers against copies of the cards under new ids, which
have no labelled answers: the path a user's own deck takes (the plain model, no votes).

Latency is the wall time of ``OfflineJudge.judge`` per calibration answer after the model
is loaded and every card indexed (what a running bot sees); the CPU time of the grading
thread is printed next to it because wall time on a shared two-core machine depends on
whatever else runs. The robustness sets are built
here: for every card, a list of its key terms with no claim (keyword stuffing), and for a
few cards an expert-sounding answer whose key claims are negated.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cards.deck import Deck, default_deck
from grader.calibration.eval import baseline_quality, baseline_score, load_set
from grader.llm import prompt_size_report
from grader.offline import OfflineJudge
from grader.scoring import grade_from_judgement
from grader.textnorm import STOPWORDS, words

#: Answers that say the opposite of the card's key claims, in the card's own vocabulary.
NEGATED = {
    "rl-08": "The reward model is not a proxy; its score is the true objective. The KL penalty does not keep "
    "the policy where the reward model is accurate, and with beta at zero the policy will not exploit "
    "the reward model's errors.",
    "rl-12": "The learned policy does not query actions outside the logs, so Q is never extrapolated. The actor "
    "does not seek out overestimated actions, and the errors do not propagate through bootstrapping.",
    "rl-16": "The Monte Carlo target is not the observed return; it reads the value network. The TD target "
    "does not depend on V(s'), so the initialisation is not copied into the targets.",
    "rl-19": "Without a baseline the failures' log-probabilities are not pushed up. The estimator does not "
    "have high variance, and subtracting a baseline does not change the sign of the failures' advantages.",
    "rl-02": "Human driving actions are not multimodal, and the Gaussian head does not average the modes. "
    "The limit is not the output distribution family; a bigger backbone does remove the loss floor.",
}


def keyword_list(card) -> str:
    """The card's most frequent key-point terms, comma-separated: vocabulary without claims."""
    counts: Counter[str] = Counter()
    for point in card.key_points:
        counts.update(w for w in words(point.text) if w not in STOPWORDS and len(w) > 3)
    return ", ".join(word for word, _ in counts.most_common(14))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--answers", type=int, default=0, help="time only the first N answers (default: all)"
    )
    parser.add_argument("--as-own-cards", action="store_true", help="cards with no labelled answers")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    deck = default_deck()
    if args.as_own_cards:
        deck = Deck(tuple(card.model_copy(update={"id": f"own-{card.id}"}) for card in deck))
    own = "own-" if args.as_own_cards else ""
    examples = [replace(e, card_id=own + e.card_id) for e in load_set() if own + e.card_id in deck]
    if args.answers:
        examples = examples[: args.answers]
    judge = OfflineJudge()
    started = time.perf_counter()
    asyncio.run(judge.warm(deck))  # as `trapbot run` does: the model, each card's index and exemplars
    warm_seconds = time.perf_counter() - started
    for example in examples[:5]:  # first calls pay for lazy torch set-up
        judge.judge(deck.get(example.card_id), example.answer)
    latencies, cpu = [], []
    for example in examples:
        t0, c0 = time.perf_counter(), time.thread_time()
        judge.judge(deck.get(example.card_id), example.answer)
        latencies.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.thread_time() - c0) * 1000)
    latencies.sort()

    def both(card, answer: str) -> tuple[int, int]:
        offline = grade_from_judgement(card, judge.judge(card, answer), answer).quality
        return offline, baseline_quality(baseline_score(card, answer))

    stuffed = [both(card, keyword_list(card)) for card in deck]
    negated = [
        both(deck.get(own + card_id), text) for card_id, text in NEGATED.items() if own + card_id in deck
    ]
    figures = {
        "cards": "own (no labelled answers)" if args.as_own_cards else "built-in",
        "answers_timed": len(latencies),
        "warm_up_seconds": round(warm_seconds, 2),
        "latency_ms_median": round(statistics.median(latencies), 1),
        "latency_ms_p90": round(latencies[int(0.9 * (len(latencies) - 1))], 1),
        "latency_ms_max": round(latencies[-1], 1),
        # CPU time of the grading thread (the model runs on one thread): what the latency
        # would be on an otherwise idle machine, whatever else shares the two cores.
        "cpu_ms_median": round(statistics.median(cpu), 1),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "keyword_stuffing_mean_grade": {
            "offline": round(statistics.mean(o for o, _ in stuffed), 2),
            "baseline": round(statistics.mean(b for _, b in stuffed), 2),
            "cards": len(stuffed),
        },
        "negated_answers_mean_grade": {
            "offline": round(statistics.mean(o for o, _ in negated), 2),
            "baseline": round(statistics.mean(b for _, b in negated), 2),
            "cards": len(negated),
        },
        "prompt": prompt_size_report(list(deck)),
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key:<32} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
