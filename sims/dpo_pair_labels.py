"""Who labels the DPO pairs: a verifier raises accuracy, a length-biased self-judge raises length.

Each prompt has a fixed set of candidate answers; an answer is a feature vector h = (length,
content features), and it is correct when its content agrees with a hidden direction enough to
beat the prompt's difficulty. The policy is log-linear, pi(y | x) = softmax over the candidates of
theta.h_y, so it generalises across prompts. Iterative DPO (Pang et al. 2024, "Iterative reasoning
preference optimization", arXiv 2404.19733): each round samples two answers per training prompt
from the current policy, labels the pair, and minimises the DPO loss -log sigmoid(beta [log
pi(y_w)/pi_ref(y_w) - log pi(y_l)/pi_ref(y_l)]) (Rafailov et al. 2023, "Direct preference
optimization", arXiv 2305.18290) with the round's starting policy as reference. Labellers: a
verifier that checks the answer (chosen = the correct one; pairs where both are right or both
wrong are dropped); a control trained only on those dropped pairs, with coin-flip labels (the
verifier has no preference there, so they carry no signal about correctness: accuracy does not
move); and a self-judge that prefers the longer answer, with a weak, noisy sense of correctness.
DPO moves theta along the direction that separates the labeller's chosen from rejected answers, so
it learns whatever the labeller rewards: correctness from the verifier, length from the judge. The
share of informative on-policy pairs is the mean over prompts of 2 p_x (1 - p_x), p_x the
policy's accuracy on prompt x, so it shrinks as the policy gets good (and is 0 on prompts it
always or never solves). Where no gold answers exist, majority-vote pairs filtered by vote
margin are a valid automatic signal (ScPO, Prasad et al. 2024, arXiv 2411.04109), with the risk
of entrenching the majority's mistakes; a majority vote does not prefer long, confident
answers, which is the LLM judge's failure shown here. Top: held-out accuracy vs round, with the
best accuracy reachable on those candidates. Bottom: mean length of the policy's answers.
"""

from __future__ import annotations

from dataclasses import dataclass

from sims.common import (
    PALETTE,
    Adam,
    Result,
    legend_below,
    phone_figure,
    save_png,
    seeded,
    style_panel,
)

TITLE = "DPO pair labels: verifier vs length-biased self-judge"
CAPTION = (
    "Iterative DPO on the policy's own samples. Verifier-labelled pairs raise held-out "
    "accuracy; length-biased self-judge pairs raise length, not accuracy. Both-right or "
    "both-wrong pairs carry no signal: trained on them alone, accuracy stays flat."
)

VARIANTS = ("verifier", "ties_only", "self_judge")


@dataclass(frozen=True)
class Config:
    """Candidate answers, labellers and the DPO loop."""

    train_prompts: int = 256
    """Prompts the policy samples pairs on."""
    test_prompts: int = 256
    """Held-out prompts for accuracy and length (exact expectations under the policy)."""
    candidates: int = 8
    """Candidate answers per prompt."""
    content_features: int = 5
    """Content dimensions of an answer (besides its length)."""
    difficulty_std: float = 1.0
    """Std of the per-prompt difficulty the content must beat to be correct."""
    judge_length_bias: float = 2.0
    """Self-judge: P(prefers a) = sigmoid(bias * (len_a - len_b) + sense * (ok_a - ok_b))."""
    judge_correctness_sense: float = 0.3
    """Self-judge's weak, noisy sense of correctness (0 = none)."""
    rounds: int = 8
    """Iterations of sample -> label -> DPO."""
    dpo_beta: float = 0.1
    """beta of the DPO loss."""
    steps_per_round: int = 20
    """Adam steps on each round's pairs."""
    learning_rate: float = 0.03
    """Adam step size on theta."""
    seeds: int = 6
    """Independent worlds, each trained with every labeller."""
    seed: int = 0
    """Seed for every random generator."""


def make_world(config: Config, n_prompts: int, seeds: int, gen):
    """Lengths (seeds, prompts, candidates, 1) and content features (..., content) of candidates."""
    import torch

    shape = (seeds, n_prompts, config.candidates)
    length = torch.randn(*shape, 1, generator=gen)
    content = torch.randn(*shape, config.content_features, generator=gen)
    return length, content


def correctness(content, direction, difficulty):
    """Correct when the content's projection on the hidden direction beats the difficulty."""
    import torch

    return (torch.einsum("spcd,sd->spc", content, direction) > difficulty.unsqueeze(-1)).float()


def pick(values, index):
    """values[..., index] per prompt: values (..., candidates), index (...) -> (...)."""
    return values.gather(-1, index.unsqueeze(-1)).squeeze(-1)


def policy_log_probs(theta, features):
    """log pi(y | x) for every candidate: log-softmax of theta.h over a prompt's candidates."""
    import torch

    return torch.log_softmax(torch.einsum("vspcd,vsd->vspc", features, theta), dim=-1)


def run(config: Config = Config()) -> Result:
    """Run iterative DPO with each labeller; record held-out accuracy, length, informative pairs."""
    import torch

    gen = seeded(config.seed)
    seeds, n_variants = config.seeds, len(VARIANTS)
    dim = 1 + config.content_features
    direction = torch.randn(seeds, config.content_features, generator=gen)
    direction = direction / direction.norm(dim=-1, keepdim=True)

    def world(n_prompts):
        length, content = make_world(config, n_prompts, seeds, gen)
        difficulty = config.difficulty_std * torch.randn(seeds, n_prompts, 1, generator=gen)
        correct = correctness(content, direction, difficulty.squeeze(-1))
        # the same world for every labeller: a leading variant axis
        features = torch.cat([length, content], dim=-1).expand(n_variants, -1, -1, -1, -1)
        return features, correct.expand(n_variants, -1, -1, -1), length.squeeze(-1)

    train_h, train_correct, train_length = world(config.train_prompts)
    test_h, test_correct, test_length = world(config.test_prompts)
    theta = torch.zeros(n_variants, seeds, dim)
    variant_index = {name: i for i, name in enumerate(VARIANTS)}

    def evaluate():
        probs = policy_log_probs(theta, test_h).exp()
        accuracy = (probs * test_correct).sum(-1).mean(-1)  # (variants, seeds)
        length = (probs * test_length).sum(-1).mean(-1)
        return accuracy, length

    accuracy, length = evaluate()
    history = {"accuracy": [accuracy], "length": [length]}
    informative_share = []
    for _ in range(config.rounds):
        reference = theta.clone()
        with torch.no_grad():
            probs = policy_log_probs(theta, train_h).exp()
            flat = probs.reshape(-1, config.candidates)
            pair = torch.multinomial(flat, 2, replacement=True, generator=gen)
            first = pair[:, 0].reshape(probs.shape[:-1])
            second = pair[:, 1].reshape(probs.shape[:-1])

        c1, c2 = pick(train_correct, first), pick(train_correct, second)
        l1 = pick(train_length.expand(n_variants, -1, -1, -1), first)
        l2 = pick(train_length.expand(n_variants, -1, -1, -1), second)
        informative = c1 != c2
        coin = torch.rand(c1.shape, generator=gen) < 0.5
        judge_prob = torch.sigmoid(
            config.judge_length_bias * (l1 - l2) + config.judge_correctness_sense * (c1 - c2)
        )
        judge_says_first = torch.rand(c1.shape, generator=gen) < judge_prob
        first_wins = torch.empty_like(informative)
        keep = torch.ones_like(informative)
        v, t, j = (variant_index[n] for n in VARIANTS)
        first_wins[v] = c1[v] > c2[v]
        keep[v] = informative[v]  # both right / both wrong: no preference, no pair
        first_wins[t] = coin[t]  # the control: only the pairs the verifier cannot order
        keep[t] = ~informative[t]
        first_wins[j] = judge_says_first[j]
        informative_share.append(informative[v].float().mean(-1))
        # identical samples give a zero DPO margin and no gradient; drop them too
        keep &= first != second
        chosen = torch.where(first_wins, first, second)
        rejected = torch.where(first_wins, second, first)
        weights = keep.float()

        theta.requires_grad_(True)
        ref_logp = policy_log_probs(reference, train_h)
        optimiser = Adam([([theta], config.learning_rate)])
        for _ in range(config.steps_per_round):
            logp = policy_log_probs(theta, train_h)
            # DPO implicit reward: beta * log(pi / pi_ref) of chosen minus that of rejected
            log_ratio = logp - ref_logp
            margin = config.dpo_beta * (pick(log_ratio, chosen) - pick(log_ratio, rejected))
            loss_per_pair = -torch.nn.functional.logsigmoid(margin) * weights
            loss = (loss_per_pair.sum(-1) / weights.sum(-1).clamp(min=1)).sum()
            (theta.grad,) = torch.autograd.grad(loss, theta)
            optimiser.step()
        theta = theta.detach()
        accuracy, length = evaluate()
        history["accuracy"].append(accuracy)
        history["length"].append(length)

    acc = torch.stack(history["accuracy"], dim=-1)  # (variants, seeds, rounds + 1)
    lng = torch.stack(history["length"], dim=-1)
    share = torch.stack(informative_share, dim=-1)  # (seeds, rounds)
    series: dict = {"rounds": list(range(config.rounds + 1))}
    metrics: dict[str, float] = {"initial_accuracy": float(acc[0, :, 0].mean())}
    for name, i in variant_index.items():
        series[f"{name}_accuracy"] = acc[i].mean(0).tolist()
        series[f"{name}_accuracy_std"] = acc[i].std(0).tolist()
        series[f"{name}_length"] = lng[i].mean(0).tolist()
        metrics[f"{name}_accuracy_gain"] = float((acc[i, :, -1] - acc[i, :, 0]).mean())
        metrics[f"{name}_length_gain"] = float((lng[i, :, -1] - lng[i, :, 0]).mean())
    series["informative_share"] = share.mean(0).tolist()
    # best reachable: always pick a correct candidate where one exists
    series["best_accuracy"] = float(test_correct[0].amax(-1).mean())
    metrics["best_accuracy"] = series["best_accuracy"]
    metrics["informative_share_first_round"] = float(share[:, 0].mean())
    metrics["informative_share_last_round"] = float(share[:, -1].mean())
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Top: held-out accuracy vs round. Bottom: mean answer length vs round."""
    s = result.series
    fig, (top, bottom) = phone_figure(
        2,
        height_per_panel=3.9,
        title="Verifier-labelled DPO pairs raise accuracy; a length-biased judge raises length",
    )
    labels = {
        "verifier": "verifier labels",
        "ties_only": "both-right / both-wrong only",
        "self_judge": "length-biased self-judge",
    }
    colors = dict(zip(VARIANTS, (PALETTE[2], PALETTE[0], PALETTE[1])))
    for name, label in labels.items():
        top.plot(s["rounds"], s[f"{name}_accuracy"], "o-", color=colors[name], label=label)
        if name == "ties_only":  # its seeds drift at random: show the spread
            mean, std = s[f"{name}_accuracy"], s[f"{name}_accuracy_std"]
            top.fill_between(
                s["rounds"],
                [a - b for a, b in zip(mean, std)],
                [a + b for a, b in zip(mean, std)],
                color=colors[name],
                alpha=0.15,
            )
        bottom.plot(s["rounds"], s[f"{name}_length"], "o-", color=colors[name], label=label)
    top.axhline(s["best_accuracy"], color="gray", ls="--", label="best reachable")
    top.set_ylim(0.3, 1.0)
    style_panel(top, "Held-out accuracy", "DPO round", "P(correct)")
    legend_below(top, ncol=2)
    style_panel(bottom, "Mean answer length", "DPO round", "length (std units)")
    return save_png(fig)
