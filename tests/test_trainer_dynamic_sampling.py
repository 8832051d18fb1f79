"""DAPO's dynamic sampling in the trainer of chapter 15 (``GRPOConfig.refill_batches``, chapter 18): verl's rule
(rounds of new prompts until ``prompts_per_step`` informative groups, the first of them trained on, a stop at the
cap), its accounting, determinism and validation; and the option off as it was."""
import numpy as np
import pytest
import torch

from rl4llm.llm.model import GPT, GPTConfig
from rl4llm.llm.samplers import RolloutEngineSampler
from rl4llm.llm.tasks import AdditionTask
from rl4llm.llm.trainer import GRPOConfig, GRPOTrainer, prompt_indices
from rl4llm.llm.warmstart import warm_start
from rl4llm.math.credit import group_advantages

TASK = AdditionTask(seed=0)
P, G = 16, 8
SMALL = {"prompts_per_step": P, "group_size": G, "eval_every": 50, "lr": 1e-3, "warmup_steps": 2, "log_kl": False,
         "device": "cpu"}


@pytest.fixture(scope="module")
def warm():
    return warm_start().model


def trainer(model, steps=3, **overrides):
    return GRPOTrainer(model, TASK, GRPOConfig(**{**SMALL, "steps": steps, "drop_zero_variance": True,
                                                  "refill_batches": 4, **overrides}))


def round_prompts(seed, rounds):
    """The prompt ids of generation rounds ``rounds``, each repeated G times, as the trainer lays them out."""
    chosen = np.concatenate([prompt_indices(len(TASK.train_pairs), P, seed, r) for r in rounds])
    return torch.as_tensor(np.repeat(TASK.train_prompt_ids[chosen], G, axis=0))


def test_refill_trains_on_the_first_prompts_per_step_informative_groups(warm):
    """The warm start leaves about half of the groups flat, so one round of 16 prompts falls short: the batch
    holds the rounds drawn (the next prompts of the epoch), every sampled answer, and in the loss exactly the
    first 16 informative groups in the order drawn, with their own group advantages."""
    run = trainer(warm)
    batch = run.dynamic_rollout()
    rounds = batch.gen_batches
    assert rounds >= 2 and len(batch.rollout.tokens) == rounds * P * G
    torch.testing.assert_close(batch.rollout.tokens[:, :run.prompt_len], round_prompts(0, range(rounds)))
    informative = (batch.rewards.amax(dim=1) > batch.rewards.amin(dim=1)).numpy()
    assert informative[:(rounds - 1) * P].sum() < P <= informative.sum()      # the last round was the first enough
    first = np.flatnonzero(informative)[:P]
    expected = np.zeros(rounds * P, dtype=bool)
    expected[first] = True
    assert torch.equal(batch.keep, torch.as_tensor(np.repeat(expected, G)))
    assert int(batch.keep.sum()) == P * G == len(batch.tokens) == len(batch.advantages)
    np.testing.assert_allclose(batch.advantages.view(-1, G).numpy(),
                               group_advantages(batch.rewards[first].numpy()), atol=1e-6)


def test_no_prompt_repeats_within_a_step_inside_an_epoch_and_the_next_step_draws_on(warm):
    """Rounds are consecutive chunks of the shuffled epoch, so a step's prompts are distinct while its rounds
    stay inside one epoch, and the next step starts at the first round not yet drawn (verl's dataloader)."""
    n, seed = len(TASK.train_pairs), 3
    drawn = np.concatenate([prompt_indices(n, P, seed, r) for r in range(5)])
    assert len(set(drawn.tolist())) == 5 * P
    epoch = np.concatenate([prompt_indices(n, P, seed, r) for r in range(n // P)])
    assert len(set(epoch.tolist())) == (n // P) * P
    run = trainer(warm, steps=1, seed=seed).train(progress=False)
    assert run.gen_batches == run.metrics["num_gen_batches"][0]
    torch.testing.assert_close(run.rollout().rollout.tokens[:, :run.prompt_len],
                               round_prompts(seed, [run.gen_batches]))


def test_accounting_determinism_and_resume(warm, tmp_path):
    """Each step logs its rounds (verl's num_gen_batches) and every answer and token they sampled; the rounds add
    up to the trainer's count, from which the next step draws; two runs of one seed are identical, and a run
    resumed from a checkpoint continues the uninterrupted one bitwise."""
    whole = trainer(warm, steps=4).train(progress=False)
    rounds = whole.metrics["num_gen_batches"]
    assert min(rounds) >= 2 and whole.gen_batches == sum(rounds)
    assert whole.metrics["answers"] == [r * P * G for r in rounds]
    assert all(t > a for t, a in zip(whole.metrics["tokens"], whole.metrics["answers"]))   # >= 1 token an answer
    again = trainer(warm, steps=4).train(progress=False)
    assert again.metrics["num_gen_batches"] == rounds and again.metrics["loss"] == whole.metrics["loss"]
    assert all(torch.equal(p, q) for p, q in zip(whole.policy.parameters(), again.policy.parameters()))
    path = str(tmp_path / "dyn.pt")
    trainer(warm, steps=4).train(2, progress=False).save(path)
    resumed = GRPOTrainer.load(path).train(progress=False)
    assert resumed.gen_batches == whole.gen_batches and resumed.metrics["loss"] == whole.metrics["loss"]
    assert all(torch.equal(p, q) for p, q in zip(whole.policy.parameters(), resumed.policy.parameters()))
    other = trainer(warm, steps=4, seed=1).train(progress=False)
    assert other.metrics["loss"] != whole.metrics["loss"]


def test_at_the_cap_training_stops_as_verls_does():
    """An untrained model gets every sum wrong, so every group is flat: after 1 + refill_batches rounds the step
    stops with RuntimeError (verl raises at max_num_gen_batches), before any update or count moves."""
    run = GRPOTrainer(GPT(GPTConfig()), TASK, GRPOConfig(**SMALL, steps=2, drop_zero_variance=True,
                                                         refill_batches=2))
    before = [p.detach().clone() for p in run.policy.parameters()]
    with pytest.raises(RuntimeError, match="3 rounds of 16 prompts held fewer than 16 informative groups"):
        run.step()
    assert run.step_count == 0 and run.gen_batches == 0 and run.metrics["loss"] == []
    assert all(torch.equal(p, q) for p, q in zip(before, run.policy.parameters()))


def test_the_option_off_is_the_plain_loop(warm):
    """refill_batches=0 (the default): one round a step, the step's own prompts, the counts as before."""
    run = GRPOTrainer(warm, TASK, GRPOConfig(**SMALL, steps=3, drop_zero_variance=True)).train(progress=False)
    assert run.metrics["num_gen_batches"] == [1, 1, 1] and run.metrics["answers"] == [P * G] * 3
    assert run.gen_batches == run.step_count == 3
    batch = run.rollout()
    torch.testing.assert_close(batch.rollout.tokens[:, :run.prompt_len], round_prompts(0, [3]))


@pytest.mark.parametrize("fields, message", [
    ({"refill_batches": -1, "drop_zero_variance": True}, "refill_batches must be an integer >= 0"),
    ({"refill_batches": 1.5, "drop_zero_variance": True}, "refill_batches must be an integer >= 0"),
    ({"refill_batches": 2}, "refill_batches must be 0 unless drop_zero_variance=True"),
])
def test_validation(fields, message):
    with pytest.raises(ValueError, match=message):
        GRPOConfig(**fields)


def test_a_rollout_engine_is_refused():
    config = GRPOConfig(**SMALL, steps=1, drop_zero_variance=True, refill_batches=1)
    with pytest.raises(ValueError, match="refill_batches > 0 \\(dynamic sampling\\) needs sampler=PolicySampler"):
        GRPOTrainer(GPT(GPTConfig()), TASK, config, sampler=RolloutEngineSampler())


def test_a_budget_of_answers_stops_at_the_first_step_that_reaches_it(warm):
    """train(max_answers=...): dynamic sampling's steps cost different answers, so the budget, not the step
    count, ends the run, at the first step whose answers reach it, evaluated there."""
    run = trainer(warm, steps=10).train(progress=False, max_answers=5 * P * G)
    answers = np.cumsum(run.metrics["answers"])
    assert answers[-1] >= 5 * P * G > answers[-2] and run.evals["step"][-1] == run.step_count < 10
    with pytest.raises(ValueError, match="max_answers must be an integer >= 1"):
        trainer(warm).train(max_answers=0)


def test_trl_has_no_dynamic_sampling_so_the_bridge_refuses_it():
    """TRL 1.16 draws one batch a step and keeps flat groups in it: the bridge refuses refill_batches > 0, and
    with allow_unsupported maps the rest (one round a step, flat groups kept), as for drop_zero_variance."""
    from rl4llm.trl.knobs import KNOBS, trl_config_kwargs
    config = GRPOConfig(drop_zero_variance=True, refill_batches=2)
    with pytest.raises(ValueError, match="refill_batches=2 \\(DAPO's dynamic sampling: drop flat groups and refill"):
        trl_config_kwargs(config)
    assert KNOBS["refill_batches"] == (None, 18)
    assert trl_config_kwargs(config, allow_unsupported=True) == trl_config_kwargs(GRPOConfig(), allow_unsupported=True)
