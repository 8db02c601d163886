"""The commented template ``trapbot cards new ID`` writes.

It is a whole card that lints clean, so an author can run ``trapbot cards try`` on it at once
and then replace its content field by field; every comment says what the field means.
"""

from __future__ import annotations

TEMPLATE = """\
---
# A trap card: an interview question, the answer most people give (the trap), and the
# mechanism that breaks it, written as key points a judge checks one by one.
# This template is a complete card about one trap; replace every field with your own.
# Check it with:   trapbot cards lint DIR     and     trapbot cards try {card_id} "an answer"

# The id: a short lower-case prefix and a number, the same as the file name (without .md).
# Unique across every deck the bot loads.
id: {card_id}
title: A more accurate reward model (a few words, shown above the question)
# Where the question comes from. role and date are required; company and series optional.
source:
  company: Our team
  role: ML engineer
  date: "2026"
# The question exactly as an interviewer asks it.
question: >-
  We retrained our reward model and its accuracy on held-out preference pairs went from 68%
  to 74%. We plan to run the same RLHF recipe against it. Should we expect a better policy?
# The answer most candidates give: confident, plausible and wrong.
trap: >-
  Yes: the reward model ranks more pairs correctly, so the policy optimised against it will
  be better, roughly in proportion to the accuracy gain.
# The key points: 3 to 6 atomic claims of the mechanism. "core: true" marks what an answer
# must state to pass (all core points and no misconception = 3/5); the other points lift a
# pass to 4 and 5, in proportion to their weight (0 < weight <= 5, default 1).
key_points:
  - id: off-distribution            # lower-case words joined by -
    label: Accuracy is measured off the policy's outputs   # at most 60 characters, shown in the verdict
    # hint: one sentence that points a learner who missed the point toward it without
    # stating it (no phrase from accepts, no run of 5 words from text).
    hint: "Ask which outputs the pairs were drawn from, and which outputs the policy will write after optimisation."
    text: >-
      Held-out accuracy is measured on pairs sampled like the training pairs (from the
      starting policy); RL moves the policy to outputs the reward model has rarely seen,
      where its errors are not measured at all.
    core: true
    # accepts: short phrasings people really use for this point (2 or more); the offline
    # judge matches them.
    accepts:
      - "distribution shift"
      - "out of distribution for the reward model"
      - "the policy's samples differ from the eval pairs"
      - "accuracy on the wrong distribution"
    # opposites: short wrong claims that say the reverse of the point (2 or more); the
    # offline judge reads an answer near one as a sign it contradicts the point.
    opposites:
      - "The policy's outputs stay where the reward model was trained."
      - "Held-out accuracy measures the reward model where the policy will be."
    # probe: the interviewer's follow-up question that leads to the point without giving it away.
    probe: "What outputs will the reward model be scoring once the policy has been optimised against it?"
  - id: optimiser-finds-errors
    label: Optimisation seeks the reward model's errors
    hint: "Think about what a strong optimiser does with the few places where its scoring function is wrong."
    text: >-
      The policy is optimised against the reward model, so it moves toward exactly the
      outputs the model overrates: the proxy reward keeps rising while true quality peaks
      and then falls (reward overoptimization, Goodhart's law).
    core: true
    accepts:
      - "reward hacking"
      - "overoptimization"
      - "Goodhart's law"
      - "the policy exploits the reward model's errors"
    opposites:
      - "Optimisation pressure averages out the reward model's errors."
      - "A policy cannot exploit a reward model that is 74% accurate."
    probe: "What happens to the outputs the reward model overrates when you optimise hard against it?"
  - id: measure-the-policy
    label: Measure the policy, not only the reward model
    hint: "Name the measurement that would show whether the trained policy, rather than its scorer, got better."
    text: >-
      Judge the change by the policy: human or gold-model evaluation of its outputs, proxy
      and gold reward plotted against the KL from the initial policy, and reward-model
      accuracy on pairs sampled from the current policy.
    weight: 1
    accepts:
      - "evaluate the policy with humans"
      - "gold reward model"
      - "plot reward against KL"
      - "accuracy on on-policy samples"
    opposites:
      - "Held-out pair accuracy is all the evaluation you need."
      - "Skip human evaluation once the reward model is accurate."
    probe: "How would you find out whether the new reward model actually gives a better policy?"
# misconceptions: 1 to 3 wrong answers people really give; asserting one caps the grade at 1.
misconceptions:
  - id: accuracy-transfers
    label: Higher accuracy means a better policy
    text: A more accurate reward model always yields a better RLHF policy.
    why_wrong: >-
      Accuracy averages over the evaluation pairs; the policy is shaped by the reward model's
      errors on the policy's own outputs, which held-out accuracy does not measure.
    phrasings:
      - "higher accuracy means a better policy"
      - "a better reward model gives a better policy"
      - "74% beats 68%, so the policy improves"
# The /hint nudge for the question as a whole.
hint: Think about which outputs the accuracy was measured on, and what optimisation does next.
# The plot shown with the explanation. Either a built-in simulation (trapbot sims list):
sim: reward_overoptimization
# or a picture in this card's folder with its caption (leave sim out then):
#   image: my-plot.png
#   caption: What the plot shows, in a sentence or two.
# or neither. A deck never ships code.
# tags: mechanism families (the lint lists the known ones); progress is reported per family.
tags: [reward-modeling, reward-overoptimization, distribution-shift]
references:
  - authors: Leo Gao, John Schulman, Jacob Hilton
    year: 2022
    title: Scaling Laws for Reward Model Overoptimization
    arxiv: "2210.10760"
# Reference answers, with the labels a grader should read in them: credits (the point ids
# stated), partial (stated in part), asserts (misconception ids). The lint checks that each
# grade is what the grade rule gives for its labels. An expert answer graded 5 and the trap
# answer graded 0 or 1 are required; partial, missing-core and off-topic ones help.
reference_answers:
  - kind: expert
    grade: 5
    text: >-
      Not necessarily. The 74% is measured on pairs like the training pairs, from the
      starting policy, but RL pushes the policy onto outputs the reward model has barely seen,
      and the optimiser actively finds the outputs it overrates, so the proxy reward climbs
      while real quality can peak and fall. I would judge the new model by the policy: human
      or gold-model evaluation, proxy and gold reward against KL, and accuracy on pairs
      sampled from the current policy.
    credits: [off-distribution, optimiser-finds-errors, measure-the-policy]
  - kind: trap
    grade: 0
    text: >-
      Yes. A more accurate reward model ranks more pairs correctly, so the policy trained
      against it will be better, roughly in proportion to the gain.
    credits: []
    asserts: [accuracy-transfers]
---
The explanation, in Markdown, after the closing line above: 150 to 450 words, shown after
the grade. Say why the trap fails, then the mechanism, with the paper behind it.

Held-out accuracy answers one question: how often does the reward model order a pair drawn
from the same distribution as its training pairs? Those pairs come from the starting policy.
RLHF then optimises a new policy against the reward model, and the policy soon writes
outputs unlike anything in the evaluation set. There the reward model's errors are
unmeasured, and they are not random: the optimiser moves toward exactly the outputs the
model overrates.

Gao, Schulman and Hilton (2022) measured this with a gold reward model standing in for
humans. As the policy moves away from its start (measured by the KL divergence), the proxy
reward keeps rising while the gold reward rises, peaks and falls. A larger or better reward
model pushes the peak further out, but no accuracy figure on held-out pairs tells you where
the peak is for your recipe.

So a six-point gain is evidence, not a guarantee. Evaluate the policy, not the scorer: human
or gold-model judgements of its outputs, proxy and gold reward plotted against KL, and the
reward model's accuracy on pairs sampled from the current policy, where the errors that
matter live. Keep the KL penalty or early stopping that holds the policy near the region the
reward model knows.
"""


def card_template(card_id: str) -> str:
    """The template with the card's id filled in."""
    return TEMPLATE.replace("{card_id}", card_id)
