"""What each feature family of the offline judge's learnt reading is worth (issue 37).

    python -m grader.calibration.ablate [--rows-cache FILE] [--folds K] [--spread-folds 4,6] [--plain]

For the learner the shipped model uses, the cross-fitted score that ``train`` maximises (QWK
plus pass/fail agreement in the mean style, less penalties for passed traps and inflated
injections; every card judged by a model fitted without its fold of cards) is computed with
every feature and then with each family's columns left out. The spread is how far the
all-features score moves when only the partition of cards changes (``--spread-folds``); a
family whose gain is within it earns nothing measurable. Columns only: code a family needs
outside the learnt reading (the sentence reader's denial cut, say) stays on.

What it cannot see: every card here has its exemplars. A family that reads the card itself
(its accepted phrasings, its trap) can be worth nothing beside the exemplar votes and still be
what a card without labelled answers grades by: the December 2026 cut of four such families
kept the held-out figures and lost 5 to 9 points of pass/fail on unseen cards
(``offline_eval unseen``; docs/offline-judge-history.md). Judge a cut on both.

``--plain`` scores the plain model's reading (the one a card without labelled answers gets):
the exemplar families are left out of every score. It is the cheap side of the second check;
the sentence reader's columns here still come from readers that saw the row's card, so
``offline_eval unseen`` has the last word.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from grader.calibration.train import choose_cuts, cross_fitted, fitting_rows
from grader.calibration.unseen import shipped_learner
from grader.offline.evidence import (
    ALL_MISCONCEPTION_FEATURES,
    ALL_POINT_FEATURES,
    EXEMPLAR_FEATURES,
    READER_FEATURES,
)
from grader.offline.exemplars import MISC_CONTRAST_FEATURES, POINT_CONTRAST_FEATURES, VOTE_FEATURES
from grader.offline.judge import MODEL_PATH, PLAIN_MODEL_PATH

#: Feature families, by the evidence they read (point and misconception columns together).
FAMILIES: dict[str, frozenset[str]] = {
    "exemplar votes": frozenset((*VOTE_FEATURES, *(f"misc_{name}" for name in VOTE_FEATURES))),
    "exemplar sentence contrast": frozenset((*POINT_CONTRAST_FEATURES, *MISC_CONTRAST_FEATURES)),
    "sentence reader": READER_FEATURES,
    "opposites": frozenset(("against_any", "against_margin")),
    "stem cover": frozenset(("stem_cover", "misc_stem_cover")),
    "accepted phrasings said or denied": frozenset(("said", "denied", "misc_said", "misc_denied")),
    "stance": frozenset(("stance", "trap_lean_of_best")),
    "reported claims": frozenset(("misc_nearest_negated", "misc_rejected", "misc_framed")),
    "answer length": frozenset(("answer_words", "misc_answer_words")),
}


def columns_without(family: frozenset[str]) -> tuple[list[int], list[int]]:
    return tuple(  # type: ignore[return-value]
        [i for i, name in enumerate(group) if name not in family]
        for group in (ALL_POINT_FEATURES, ALL_MISCONCEPTION_FEATURES)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows-cache", type=Path, help="keep the fitting rows' features here")
    parser.add_argument("--folds", type=int, default=5, help="folds of cards (26: one card each)")
    parser.add_argument("--spread-folds", default="4,6", help="other partitions for the spread")
    parser.add_argument("--plain", action="store_true", help="never read the exemplar features")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    never = EXEMPLAR_FEATURES if args.plain else frozenset()
    families = {n: f for n, f in FAMILIES.items() if not (args.plain and f <= EXEMPLAR_FEATURES)}
    learner = shipped_learner(PLAIN_MODEL_PATH if args.plain else MODEL_PATH)
    rows = fitting_rows(cache=args.rows_cache)
    print(f"{len(rows)} fitting answers; learner {learner}", file=sys.stderr, flush=True)

    def score(family: frozenset[str], folds: int) -> float:
        held = cross_fitted(rows, learner, columns_without(family | never), folds=folds)
        return choose_cuts(rows, held)[1]

    partitions = {args.folds} | {int(k) for k in args.spread_folds.split(",") if k}
    base_by_folds = {}
    for folds in sorted(partitions):
        base_by_folds[folds] = score(frozenset(), folds)
        print(
            f"  every feature, {folds} folds: {base_by_folds[folds]:.4f}",
            file=sys.stderr,
            flush=True,
        )
    spread = max(base_by_folds.values()) - min(base_by_folds.values())
    results: dict[str, float] = {"all features": base_by_folds[args.folds]}
    for name, family in families.items():
        start = time.monotonic()
        results[name] = score(family, args.folds)
        print(
            f"  without {name}: {results[name]:.4f} ({time.monotonic() - start:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
    base = results["all features"]
    if args.json:
        print(
            json.dumps(
                {
                    "learner": list(learner),
                    "folds": args.folds,
                    "plain": args.plain,
                    "scores": results,
                    "baseline_by_folds": base_by_folds,
                    "spread": spread,
                },
                indent=1,
            )
        )
        return 0
    print(f"cross-fitted score ({args.folds} folds of cards) with every feature: {base:.4f}")
    print(f"spread over partitions {sorted(partitions)}: {spread:.4f}")
    for name in families:
        gain = base - results[name]
        verdict = "earns its place" if gain > spread else "within the spread"
        print(f"  without {name:<36} {results[name]:.4f}  gain {gain:+.4f}  {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
