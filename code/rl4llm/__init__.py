"""rl4llm: the library behind "RL for LLMs, from softmax to GRPO".

Every formula of the book lives here once, is tested in ``tests/`` and is imported by the
chapters in ``book/``. Each function's docstring names the chapter that derives it. The folders are
layers that import one way (``tests/test_layers.py``): ``toy`` (the toys and the verifier) <- ``math``
(the formulas) <- ``studies`` (what the chapters chart); ``math`` <- ``llm`` (the GRPO loss, the tiny
GPT, its task, warm start and trainer) <- ``trl`` (the bridge to TRL); ``viz`` (charts) and the course
machinery (``exercises``, ``course``) sit on top, and nothing below imports them.

This module re-exports the public names, so ``from rl4llm import softmax`` works whatever folder a
name lives in. Only the numpy layers load with the package: the names that need PyTorch load their
module on first use (PEP 562), so chapters 1-12 never pay for importing torch, and ``pip install
rl4llm`` without the ``torch`` extra is enough for them.
"""
import importlib
# Part I: from softmax to SFT (chapters 1-5)
from .toy.five_token import CORRECT, LOGITS, PROMPT, REWARDS, VOCAB
from .math.distributions import (cross_entropy, decode_probs, entropy, kl_divergence, log_softmax, onehot,
                            sequence_probability, softmax)
from .math.gradients import (expected_reward, policy_gradient, policy_gradient_step, score, sft_gradient,
                        sft_step)
from .math.two_step import first_token_rewards, string_probabilities, training_curves
from .math.two_step import answer_probabilities as two_step_answer_probs
from .math.kl_fits import discretised_peak, fit_single_peak, kl_grid, two_peaked
from .toy.verifier import EOS_MARKER, addition_reward

# Part II: the RL core (chapters 6-9)
from .math.estimators import (estimator_variance, expected_group_gradient, expected_policy_after_step,
                         group_mean_baseline_gradient, jhat_distribution, optimal_baseline, sample_groups)
from .studies.onpolicy import on_policy_loop, on_policy_runs
from .math.statistics import (holm, holm_verdicts, noise_floor, paired_noise_floor, paired_verdict, seeds_needed,
                              standard_error, verdict, welch_p_value)

# Part III: reuse, trust regions, credit, GRPO on the toy and its choices (chapters 10-14), the summary (chapter 21)
from .math.importance_sampling import (drift_case, drift_variance_ratio, importance_ratios,
                                  importance_weighted_jhat_distribution, importance_weighted_jhat_samples,
                                  importance_weighted_variance, sequence_ratio, with_correct_mass)
from .math.trust_region import conjugate_gradient, fisher_matrix, policy_kl, trust_region_step
from .math.ppo_clip import (TOY_GROUP, TOY_GROUP_ADVANTAGES, clip_binds, clip_fraction, clipped_objective,
                       clipped_objective_grad, clipped_surrogate, clipped_surrogate_gradient, ppo_inner_steps)
from .math.credit import (advantage_table, discounted_returns, gae, group_advantages, group_baseline_advantages,
                          td_errors)
# Part III (torch) and Part IV: loaded on first use (PEP 562), see the module docstring
from .llm.tasks import AdditionTask, CharTokenizer, addition_prompt
# Part V: the arithmetic of a real run (chapter 19), numpy only
from .math.memory import kv_bytes_per_token, memory_budget
from .math.step_time import generation_seconds, schedule, training_seconds, weight_sync_seconds

_LAZY = {
    "llm.grpo": ("cispo_loss", "grpo_loss"),
    "llm.grpo_toys": ("aggregation_weights", "k3_loss_gradient", "two_step_inner_steps"),
    "studies.toy_grpo": ("entropy_gradient", "forward_kl_gradient", "grpo_slider_run", "grpo_toy_run",
                         "reverse_kl_gradient", "run_over_seeds"),
    "studies.method_runs": ("METHODS", "method_curves", "run_exact_gradient", "run_grpo", "run_ppo", "run_reinforce",
                    "run_reinforce_baseline", "run_sft", "run_trpo"),
    "llm.model": ("GPT", "GPTConfig", "Rollout", "completion_logprobs", "sample", "to_gpt2"),
    "llm.evaluation": ("greedy_accuracy",),
    "llm.portability": ("print_claims",),
    "llm.trainer": ("Batch", "GRPOConfig", "GRPOTrainer", "compare_over_seeds", "resolve_device", "torch_threads"),
    "llm.fast_trainer": ("FastGRPOTrainer",),
    "llm.kl_placement": ("KLInLoss", "KLInReward"),
    "llm.ratios": ("ImportanceRatio",),
    "llm.entropy": ("EntropyControl",),
    "llm.entropy_study": ("entropy_runs",),
    "llm.samplers": ("PolicySampler", "RolloutEngineSampler"),
    "llm.warmstart": ("WarmStart", "WarmStartConfig", "sft_loss", "warm_start"),
    "trl.knobs": ("cispo_trl_kwargs", "knob_table", "trl_config_kwargs"),
    "trl.parity": ("compare_losses",),
    # Part V: every estimator against the exact gradient, and where the KL goes (chapter 17)
    "studies.estimator_bias": ("ADVANTAGES", "estimator_moments", "one_step_task", "sample_estimates", "two_step_task"),
    "studies.kl_penalties": ("LEASHES", "kl_estimator_moments", "kl_estimators", "leash_exact_run", "leash_gradient",
                   "leash_run"),
    "studies.length_drift": ("length_drift_exact", "length_drift_run", "soft_overlong_penalty"),
    "studies.sequence_kl": ("sequence_kl_gradients",),
    # Part V: sequence-level ratios, dynamic sampling and pass@k (chapter 18)
    "studies.sequence_ratios": ("WEIGHTINGS", "chain_sequences", "reweighted_moments", "sample_chain", "sample_reweighted",
                        "two_step_sequences"),
    "studies.dynamic_sampling": ("draws_per_kept_group", "dynamic_sampling_exact", "dynamic_sampling_run",
                         "flat_probability", "groups_drawn_per_kept_group"),
    "math.pass_at_k": ("pass_at_k", "pass_at_k_estimate", "pass_at_k_estimate_mean", "pass_at_k_over_prompts"),
    # Part V: when the sampler is not the trainer (chapter 20)
    "llm.rollout_correction": ("IMPORTANCE_SAMPLING_MODES", "importance_weights", "off_policy_mask", "sampler_gap"),
    "llm.rollout_engine": ("RolloutEngine",),
    "llm.sampler_study": ("lognormal_weight_moments",),
}
_LAZY_NAMES = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str):
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(f".{_LAZY_NAMES[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rl4llm' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_NAMES))
