"""The leash on a policy step: the KL between two policies, the Fisher matrix and TRPO's step (chapter 11).

TRPO maximises the surrogate's linear model subject to KL(pi_old || pi_new) <= delta: a natural-gradient
direction from conjugate gradients on the Fisher matrix, scaled to the KL's quadratic model, then a line
search on the exact KL.
"""
from __future__ import annotations

import numpy as np

from .._checks import (as_float_array, at_least, checked, in_range, logits_vector, positive_real,
                      same_shapes)
from .distributions import kl_divergence, softmax

def policy_kl(p_logits, q_logits) -> float:
    """KL(softmax(p) || softmax(q)) between two tabular policies given by their logits (chapter 11).

    The trust region measures KL(pi_old || pi_new): ``policy_kl(old_logits, new_logits)``.
    """
    return kl_divergence(softmax(logits_vector(p_logits, "p_logits")), softmax(logits_vector(q_logits, "q_logits")))


def fisher_matrix(logits) -> np.ndarray:
    """Fisher information of a tabular softmax policy in its logits (chapter 11).

    F = diag(pi) - pi pi^T = E_y[score(y) score(y)^T], the curvature of the KL at
    zero step: KL(pi_z || pi_{z + d}) = (1/2) d^T F d + O(|d|^3). F is singular:
    F 1 = pi - pi (sum_y pi(y)) = 0, because adding one constant to every logit
    leaves pi unchanged. With every pi(y) > 0 that is its only null direction
    (rank n - 1), so F has no inverse, only a pseudo-inverse F^+.
    """
    pi = softmax(logits_vector(logits, "logits"))
    return np.diag(pi) - np.outer(pi, pi)


def _square_for_b(args):
    """Relation: ``matrix`` is square, with one row per entry of ``b``."""
    n = args["b"].size
    if args["matrix"].shape != (n, n):
        raise ValueError(f"matrix must be square, shaped ({n}, {n}) to match b, got {args['matrix'].shape}")


@checked(_square_for_b, matrix=as_float_array, b=as_float_array,
         iters=at_least(1), tol=positive_real)
def conjugate_gradient(matrix, b, iters: int = 10, tol: float = 1e-10) -> np.ndarray:
    """Solve matrix x = b by conjugate gradients, using only matrix @ v (chapter 11).

    TRPO never forms the Fisher matrix of a large network; it only multiplies
    by it, which is all this method needs. Started from x = 0, every iterate is
    a combination of b, A b, A^2 b, ..., so for a positive semi-definite matrix
    A and b in its range it stays in that range and converges to the
    minimum-norm solution A^+ b (the pseudo-inverse). For b outside the range
    there is no solution and the iterates blow up. ``iters`` caps the work
    (TRPO typically uses about 10).
    """
    A = matrix
    x = np.zeros_like(b)
    residual = b.copy()
    direction = residual.copy()
    rr = residual @ residual
    for _ in range(iters):
        if rr < tol:
            break
        Ad = A @ direction
        alpha = rr / (direction @ Ad)
        x += alpha * direction
        residual -= alpha * Ad
        rr_new = residual @ residual
        direction = residual + (rr_new / rr) * direction
        rr = rr_new
    return x


@checked(same_shapes("logits", "gradient"), logits=logits_vector, gradient=as_float_array, delta=positive_real,
         backtrack=in_range(0.0, 1.0, low_open=True, high_open=True), max_backtracks=at_least(0))
def trust_region_step(logits, gradient, delta: float, backtrack: float = 0.8,
                      max_backtracks: int = 10) -> dict:
    """One TRPO step on a tabular softmax policy (chapter 11).

    Maximise g^T d subject to KL(pi_z || pi_{z+d}) <= delta, approximately:
    1. natural direction s = F^+ g, with F = ``fisher_matrix`` and F^+ its
       pseudo-inverse. F is singular (F 1 = 0: shifting every logit by one
       constant leaves pi unchanged), so F s = g has a line of solutions
       s + c 1, all the same policy step; F^+ g is the one orthogonal to 1.
       Computed by conjugate gradients from s = 0 on g minus its mean (F^+
       ignores g's all-ones part, and a policy gradient has none): the
       iterates then never leave the subspace orthogonal to 1;
    2. the largest step that meets the quadratic KL model:
       d = sqrt(2 delta / s^T F s) s;
    3. line search: shrink d by ``backtrack`` until the exact KL is <= delta
       (full TRPO also requires the surrogate to improve; this checks the KL).
    Returns the new logits, the exact KL, the step fraction kept and the
    backtracks used (fraction 0 and the old logits if no step met the bound).
    """
    z, g = logits, gradient
    F = fisher_matrix(z)
    s = conjugate_gradient(F, g - g.mean(), iters=z.size)     # s = F^+ g
    curvature = float(s @ F @ s)
    if curvature <= 0:
        return {"logits": z.copy(), "kl": 0.0, "fraction": 0.0, "backtracks": 0}
    step = np.sqrt(2.0 * delta / curvature) * s
    fraction = 1.0
    for n in range(max_backtracks + 1):
        kl = policy_kl(z, z + fraction * step)
        if kl <= delta:
            return {"logits": z + fraction * step, "kl": kl,
                    "fraction": fraction, "backtracks": n}
        fraction *= backtrack
    return {"logits": z.copy(), "kl": 0.0,
            "fraction": 0.0, "backtracks": max_backtracks}
