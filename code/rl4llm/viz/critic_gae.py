"""Chapter 12's figures and charts: The critic, GAE, and why GRPO does without them
(``book/12_critic_gae.ipynb``)."""
from __future__ import annotations

import numpy as np

from .. import advantage_table
from ..math.credit import EXAMPLE_REWARDS, EXAMPLE_VALUES
from .charts import Declared, Slider, line_chart
from .style import PALETTE


#: Chapter 12: lambda from 0 to 1 and gamma upward from 0.05 to 1, both in steps of 0.025.
GAE = (Slider("lam", "λ", 0.0, 1.0, 0.025, 0.5, fmt=".3f"), Slider("gamma", "γ", 0.05, 1.0, 0.025, 1.0, fmt=".3f"))


def gae_curves(lam: float, gamma: float) -> np.ndarray:
    """Chapter 12's curves over the example's steps: the advantage at lambda = 0, the slider's lambda and
    lambda = 1 (``advantage_table``)."""
    return advantage_table(EXAMPLE_REWARDS, EXAMPLE_VALUES, gamma, lams=(0.0, lam, 1.0))["advantages"]


def gae_chart():
    """Chapter 12: the credit GAE gives each step of the example episode, on the whole grid of ``GAE``."""
    steps = np.arange(EXAMPLE_REWARDS.size, dtype=float)
    return line_chart(gae_curves, GAE, x=steps, series=["λ = 0 (TD error)", "λ at the slider", "λ = 1 (Monte Carlo)"],
                      xlabel="step t of the episode", ylabel="advantage Â_t",
                      notes=lambda lam, gamma: {"step 0 gets": float(gae_curves(lam, gamma)[1, 0])},
                      headline="λ slides the early steps' credit from TD to Monte Carlo",
                      colors=[PALETTE["sky"], PALETTE["blue"], PALETTE["orange"]],
                      styles=["dotted", "solid", "dashed"], ydomain=[-0.7, 1.0])


#: The chapter's chart: GAE's advantages at lambda between 0 and 1 (chapter 12); it replaced FloatSliders 0..1
#: and 0.05..1 step 0.05.
CHARTS = (Declared("gae", gae_chart,
                   lambda lam, gamma: (np.arange(3), advantage_table(EXAMPLE_REWARDS, EXAMPLE_VALUES, gamma,
                                                                     lams=(0.0, lam, 1.0))["advantages"]),
                   list(GAE), replaced={"lam": 21, "gamma": 20}),)
