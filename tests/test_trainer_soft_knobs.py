"""SAPO's and VESPO's knobs in the trainer's GRPOConfig (issue 33): TRL 1.16's names and defaults, validated,
passed to the loss, mapped to TRL's config, and equal in TRL's own ``_compute_loss``; and the warning TRL gives
when LUSPO or VESPO runs at the other ratio level."""
import warnings

import pytest
import torch

from rl4llm import grpo_loss
from rl4llm.llm.model import GPT, GPTConfig
from rl4llm.llm.objectives import SOFT_KNOBS
from rl4llm.llm.ratios import ImportanceRatio
from rl4llm.llm.tasks import AdditionTask
from rl4llm.llm.trainer import GRPOConfig, GRPOTrainer
from rl4llm.trl.knobs import KNOBS, knob_table, trl_config_kwargs
from test_loss_types_trl import random_batch, trl_inputs, trl_stub, trl_trainer

TASK = AdditionTask(seed=0)
CHANGED = {"sapo_temperature_pos": 2.0, "sapo_temperature_neg": 0.5, "vespo_k_pos": 1.0, "vespo_lambda_pos": 0.5,
           "vespo_k_neg": 4.0, "vespo_lambda_neg": 3.0}


def test_the_fields_are_trls_names_and_defaults(tmp_path):
    import trl
    trls = trl.GRPOConfig(output_dir=str(tmp_path), report_to="none", use_cpu=True)
    assert {name: getattr(GRPOConfig(), name) for name in SOFT_KNOBS} == SOFT_KNOBS == \
        {name: getattr(trls, name) for name in SOFT_KNOBS}
    assert all(KNOBS[name] == (name, 17) for name in SOFT_KNOBS)
    rows = {row["knob"]: row for row in knob_table(GRPOConfig(**CHANGED))}
    assert all(rows[name]["trl_value"] == CHANGED[name] and rows[name]["trl_default"] == SOFT_KNOBS[name]
               for name in SOFT_KNOBS)


@pytest.mark.parametrize("name, value, message", [
    ("sapo_temperature_pos", 0.0, "sapo_temperature_pos must be"),
    ("sapo_temperature_neg", -1.0, "sapo_temperature_neg"),
    ("vespo_k_pos", -0.5, "vespo_k_pos must be"), ("vespo_lambda_neg", 0.0, "vespo_lambda_neg must be"),
    ("vespo_k_neg", float("nan"), "vespo_k_neg"),
])
def test_validation(name, value, message):
    with pytest.raises(ValueError, match=message):
        GRPOConfig(**{name: value})
    GRPOConfig(vespo_k_pos=0.0)                    # a power of 0 is allowed (phi = exp(lambda (1 - w)))


@pytest.mark.parametrize("loss_type, level", [("sapo", "token"), ("sapo", "sequence"), ("vespo", "token")])
def test_our_values_reach_trls_compute_loss_identically(loss_type, level, tmp_path):
    """The trainer's loss options and TRL's config built by the bridge give the same loss and gradient in
    grpo_loss and in TRL's _compute_loss, on a batch off policy, with knobs away from the defaults (which
    change the loss: the comparison is not between two defaults)."""
    import trl
    config = GRPOConfig(loss_type=loss_type, log_kl=False, **CHANGED)
    ratio = ImportanceRatio(level=level)
    options = GRPOTrainer(GPT(GPTConfig()), TASK, config, ratio=ratio).loss_options
    assert {name: options[name] for name in SOFT_KNOBS} == CHANGED
    args = trl.GRPOConfig(**trl_config_kwargs(config, ratio=ratio), output_dir=str(tmp_path), report_to="none",
                          use_cpu=True)
    assert {name: getattr(args, name) for name in SOFT_KNOBS} == CHANGED
    logp, old, ref, advantages, mask = random_batch(0)
    T = mask.shape[1]
    ours_logp = logp.clone().requires_grad_(True)
    ours, _ = grpo_loss(ours_logp, old, advantages, mask, **{**options, "max_completion_length": T})
    (our_grad,) = torch.autograd.grad(ours, ours_logp)
    default, _ = grpo_loss(logp, old, advantages, mask, **{**options, "max_completion_length": T, **SOFT_KNOBS})
    assert abs(float(default - ours.detach())) > 1e-3
    their_logp = logp.clone().requires_grad_(True)
    stub = trl_stub(args.loss_type, args.importance_sampling_level, their_logp, beta=args.beta,
                    eps_low=args.epsilon, eps_high=args.epsilon_high, delta=args.delta,
                    bias_correction=args.use_bias_correction_kl, knobs={n: getattr(args, n) for n in SOFT_KNOBS}, T=T)
    theirs = trl_trainer.GRPOTrainer._compute_loss(stub, None, trl_inputs(old, ref, advantages, mask))
    (their_grad,) = torch.autograd.grad(theirs, their_logp)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(our_grad, their_grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss_type, level, warns", [
    ("luspo", "token", "loss_type='luspo' is meant for ImportanceRatio\\(level='sequence'\\).*paper's setup"),
    ("vespo", "sequence", "loss_type='vespo' is meant for ImportanceRatio\\(level='token'\\).*internally"),
    ("luspo", "sequence", None), ("vespo", "token", None), ("grpo", "sequence", None)])
def test_the_trainer_warns_where_trl_warns(loss_type, level, warns):
    """TRL 1.16's GRPOTrainer logs a warning and runs LUSPO at the token level (VESPO at the sequence level);
    the book's trainer warns likewise, naming TRL's reason, and runs."""
    config = GRPOConfig(steps=1, prompts_per_step=2, group_size=2, loss_type=loss_type, log_kl=False, device="cpu")
    make = lambda: GRPOTrainer(GPT(GPTConfig()), TASK, config, ratio=ImportanceRatio(level=level))
    if warns:
        with pytest.warns(UserWarning, match=warns):
            trainer = make()
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            trainer = make()
    assert trainer.step()["step"] == 1
