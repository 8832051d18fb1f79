"""Every loss type TRL 1.16 accepts, ours against TRL's own ``GRPOTrainer._compute_loss`` on random batches
(issue 33): grpo, bnpo, dr_grpo, dapo, cispo, sapo, luspo, vespo, and GSPO (grpo at the sequence level).

TRL's method is called on a stub trainer whose model hands back given log-probs, so the gradient compared is
the one with respect to the log-probs themselves (no model, no download): the loss value, that gradient, and
every metric TRL logs for the loss type (clip ratios, ``cispo_clip_ratio``, ``vespo/phi_seq_mean``, ``kl``)."""
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

from rl4llm import grpo_loss
from rl4llm.llm.objectives import SOFT_KNOBS
from rl4llm.math.loss_types import LOSS_TYPES
from rl4llm.trl.parity import TRL_LOSS_TYPES, trl_named_metrics

trl_trainer = pytest.importorskip("trl.trainer.grpo_trainer")


def random_batch(seed: int, B: int = 6, T: int = 7):
    """Varied lengths (one row of length 1, one full), ratios well away from 1, advantages of both signs and one
    0, and a reference for the KL term."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    lengths[0], lengths[1] = 1, T
    mask = (torch.arange(T)[None, :] < lengths[:, None]).to(torch.float64)
    logp = torch.log(torch.rand(B, T, generator=g, dtype=torch.float64) * 0.9 + 0.05)
    old = logp + 0.5 * torch.randn(B, T, generator=g, dtype=torch.float64)
    ref = logp + 0.3 * torch.randn(B, T, generator=g, dtype=torch.float64)
    advantages = torch.randn(B, generator=g, dtype=torch.float64)
    advantages[2] = 0.0
    return logp * mask, old * mask, ref * mask, advantages, mask


def trl_stub(loss_type, level, logp, *, beta, eps_low, eps_high, delta, bias_correction, knobs, T):
    """The attributes ``_compute_loss`` reads, one process, no accumulation, no vLLM; the model's forward pass
    replaced by ``logp`` (entropies 0)."""
    accelerator = SimpleNamespace(num_processes=1, reduce=lambda x, reduction: x, gather=lambda x: x,
                                  gather_for_metrics=lambda x: x)
    args = SimpleNamespace(use_bias_correction_kl=bias_correction, delta=delta, steps_per_generation=1, **knobs)
    return SimpleNamespace(
        _get_per_token_logps_and_entropies=lambda *a, **k: (logp, torch.zeros_like(logp), None),
        top_entropy_quantile=1.0, off_policy_mask_threshold=None, importance_sampling_level=level, beta=beta,
        args=args, loss_type=loss_type, epsilon_low=eps_low, epsilon_high=eps_high,
        get_gamma_weights=trl_trainer.GRPOTrainer.get_gamma_weights, use_vllm=False,
        model=SimpleNamespace(training=True), current_gradient_accumulation_steps=1, accelerator=accelerator,
        _entropy_bonus_enabled=False, aux_loss_enabled=False, _metrics=defaultdict(lambda: defaultdict(list)),
        max_completion_length=T)


def trl_inputs(old, ref, advantages, mask) -> dict:
    """The batch ``_compute_loss`` reads (prompts and completion ids unused by the stub)."""
    return {"prompt_ids": torch.zeros(len(mask), 1, dtype=torch.long),
            "prompt_mask": torch.ones(len(mask), 1, dtype=torch.long),
            "completion_ids": torch.zeros_like(mask, dtype=torch.long), "completion_mask": mask,
            "advantages": advantages, "old_per_token_logps": old, "ref_per_token_logps": ref,
            "num_items_in_batch": mask.sum()}


#: (loss_type, importance_sampling_level): every TRL loss type at the token level, GSPO, and LUSPO and
#: SAPO at the sequence level (LUSPO's intended setting).
CASES = [(t, "token") for t in TRL_LOSS_TYPES] + [("grpo", "sequence"), ("luspo", "sequence"),
                                                   ("sapo", "sequence")]

#: Settings: (beta, eps_low, eps_high, delta, use_bias_correction_kl, knobs changed from TRL's defaults).
SETTINGS = [(0.0, 0.2, 0.28, None, False, {}),
            (0.04, 0.1, 0.3, 1.4, True, {"sapo_temperature_pos": 2.0, "sapo_temperature_neg": 0.5,
                                         "vespo_k_pos": 1.0, "vespo_lambda_pos": 0.5, "vespo_k_neg": 4.0,
                                         "vespo_lambda_neg": 3.0})]


def test_every_trl_loss_type_is_registered():
    """TRL 1.16's documented loss types, all registered once."""
    assert set(TRL_LOSS_TYPES) == {"grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "luspo", "vespo"}
    assert set(TRL_LOSS_TYPES) <= set(LOSS_TYPES)


@pytest.mark.parametrize("loss_type, level", CASES)
@pytest.mark.parametrize("setting", range(len(SETTINGS)))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_loss_gradient_and_metrics_equal_trls(loss_type, level, setting, seed):
    beta, eps_low, eps_high, delta, bias_correction, changed = SETTINGS[setting]
    if loss_type == "cispo":
        eps_high = 1.3                                  # CISPO's cap (TRL's epsilon_high is the cap itself)
    knobs = SOFT_KNOBS | changed
    logp, old, ref, advantages, mask = random_batch(seed)
    T = mask.shape[1]
    ours_logp = logp.clone().requires_grad_(True)
    ours, stats = grpo_loss(ours_logp, old, advantages, mask, eps_low=eps_low, eps_high=eps_high, beta=beta,
                            ref_logp=ref if beta > 0 else None, loss_type=loss_type, max_completion_length=T,
                            importance_sampling_level=level, delta=delta, use_bias_correction_kl=bias_correction,
                            **knobs)
    (our_grad,) = torch.autograd.grad(ours, ours_logp)
    their_logp = logp.clone().requires_grad_(True)
    stub = trl_stub(loss_type, level, their_logp, beta=beta, eps_low=eps_low, eps_high=eps_high, delta=delta,
                    bias_correction=bias_correction, knobs=knobs, T=T)
    theirs = trl_trainer.GRPOTrainer._compute_loss(stub, None, trl_inputs(old, ref, advantages, mask))
    (their_grad,) = torch.autograd.grad(theirs, their_logp)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(our_grad, their_grad, rtol=1e-10, atol=1e-12)
    assert bool((our_grad[mask == 0] == 0).all())
    logged = {name: values[-1] for name, values in stub._metrics["train"].items()}
    logged.pop("entropy")                               # the stub's, not a loss's
    expected = {"grpo": 5, "bnpo": 5, "dr_grpo": 5, "dapo": 5, "luspo": 5, "cispo": 1, "sapo": 0, "vespo": 1}
    assert len(logged) == expected[loss_type] + (beta > 0)
    named = trl_named_metrics(stats, loss_type, kl_measured=beta > 0)
    for name, value in logged.items():
        assert value == pytest.approx(named[name], rel=1e-6, abs=1e-9), name     # TRL counts in float32


def test_the_soft_objectives_act_off_policy():
    """The batches above leave 1: SAPO's gate and VESPO's weight move off their on-policy values (else the
    comparison would test only rho = 1), and the clip binds somewhere."""
    logp, old, ref, advantages, mask = random_batch(0)
    vespo = grpo_loss(logp, old, advantages, mask, loss_type="vespo")[1]
    assert abs(vespo["phi_seq_mean"] - 1) > 0.05
    assert grpo_loss(logp, old, advantages, mask, loss_type="dapo", eps_high=0.28)[1]["clip_fraction"] > 0.05


def test_our_soft_knobs_are_trls_defaults(tmp_path):
    """grpo_loss's SAPO and VESPO defaults are TRL 1.16's GRPOConfig defaults, so a config that names only the
    loss type runs the same loss on both sides."""
    import trl
    args = trl.GRPOConfig(output_dir=str(tmp_path), report_to="none", use_cpu=True)
    assert {name: getattr(args, name) for name in SOFT_KNOBS} == SOFT_KNOBS


@pytest.mark.parametrize("loss_type", ["sapo", "luspo", "vespo"])
def test_the_trainer_and_trls_config_reach_the_new_loss_types_by_name(loss_type, tmp_path):
    """GRPOConfig(loss_type=...) validates against the registry, the book's trainer takes a step with it, and
    trl_config_kwargs hands TRL a config it accepts (LUSPO with GSPO's sequence ratio, as TRL asks)."""
    import numpy as np
    import trl
    from rl4llm.llm.model import GPT, GPTConfig
    from rl4llm.llm.ratios import ImportanceRatio
    from rl4llm.llm.tasks import AdditionTask
    from rl4llm.llm.trainer import GRPOConfig, GRPOTrainer
    from rl4llm.trl.knobs import trl_config_kwargs

    config = GRPOConfig(steps=1, prompts_per_step=2, group_size=2, loss_type=loss_type, log_kl=False, device="cpu")
    row = GRPOTrainer(GPT(GPTConfig()), AdditionTask(seed=0), config).step()
    assert row["step"] == 1 and np.isfinite(row["loss"])
    ratio = ImportanceRatio(level="sequence" if loss_type == "luspo" else "token")
    args = trl.GRPOConfig(**trl_config_kwargs(config, ratio=ratio), output_dir=str(tmp_path), report_to="none")
    assert args.loss_type == loss_type and args.importance_sampling_level == ratio.level
