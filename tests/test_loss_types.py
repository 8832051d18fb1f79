"""The loss-type registry (rl4llm.math.loss_types): a scratch loss type reaches the loss, the trainer, the toys,
data parallelism and the studies, whose weight is autograd's; no error message prints a LossType; every
registered weight against autograd; and GSPO's sequence-level ratio."""
import numpy as np
import pytest
import torch

from rl4llm import grpo_loss, sequence_ratio
from rl4llm.llm.data_parallel import data_parallel_loss
from rl4llm.math.loss_types import LOSS_TYPES, LossType, register_loss_type
from rl4llm.math.credit import group_advantages
from rl4llm.studies.estimator_bias import estimator_moments, token_weights, two_step_task
from rl4llm.llm.grpo_toys import aggregation_weights, two_step_inner_steps
from rl4llm.llm.model import GPT, GPTConfig
from rl4llm.llm.tasks import AdditionTask
from rl4llm.llm.trainer import GRPOConfig, GRPOTrainer


@pytest.fixture
def row_sum():
    """A dummy loss type, registered for one test and removed again: the token sum of each row,
    averaged over rows (no length normalisation)."""
    entry = register_loss_type(LossType("row_sum", lambda masked, mask, L=None: masked.sum(axis=1).mean(),
                                        lambda A, lengths, L=None: A / lengths.shape[-1]))
    yield entry
    del LOSS_TYPES[entry.name]


def test_a_registered_loss_type_is_accepted_by_the_loss_the_trainer_the_toy_and_data_parallelism(row_sum):
    torch.manual_seed(0)
    logp = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    old, adv = logp.detach() + 0.1, torch.tensor([1.0, -1.0, 0.5, -0.5], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1], [1, 0, 0], [1, 1, 1]], dtype=torch.float64)
    loss, _ = grpo_loss(logp, old, adv, mask, loss_type="row_sum")
    ratio = torch.exp(logp - old)
    expected = -(torch.minimum(ratio * adv[:, None], ratio.clamp(0.8, 1.2) * adv[:, None]) * mask).sum(1).mean()
    torch.testing.assert_close(loss, expected, rtol=0, atol=1e-15)
    config = GRPOConfig(steps=1, prompts_per_step=2, group_size=2, loss_type="row_sum", log_kl=False, device="cpu")
    row = GRPOTrainer(GPT(GPTConfig()), AdditionTask(seed=0), config).step()
    assert row["step"] == 1 and np.isfinite(row["reward"])
    w = aggregation_weights([1.0, 0.0, 0.0, 1.0], [1, 2, 3, 4], "row_sum")["per_token"]
    np.testing.assert_allclose(w, np.array([1.0, -1.0, -1.0, 1.0]) / 4)     # A_i / B, whatever the length
    assert two_step_inner_steps(["5", "05", "4", "15"], K=1, loss_type="row_sum")["rewards"].tolist() == [1, 1, 0, 0]
    split, _ = data_parallel_loss(logp, old, adv, mask, num_processes=2, loss_type="row_sum")
    torch.testing.assert_close(split, loss, rtol=0, atol=1e-15)          # a row mean splits evenly over processes


def test_a_registered_loss_types_weight_in_the_studies_is_autograds(row_sum):
    """The studies read the registry's weight (no if-ladder): a new loss type gets its own, which autograd
    through grpo_loss confirms, not dr_grpo's."""
    rewards, lengths = np.array([1.0, 0.0, 0.0, 1.0]), np.array([1, 2, 3, 4])
    ours = token_weights(group_advantages(rewards), lengths, "row_sum", 4)
    theirs = aggregation_weights(rewards, lengths, "row_sum", max_completion_length=4)["per_token"] * 4
    np.testing.assert_allclose(ours, theirs, rtol=1e-14)
    assert not np.allclose(ours, token_weights(group_advantages(rewards), lengths, "dr_grpo", 4))
    assert np.isfinite(estimator_moments(two_step_task(), 3, "rloo", "row_sum")["relative_bias"])


@pytest.mark.parametrize("loss_type", list(LOSS_TYPES))
def test_every_registered_weight_is_autograd_through_grpo_loss(loss_type):
    rewards, lengths = np.array([1.0, 0.0, 1.0, 0.0, 0.5]), np.array([2, 3, 3, 1, 5])
    ours = token_weights(group_advantages(rewards), lengths, loss_type, 6)
    theirs = aggregation_weights(rewards, lengths, loss_type, max_completion_length=6)["per_token"] * 6
    np.testing.assert_allclose(ours, theirs, rtol=1e-13)


def test_no_error_message_prints_a_loss_type_object():
    """Every refusal of an unknown loss type lists the registered names, never LossType(...) objects
    with their functions' addresses."""
    from rl4llm.studies.length_drift import length_drift_exact
    logp = torch.zeros(2, 3)
    calls = (lambda: grpo_loss(logp, logp, torch.zeros(2), torch.ones(2, 3), loss_type="sum"),
             lambda: GRPOConfig(loss_type="sum"),
             lambda: data_parallel_loss(logp, logp, torch.zeros(2), torch.ones(2, 3), num_processes=1, loss_type="sum"),
             lambda: estimator_moments(two_step_task(), 2, "rloo", "sum"),
             lambda: length_drift_exact("sum"),
             lambda: token_weights_checked("sum"),
             lambda: aggregation_weights([1.0, 0.0], [1, 2], "sum"),
             lambda: two_step_inner_steps(["5", "4"], loss_type="sum"))
    for call in calls:
        with pytest.raises(ValueError, match="loss_type") as error:
            call()
        message = str(error.value)
        assert "LossType" not in message and "function" not in message and " at 0x" not in message, message
        assert all(repr(name) in message for name in LOSS_TYPES), message
    assert repr(LOSS_TYPES["grpo"]) == "LossType('grpo')"


def token_weights_checked(loss_type):
    from rl4llm.studies.estimator_bias import estimate_of_group
    return estimate_of_group(two_step_task(), [0, 1], "rloo", loss_type)


def test_an_unregistered_loss_type_is_refused_everywhere():
    assert "row_sum" not in LOSS_TYPES
    logp = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="loss_type must be one of"):
        grpo_loss(logp, logp, torch.zeros(2), torch.ones(2, 3), loss_type="row_sum")
    with pytest.raises(ValueError, match="loss_type"):
        GRPOConfig(loss_type="row_sum")
    with pytest.raises(ValueError, match="loss_type"):
        data_parallel_loss(logp, logp, torch.zeros(2), torch.ones(2, 3), num_processes=1, loss_type="row_sum")


def test_sequence_ratio_is_the_geometric_mean_of_the_token_ratios_over_real_tokens():
    logp = np.array([[-1.0, -2.0, -0.5], [-0.3, -0.1, 7.0]])
    old = np.array([[-1.2, -1.5, -0.5], [-0.2, -0.4, -9.0]])
    mask = np.array([[1, 1, 1], [1, 1, 0]])
    rho = np.exp(logp - old)
    expected = [np.prod(rho[0]) ** (1 / 3), np.prod(rho[1, :2]) ** (1 / 2)]
    np.testing.assert_allclose(sequence_ratio(logp, old, mask), expected, rtol=1e-14)
    np.testing.assert_allclose(sequence_ratio(logp, logp, mask), [1.0, 1.0])
    with pytest.raises(ValueError, match="mask"):
        sequence_ratio(logp, old, mask[:, :2])
    with pytest.raises(ValueError, match="mask"):
        sequence_ratio(logp, old, mask * 0.5)
    with pytest.raises(ValueError, match="logp"):
        sequence_ratio(logp[0], old[0], mask[0])


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dapo", "dr_grpo"])
def test_sequence_level_loss_clips_one_ratio_per_sequence(loss_type):
    """GSPO: every token of row i carries s_i = sequence_ratio, clipped; a plain loop as the oracle."""
    torch.manual_seed(1)
    logp = torch.randn(3, 4, dtype=torch.float64)
    old = logp + 0.3 * torch.randn(3, 4, dtype=torch.float64)
    adv = torch.tensor([1.0, -0.7, 0.4], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.float64)
    loss, stats = grpo_loss(logp, old, adv, mask, loss_type=loss_type, importance_sampling_level="sequence",
                            eps_low=0.1, eps_high=0.15, max_completion_length=4)
    s = sequence_ratio(logp.numpy(), old.numpy(), mask.numpy())
    per_row = -np.minimum(s * adv.numpy(), np.clip(s, 0.9, 1.15) * adv.numpy())
    lengths = mask.sum(1).numpy()
    expected = {"grpo": per_row.mean(), "bnpo": (per_row * lengths).sum() / lengths.sum(),
                "dapo": (per_row * lengths).sum() / lengths.sum(), "dr_grpo": (per_row * lengths).sum() / (3 * 4)}
    assert float(loss) == pytest.approx(expected[loss_type], rel=1e-12)
    assert stats["mean_ratio"] == pytest.approx((s * lengths).sum() / lengths.sum(), rel=1e-12)


def test_token_and_sequence_levels_agree_on_one_token_answers_and_delta_caps_the_ratio():
    logp = torch.tensor([[-0.2], [-1.0]], dtype=torch.float64)
    old = torch.tensor([[-1.0], [-0.2]], dtype=torch.float64)
    adv, mask = torch.tensor([-1.0, 1.0], dtype=torch.float64), torch.ones(2, 1, dtype=torch.float64)
    token, _ = grpo_loss(logp, old, adv, mask)
    sequence, _ = grpo_loss(logp, old, adv, mask, importance_sampling_level="sequence")
    assert float(token) == float(sequence)
    capped, _ = grpo_loss(logp, old, adv, mask, delta=1.5)   # row 0: rho = e^0.8 > 1.5 with A < 0
    assert float(capped) == pytest.approx(0.5 * (1.5 - np.exp(-0.8)), rel=1e-12)
    with pytest.raises(ValueError, match="importance_sampling_level"):
        grpo_loss(logp, old, adv, mask, importance_sampling_level="answer")
    with pytest.raises(ValueError, match="delta"):
        grpo_loss(logp, old, adv, mask, delta=1.0)
