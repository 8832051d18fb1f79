"""rl4llm: the library behind "RL for LLMs, from softmax to GRPO".

Every formula of the book lives here once, is tested in ``tests/`` and is imported by the
chapters in ``book/``. Each function's docstring names the chapter that derives it.
"""
from .toy import CORRECT, LOGITS, PROMPT, REWARDS, VOCAB
from .distributions import (cross_entropy, decode_probs, entropy, kl_divergence, log_softmax, onehot,
                            sequence_probability, softmax)
from .gradients import (expected_reward, policy_gradient, policy_gradient_step, score, sft_gradient,
                        sft_step)
from .verifier import EOS_MARKER, addition_reward
from .grpo import grpo_loss, group_advantages
# Part III: reuse and credit
from .reuse import (clip_binds, clip_fraction, clipped_objective, clipped_objective_grad, clipped_surrogate,
                    clipped_surrogate_gradient, conjugate_gradient, fisher_matrix, importance_ratios,
                    importance_weighted_jhat_distribution, importance_weighted_variance, policy_kl,
                    ppo_inner_steps, trust_region_step, with_correct_mass)
from .credit import discounted_returns, gae, group_baseline_advantages, td_errors
