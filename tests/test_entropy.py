"""Entropy control (chapter 18): ``EntropyControl`` against TRL 1.16's own ``_compute_loss`` (entropy bonus,
top-entropy quantile, the adaptive coefficient), Clip-Cov and KL-Cov against a direct computation and a
transcription of verl's ``compute_policy_loss_clip_cov`` / ``_kl_cov``, and the trainer's plug-in."""
import math
import tempfile
from dataclasses import replace

import numpy as np
import pytest
import torch

from rl4llm.llm.entropy import EntropyControl, high_entropy_mask
from rl4llm.llm.grpo import grpo_loss
from rl4llm.math.entropy import adaptive_entropy_step, clip_cov_tokens, kl_cov_tokens, token_covariance


def _parity(control: EntropyControl, loss_type: str, seeds=(0,)):
    """Our loss and gradient and TRL's on the parity batches of ``seeds``, one TRL trainer for all (its
    adaptive state carries over, as ours does). Returns a list of (ours, theirs, max grad difference,
    TRL's entropy_coef after the step, ours after the step)."""
    pytest.importorskip("trl")
    from rl4llm.llm.model import GPT, GPTConfig, completion_logprobs
    from rl4llm.llm.trainer import GRPOConfig
    from rl4llm.trl.adapters import quiet
    from rl4llm.trl.parity import book_layout, loss_batch, trl_loss_inputs, trl_loss_trainer

    torch.manual_seed(0)
    model = GPT(GPTConfig())
    config = GRPOConfig(prompts_per_step=2, group_size=4, temperature=0.7, loss_type=loss_type)
    params = dict(model.named_parameters())
    rows = []
    with quiet(), tempfile.TemporaryDirectory() as tmp:
        trainer = trl_loss_trainer(model, loss_batch(model, config, seed=seeds[0]), config, tmp)
        trainer.top_entropy_quantile = control.top_quantile
        trainer.entropy_coef, trainer.use_adaptive_entropy = control.coef, control.adaptive
        trainer._entropy_bonus_enabled = control.bonus
        trainer.args.entropy_target, trainer.args.entropy_coef_delta = control.target, control.delta
        trainer.args.entropy_coef_min, trainer.args.entropy_coef_max = control.coef_min, control.coef_max
        for seed in seeds:
            batch = loss_batch(model, config, seed=seed)
            logp, entropy = completion_logprobs(model, batch.tokens, batch.prompt_len, config.temperature,
                                                entropy_grad=True)
            ours, _ = control.loss(logp, entropy, batch.old_logp, batch.advantages, batch.mask, None,
                                   config.loss_options())
            our_grads = dict(zip(params, torch.autograd.grad(ours, list(params.values()))))
            theirs = trainer._compute_loss(trainer.model, trl_loss_inputs(batch))
            hf = dict(trainer.model.named_parameters())
            their_grads = book_layout(model, dict(zip(hf, torch.autograd.grad(theirs, list(hf.values())))))
            gap = max(float((their_grads[n] - g).abs().max()) for n, g in our_grads.items())
            rows.append((float(ours), float(theirs), gap, trainer.entropy_coef, control.coef))
    return rows


@pytest.mark.parametrize("loss_type", ["grpo", "dapo", "dr_grpo"])
@pytest.mark.parametrize("control", [EntropyControl(coef=0.3), EntropyControl(top_quantile=0.2),
                                     EntropyControl(coef=0.1, top_quantile=0.5)],
                         ids=["entropy_coef", "top_quantile", "both"])
def test_loss_and_gradient_equal_trls(control, loss_type):
    """TRL's _compute_loss with entropy_coef > 0 and with top_entropy_quantile < 1, on the same batch: the
    same loss and gradient (the bonus is the mean entropy over the tokens kept, whatever the loss type)."""
    (ours, theirs, gap, *_), = _parity(replace(control), loss_type)
    assert abs(ours - theirs) < 1e-6 and gap < 1e-6


def test_the_bonus_changes_the_loss_by_coef_times_the_mean_entropy():
    """Beside the plain loss, coef 0.3 subtracts exactly 0.3 x the mean entropy (a check that the parity above
    compares a real bonus)."""
    (plain, *_), = _parity(EntropyControl(), "dapo")
    (bonus, *_), = _parity(EntropyControl(coef=0.3), "dapo")
    assert bonus < plain - 0.1


def test_adaptive_coefficients_follow_trls_controller():
    """Five optimizer steps with use_adaptive_entropy, TRL's trainer and ours on the same batches: the same
    loss and gradient at every step and the same coefficient after it. The target sits above the entropy, so
    the bonus engages from the second step and the coefficient climbs by delta a step."""
    control = EntropyControl(coef=0.05, adaptive=True, target=10.0, delta=0.1, coef_max=0.25)
    rows = _parity(control, "grpo", seeds=range(5))
    for ours, theirs, gap, trl_coef, our_coef in rows:
        assert abs(ours - theirs) < 1e-6 and gap < 1e-6 and math.isclose(trl_coef, our_coef, abs_tol=1e-12)
    assert [round(r[3], 6) for r in rows] == [0.15, 0.25, 0.25, 0.25, 0.25]


def test_the_adaptive_rule_as_trl_states_it():
    """``adaptive_entropy_step`` over a sequence of measured entropies against TRL's rule written out."""
    rng = np.random.default_rng(0)
    entropies = rng.uniform(0.0, 0.4, size=50)
    coef, last, applied_trl = 0.02, math.inf, []
    ours_coef, ours_last, applied_ours = 0.02, math.inf, []
    for h in entropies:
        applied_trl.append(coef if last <= 0.2 else 0.0)
        coef = min(coef + 0.005, 0.05) if h <= 0.2 else max(coef - 0.005, 0.0)
        last = h
        a, ours_coef = adaptive_entropy_step(ours_coef, ours_last, h, 0.2, 0.005, 0.0, 0.05)
        ours_last = h
        applied_ours.append(a)
        assert ours_coef == coef
    assert applied_ours == applied_trl and applied_ours[0] == 0.0 and max(applied_ours) > 0


def test_high_entropy_mask_is_the_quantile_of_the_unmasked_tokens():
    entropy = torch.tensor([[0.1, 0.9, 0.5, 7.0], [0.3, 0.2, 0.8, 9.0]])
    mask = torch.tensor([[1.0, 1, 1, 0], [1, 1, 1, 0]])
    kept = high_entropy_mask(entropy, mask, 0.5)          # the median of the six unmasked values is 0.4
    assert kept.tolist() == [[False, True, True, False], [False, False, True, False]]
    assert not bool(high_entropy_mask(entropy, torch.zeros_like(mask), 0.5).any())


def _cov_batch(seed=0, B=6, T=5):
    g = torch.Generator().manual_seed(seed)
    logp = torch.log(torch.rand(B, T, generator=g, dtype=torch.float64) * 0.9 + 0.05)
    old = logp + 0.4 * (torch.rand(B, T, generator=g, dtype=torch.float64) - 0.5)
    lengths = torch.randint(2, T + 1, (B, 1), generator=g)
    mask = (torch.arange(T)[None, :] < lengths).double()
    A = torch.randn(B, generator=g, dtype=torch.float64) * 3
    return logp.requires_grad_(True), old, A, mask


def test_token_covariance_by_enumeration():
    """Cov_t, from the means over the unmasked tokens counted one by one."""
    logp, _, A, mask = _cov_batch()
    a = A[:, None].expand_as(logp).numpy()
    lp, m = logp.detach().numpy(), mask.numpy()
    cells = [(i, t) for i in range(m.shape[0]) for t in range(m.shape[1]) if m[i, t] > 0]
    mean_a = sum(a[c] for c in cells) / len(cells)
    mean_lp = sum(lp[c] for c in cells) / len(cells)
    cov = token_covariance(a, lp, m)
    for i in range(m.shape[0]):
        for t in range(m.shape[1]):
            expected = (a[i, t] - mean_a) * (lp[i, t] - mean_lp) if m[i, t] > 0 else -np.inf
            assert cov[i, t] == pytest.approx(expected)
    # the covariance between A and log pi over the tokens is the mean of the terms
    assert np.mean([cov[c] for c in cells]) == pytest.approx(np.cov([a[c] for c in cells], [lp[c] for c in cells],
                                                                     ddof=0)[0, 1])


def _verl_kl_cov(old, logp, A, mask, ratio, coef):
    """verl's compute_policy_loss_kl_cov (loss_agg_mode token-mean), transcribed."""
    A = A[:, None].expand_as(logp)
    nk = logp - old
    pg1, pgkl = -A * torch.exp(nk), -A * torch.exp(nk) + coef * nk.abs()
    pg = pg1.clone()
    valid = mask > 0
    idx = torch.nonzero(valid.reshape(-1), as_tuple=True)[0]
    va, vl = A[valid].detach().reshape(-1), logp[valid].detach().reshape(-1)
    cov = (va - va.mean()) * (vl - vl.mean())
    top = idx[torch.topk(cov, max(1, int(len(cov) * ratio)), largest=True).indices]
    rows, cols = top // A.shape[1], top % A.shape[1]
    pg[rows, cols] = pgkl[rows, cols]
    return (pg * mask).sum() / mask.sum()


def _verl_clip_cov(old, logp, A, mask, eps, ratio, lb, ub):
    """verl's compute_policy_loss_clip_cov (token-mean), transcribed, for a case where every candidate is
    taken (its random draw then takes them all)."""
    A = A[:, None].expand_as(logp)
    r = torch.exp(logp - old)
    pg1, pg2 = -A * r, -A * torch.clamp(r, 1 - eps, 1 + eps)
    by_origin = (pg2 > pg1) & (mask > 0)
    m_a = (A * mask).sum() / mask.sum()
    m_l = (logp.detach() * mask).sum() / mask.sum()
    cov = (A - m_a) * (logp - m_l)
    cov = cov.detach().masked_fill(mask == 0, -math.inf).masked_fill(by_origin, -math.inf)
    candidates = torch.nonzero((cov < ub) & (cov > lb) & (mask > 0))
    assert len(candidates) <= max(int(ratio * mask.sum().item()), 1)
    corr = torch.ones_like(A)
    corr[candidates[:, 0], candidates[:, 1]] = 0
    return (torch.maximum(pg1, pg2) * corr * mask).sum() / mask.sum(), corr


OPTIONS = {"eps_low": 0.2, "eps_high": 0.2, "loss_type": "dapo", "max_completion_length": 5,
           "importance_sampling_level": "token", "delta": None}


@pytest.mark.parametrize("seed", range(4))
def test_kl_cov_equals_verls_loss_and_gradient(seed):
    """With the clip set wide (verl's KL-Cov has none), loss and gradient equal verl's on the same tokens."""
    logp, old, A, mask = _cov_batch(seed)
    wide = OPTIONS | {"eps_low": 0.999, "eps_high": 1e9}
    control = EntropyControl(cov="kl_cov", cov_ratio=0.2, kl_coef=0.7)
    ours, stats = control.loss(logp, None, old, A, mask, None, wide)
    theirs = _verl_kl_cov(old, logp, A, mask, 0.2, 0.7)
    (g_ours,) = torch.autograd.grad(ours, logp)
    (g_theirs,) = torch.autograd.grad(theirs, logp)
    assert torch.isclose(ours, theirs) and torch.allclose(g_ours, g_theirs)
    assert stats["cov_fraction"] == pytest.approx(max(1, int(0.2 * mask.sum())) / float(mask.sum()))


def test_kl_cov_penalises_the_largest_covariances():
    logp, old, A, mask = _cov_batch(1)
    cov = token_covariance(A[:, None].expand_as(logp).numpy(), logp.detach().numpy(), mask.numpy())
    chosen = kl_cov_tokens(cov, 0.25)
    k = max(1, int(0.25 * mask.sum()))
    assert chosen.sum() == k and cov[chosen].min() >= np.sort(cov[mask.numpy() > 0])[-k]


@pytest.mark.parametrize("seed", range(4))
def test_clip_cov_equals_verls_loss_when_every_candidate_is_taken(seed):
    logp, old, A, mask = _cov_batch(seed)
    control = EntropyControl(cov="clip_cov", cov_ratio=1.0, clip_cov_lb=0.3, clip_cov_ub=5.0)
    ours, stats = control.loss(logp, None, old, A, mask, None, OPTIONS)
    theirs, corr = _verl_clip_cov(old, logp, A, mask, 0.2, 1.0, 0.3, 5.0)
    (g_ours,) = torch.autograd.grad(ours, logp)
    (g_theirs,) = torch.autograd.grad(theirs, logp)
    assert torch.isclose(ours, theirs) and torch.allclose(g_ours, g_theirs)
    assert bool((corr == 0).any()) and bool((g_ours[corr == 0] == 0).all())
    assert stats["cov_fraction"] == pytest.approx(float(((corr == 0) * mask).sum() / mask.sum()))


def test_clip_cov_draws_its_count_among_the_candidates_only():
    rng = np.random.default_rng(0)
    cov = rng.normal(size=(20, 10)) * 3
    eligible = rng.random((20, 10)) > 0.2
    chosen = clip_cov_tokens(cov, eligible, 0.05, 1.0, 5.0, np.random.default_rng(1))
    assert chosen.sum() == 10 and bool((eligible & (cov > 1) & (cov < 5))[chosen].all())


def test_the_default_changes_nothing():
    logp, old, A, mask = _cov_batch(2)
    ours, stats = EntropyControl().loss(logp, None, old, A, mask, None, OPTIONS)
    plain, plain_stats = grpo_loss(logp, old, A, mask, **OPTIONS)
    assert torch.equal(ours, plain) and stats["clip_fraction"] == plain_stats["clip_fraction"]


def test_validation():
    with pytest.raises(ValueError, match="top_quantile must be"):
        EntropyControl(top_quantile=1.5)
    with pytest.raises(ValueError, match="cov must be one of"):
        EntropyControl(cov="cov")
    with pytest.raises(ValueError, match="coef_min must be at most coef_max"):
        EntropyControl(coef_min=0.5, coef_max=0.1)
    with pytest.raises(ValueError, match="clip_cov_lb must be below clip_cov_ub"):
        EntropyControl(clip_cov_lb=5.0, clip_cov_ub=1.0)
    with pytest.raises(ValueError, match="coef must be"):
        EntropyControl(coef=-0.1)


def test_the_trainer_takes_the_strategy_and_resumes_it(tmp_path):
    """A short run with each knob trains; the adaptive state and Clip-Cov's draws survive a checkpoint; a
    sequence-level ratio with per-token knobs is refused."""
    from rl4llm.llm.model import GPT, GPTConfig
    from rl4llm.llm.ratios import ImportanceRatio
    from rl4llm.llm.tasks import AdditionTask
    from rl4llm.llm.trainer import GRPOConfig, GRPOTrainer

    task = AdditionTask(seed=0)
    torch.manual_seed(0)
    policy = GPT(GPTConfig())
    config = GRPOConfig(steps=4, prompts_per_step=4, group_size=4, eval_every=100, log_kl=False)
    control = EntropyControl(coef=0.01, adaptive=True, target=5.0, delta=0.01, cov="clip_cov", cov_ratio=0.1,
                             clip_cov_lb=-1e9, top_quantile=0.5)
    whole = GRPOTrainer(policy, task, config, entropy=control).train(progress=False)
    assert control.steps == 0 and whole.entropy.steps == 4 and whole.entropy.coef == pytest.approx(0.05)
    half = GRPOTrainer(policy, task, config, entropy=control).train(2, progress=False)
    half.save(str(tmp_path / "c.pt"))
    resumed = GRPOTrainer.load(str(tmp_path / "c.pt")).train(progress=False)
    assert resumed.metrics["loss"] == whole.metrics["loss"] and resumed.entropy == whole.entropy
    with pytest.raises(ValueError, match="need ratio=ImportanceRatio"):
        GRPOTrainer(policy, task, config, ratio=ImportanceRatio(level="sequence"), entropy=control)


def test_the_adaptive_toy_run_is_grpo_toy_run_with_the_controllers_coefficient():
    """Each outer step is one step of grpo_toy_run with the coefficient the controller applied (a direct
    route through grpo_toy_run), the coefficients follow adaptive_entropy_step on the exact entropy, and
    the controller applies nothing at the first step (no entropy measured before it)."""
    from rl4llm import grpo_toy_run
    from rl4llm.math.distributions import entropy, softmax
    from rl4llm.studies.entropy_toy import adaptive_entropy_toy_run
    from rl4llm.toy.five_token import CORRECT, LOGITS

    run = adaptive_entropy_toy_run(target=1.3, delta=0.2, G=8, steps=6, K=2, lr=0.5, seed=3)
    z, coef, last = LOGITS.copy(), 0.0, math.inf
    for t in range(6):
        h = entropy(softmax(z))
        applied = coef if last <= 1.3 else 0.0
        coef = min(coef + 0.2, 1.0) if h <= 1.3 else max(coef - 0.2, 0.0)
        last = h
        assert run["applied"][t] == applied and run["coef"][t] == pytest.approx(coef)
        z = grpo_toy_run(G=8, steps=1, K=2, lr=0.5, entropy_coef=applied, seed=3 * 1_000_003 + t, logits=z)["logits"][-1]
        assert run["pi_correct"][t + 1] == pytest.approx(softmax(z)[CORRECT], abs=1e-12)
    assert run["applied"][0] == 0.0 and run["applied"].max() > 0


def test_entropy_runs_are_the_trainers_runs_per_setting_and_seed():
    """The study's small case: each record is what GRPOTrainer logs for that setting and seed, and the
    settings start from the same policy (the plain setting twice gives the same numbers)."""
    from rl4llm import entropy_runs
    from rl4llm.llm.model import GPT, GPTConfig
    from rl4llm.llm.tasks import AdditionTask
    from rl4llm.llm.trainer import GRPOConfig, GRPOTrainer

    task = AdditionTask(seed=0, n_eval=20)
    torch.manual_seed(0)
    policy = GPT(GPTConfig())
    base = GRPOConfig(steps=3, prompts_per_step=4, group_size=4, inner_steps=2, eval_every=3, log_kl=False)
    settings = {"a": EntropyControl(), "b": EntropyControl(), "top": EntropyControl(top_quantile=0.5)}
    runs = entropy_runs(policy, task, base, settings, seeds=[0, 1])
    assert runs["a"]["entropy"].shape == (2, 3) and runs["a"]["accuracy"].shape == (2, 2)
    assert runs["a"]["eval_steps"].tolist() == [0, 3]
    np.testing.assert_array_equal(runs["a"]["entropy"], runs["b"]["entropy"])
    direct = GRPOTrainer(policy, task, replace(base, seed=1), entropy=settings["top"]).train(progress=False)
    assert runs["top"]["entropy"][1].tolist() == direct.metrics["entropy"]
    assert runs["top"]["accuracy"][1].tolist() == direct.evals["accuracy"]
    with pytest.raises(ValueError, match="settings must be a non-empty dict"):
        entropy_runs(policy, task, base, {}, seeds=[0, 1])
