"""CISPO as a loss type of the registry: ``grpo_loss(..., loss_type="cispo")`` (and ``cispo_loss``, its route)
against the closed form by value and autograd gradient, TRL 1.16's own ``_compute_loss`` with
``loss_type="cispo"`` on the same batch, and validation."""
import tempfile

import numpy as np
import pytest
import torch

from rl4llm import cispo_loss, grpo_loss
from rl4llm.llm.objectives import EPS_MAX


def _batch(seed=0, B=3, T=4):
    g = torch.Generator().manual_seed(seed)
    logp = torch.log(torch.rand(B, T, generator=g, dtype=torch.float64) * 0.9 + 0.05)
    old = logp.detach() + 0.6 * (torch.rand(B, T, generator=g, dtype=torch.float64) - 0.5)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.float64)
    return logp.requires_grad_(True), old, torch.tensor([1.0, -0.5, 0.25], dtype=torch.float64), mask


def test_value_and_gradient_equal_the_closed_form():
    """The weight is min(rho, eps_max): capped from above only, so a ratio far below 1 keeps its weight."""
    logp, old, A, mask = _batch()
    loss, stats = grpo_loss(logp, old, A, mask, loss_type="cispo", eps_high=1.1)
    routed, routed_stats = cispo_loss(logp, old, A, mask, eps_max=1.1)
    assert torch.equal(loss, routed) and routed_stats["clip_ratio"] == stats["clip_fraction"]
    ratio = torch.exp((logp - old).detach())
    weight = torch.minimum(ratio, torch.tensor(1.1, dtype=torch.float64))
    n = mask.sum()
    assert torch.isclose(loss, -(weight * A[:, None] * logp * mask).sum() / n)
    (grad,) = torch.autograd.grad(loss, logp)
    assert torch.allclose(grad, -weight * A[:, None] * mask / n)
    assert bool((grad[mask > 0] != 0).all())                   # every token keeps a gradient
    assert bool(((ratio < 0.9) & (mask > 0)).any())            # a low ratio, left as it is (no lower bound)
    above = (ratio > 1.1) * mask
    assert np.isclose(routed_stats["capped_fraction"], float(above.sum() / n))
    assert np.isclose(stats["clip_fraction"], float((above * (A[:, None] > 0)).sum() / n))
    assert stats["clip_low_fraction"] == 0.0 and stats["clip_high_fraction"] == stats["clip_fraction"]


def test_below_the_cap_it_has_ppos_gradient_and_ppo_zeroes_where_cispo_does_not():
    logp, old, A, mask = _batch(seed=3)
    grads = {}
    for name, fn in (("cispo", lambda: grpo_loss(logp, old, A, mask, loss_type="cispo", eps_high=1.1)),
                     ("ppo", lambda: grpo_loss(logp, old, A, mask, eps_low=0.1, loss_type="dapo"))):
        (grads[name],) = torch.autograd.grad(fn()[0], logp)
    rho = torch.exp(logp - old).detach()
    inside = ((rho >= 0.9) & (rho <= 1.1) & (mask > 0))
    assert torch.allclose(grads["cispo"][inside], grads["ppo"][inside])
    ppo_zero = (grads["ppo"] == 0) & (mask > 0)
    assert bool(ppo_zero.any()) and bool((grads["cispo"][ppo_zero] != 0).all())


def test_the_default_cap_is_trls_recommended_five():
    logp, old, A, mask = _batch()
    assert EPS_MAX == 5.0
    assert torch.equal(grpo_loss(logp, old, A, mask, loss_type="cispo")[0],
                       grpo_loss(logp, old, A, mask, loss_type="cispo", eps_high=5.0)[0])
    assert torch.equal(cispo_loss(logp, old, A, mask)[0], cispo_loss(logp, old, A, mask, eps_max=5.0)[0])


@pytest.mark.parametrize("eps_max", [5.0, 1.28, 0.28, None])
def test_same_loss_gradient_and_clip_ratio_as_trl(eps_max, monkeypatch):
    """TRL 1.16's GRPOTrainer._compute_loss with loss_type="cispo" and epsilon_high=eps_max on the
    parity batch of chapter 16: the same loss, gradient and ``cispo_clip_ratio``. At 0.28 (DAPO's width
    taken for a cap) every weight is capped. ``None`` is TRL's own default: the config is built with
    ``epsilon_high=None``, TRL's ``__init__`` falls back to ``epsilon`` (0.2), and every weight is capped at 0.2."""
    pytest.importorskip("trl")
    from rl4llm.llm.model import GPT, GPTConfig, completion_logprobs
    from rl4llm.llm.trainer import GRPOConfig
    from rl4llm.trl import parity
    from rl4llm.trl.parity import book_layout, loss_batch, trl_loss_inputs, trl_loss_trainer
    from rl4llm.trl.adapters import quiet

    torch.manual_seed(0)
    model = GPT(GPTConfig())
    config = GRPOConfig(prompts_per_step=2, group_size=4, beta=0.0, temperature=0.7, loss_type="dapo")
    if eps_max is None:                                            # TRL's config default, resolved by TRL itself
        built = parity.trl_config_kwargs
        monkeypatch.setattr(parity, "trl_config_kwargs",
                            lambda *a, **k: {**built(*a, **k), "loss_type": "cispo", "epsilon_high": None})
    cap = config.eps_low if eps_max is None else eps_max
    batch = loss_batch(model, config, seed=0)
    params = dict(model.named_parameters())
    logp, _ = completion_logprobs(model, batch.tokens, batch.prompt_len, config.temperature)
    ours, stats = grpo_loss(logp, batch.old_logp, batch.advantages, batch.mask, loss_type="cispo", eps_high=cap)
    our_grads = dict(zip(params, torch.autograd.grad(ours, list(params.values()))))
    with quiet(), tempfile.TemporaryDirectory() as tmp:
        trainer = trl_loss_trainer(model, batch, config, tmp)
        if eps_max is None:
            assert trainer.args.epsilon_high is None and trainer.epsilon_high == cap == 0.2
        else:
            trainer.loss_type = trainer.args.loss_type = "cispo"   # the config's eps_high is a clip width, not a cap
            trainer.epsilon_high = trainer.args.epsilon_high = eps_max
        theirs = trainer._compute_loss(trainer.model, trl_loss_inputs(batch))
    hf = dict(trainer.model.named_parameters())
    their_grads = book_layout(model, dict(zip(hf, torch.autograd.grad(theirs, list(hf.values())))))
    assert abs(float(theirs.detach()) - float(ours.detach())) < 1e-6
    assert max(float((their_grads[n] - g).abs().max()) for n, g in our_grads.items()) < 1e-6
    logged = trainer._metrics["train"]["cispo_clip_ratio"][-1]
    assert abs(logged - stats["clip_fraction"]) < 1e-6
    if cap < 1:
        assert cispo_loss(logp, batch.old_logp, batch.advantages, batch.mask, eps_max=cap)[1]["capped_fraction"] == 1.0


def test_trl_kwargs_are_a_real_trl_config_whose_epsilon_high_is_the_cap(tmp_path):
    trl = pytest.importorskip("trl")
    from rl4llm.trl.knobs import cispo_trl_kwargs

    args = trl.GRPOConfig(**cispo_trl_kwargs(5.0), output_dir=str(tmp_path), report_to="none", use_cpu=True)
    assert (args.loss_type, args.epsilon_high) == ("cispo", 5.0)
    with pytest.raises(ValueError, match="eps_max must be a finite number > 0"):
        cispo_trl_kwargs(-1.0)


def test_padding_gets_no_gradient_and_infinite_padding_is_harmless():
    logp, old, A, mask = _batch()
    old = torch.where(mask > 0, old, torch.full_like(old, -torch.inf))
    loss, _ = grpo_loss(logp, old, A, mask, loss_type="cispo")
    (grad,) = torch.autograd.grad(loss, logp)
    assert torch.isfinite(loss) and bool((grad[mask == 0] == 0).all())


def test_validation():
    logp, old, A, mask = _batch()
    with pytest.raises(ValueError, match="logp must be a torch.Tensor"):
        cispo_loss(logp.detach().numpy(), old, A, mask)
    with pytest.raises(ValueError, match="mask must have the shape of logp"):
        cispo_loss(logp, old, A, mask[:, :2])
    with pytest.raises(ValueError, match=r"advantages must be shaped \(B,\)"):
        cispo_loss(logp, old, A[:2], mask)
    with pytest.raises(ValueError, match="eps_high must be a finite number > 0"):
        cispo_loss(logp, old, A, mask, eps_max=0.0)
    with pytest.raises(ValueError, match="eps_high must be a finite number > 0"):
        grpo_loss(logp, old, A, mask, loss_type="cispo", eps_high=-1.0)
    with pytest.raises(TypeError):
        cispo_loss(logp, old, A, mask, eps_low=0.2)
    with pytest.raises(ValueError, match=r"logp must be shaped \(B, T\)"):
        cispo_loss(logp[0], old[0], A, mask[0])


def test_the_config_reaches_cispo_by_name_with_its_cap():
    """GRPOConfig(loss_type="cispo") takes eps_high as CISPO's cap (5 when None, as grpo_loss), and TRL's
    config receives that cap, not TRL's own default epsilon_high = epsilon = 0.2."""
    from rl4llm.llm.objectives import EPS_MAX
    from rl4llm.llm.trainer import GRPOConfig
    from rl4llm.trl.knobs import trl_config_kwargs

    assert GRPOConfig(loss_type="cispo").clip()[1] == EPS_MAX
    assert GRPOConfig(loss_type="cispo", eps_high=2.0).loss_options()["eps_high"] == 2.0
    assert trl_config_kwargs(GRPOConfig(loss_type="cispo"))["epsilon_high"] == EPS_MAX
    assert trl_config_kwargs(GRPOConfig(loss_type="dapo", eps_high=0.28))["epsilon_high"] == 0.28
    assert GRPOConfig(loss_type="grpo").clip() == (0.2, 0.2)
    with pytest.raises(ValueError, match="eps_high"):
        GRPOConfig(loss_type="grpo", eps_high=5.0)
    with pytest.raises(ValueError, match="eps_high"):
        GRPOConfig(loss_type="cispo", eps_high=-1.0)
