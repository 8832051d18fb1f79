"""Input validation shared by every module.

Every public function of :mod:`rl4llm` validates its inputs with these helpers, so a bad input
always raises a :class:`ValueError` that names the parameter and its valid range, never a NaN
or a silent clamp.
"""
from __future__ import annotations

import functools
import inspect
import math
import numbers
import sys

import numpy as np

#: Tolerance for "probabilities sum to 1".
PROB_SUM_TOL = 1e-9


def as_float_array(x, name: str, *, ndim_min: int = 1) -> np.ndarray:
    """Return ``x`` as a float64 array, rejecting non-numeric, empty or non-finite input."""
    try:
        if np.asarray(x).dtype.kind in "US":  # text is not a number, even if it parses as one
            raise TypeError(f"{name} holds non-numeric entries")
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as err:
        raise ValueError(f"{name} must be an array of real numbers, got {x!r}") from err
    if arr.ndim < ndim_min:
        raise ValueError(f"{name} must have at least {ndim_min} dimension(s), got shape {arr.shape}")
    if arr.size == 0 or (arr.ndim >= 1 and arr.shape[-1] == 0):
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf), got {x!r}")
    return arr


def logits_array(logits, name: str = "logits") -> np.ndarray:
    """Finite logits with a non-empty last axis."""
    return as_float_array(logits, name)


def reward_array(rewards, name: str = "rewards") -> np.ndarray:
    """Finite rewards (one per answer, or a batch of groups on the last axis)."""
    return as_float_array(rewards, name)


def logits_vector(logits, name: str = "logits") -> np.ndarray:
    """Finite logits of a single distribution: a non-empty 1-D vector."""
    z = logits_array(logits, name)
    if z.ndim != 1:
        raise ValueError(f"{name} must be a 1-D vector of logits, got shape {z.shape}")
    return z


def probability_array(p, name: str = "p") -> np.ndarray:
    """A probability vector (or a batch of them on the last axis): entries >= 0, summing to 1."""
    arr = as_float_array(p, name)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative (probabilities in [0, 1]), got {p!r}")
    sums = arr.sum(axis=-1)
    if np.any(np.abs(sums - 1.0) > PROB_SUM_TOL):
        raise ValueError(f"{name} must sum to 1 (within {PROB_SUM_TOL:g}) over the last axis, got sum {sums!r}")
    return arr


def scalar_or_array(x: np.ndarray):
    """The library's output convention: a 0-d result as a Python float, anything else as the array."""
    return float(x) if x.ndim == 0 else x


def is_tensor(x) -> bool:
    """Whether ``x`` is a torch tensor, asked without importing torch (no tensor exists before torch is)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def tensor(x, name: str):
    """Rule: a torch tensor."""
    if not is_tensor(x):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x


def reward_groups(rewards, name: str = "rewards"):
    """Rule: finite rewards shaped (..., G), G >= 1: a torch tensor (as float) or anything numpy reads
    (as a float64 array)."""
    if not is_tensor(rewards):
        return as_float_array(rewards, name)
    r = rewards if rewards.is_floating_point() else rewards.float()
    if r.dim() < 1 or r.shape[-1] < 1:
        raise ValueError(f"{name} must be shaped (..., G) with G >= 1, got shape {tuple(r.shape)}")
    if not bool(r.isfinite().all()):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return r


def std_ddof(ddof, name: str = "ddof") -> int:
    """Rule: the delta degrees of freedom of a group's std, 0 (population, the book's) or 1 (sample, TRL's)."""
    if isinstance(ddof, bool) or ddof not in (0, 1):
        raise ValueError(f"{name} must be 0 (population std) or 1 (sample std, as TRL), got {ddof!r}")
    return int(ddof)


def finite_real(x, name: str) -> float:
    """A finite real number (bools are rejected)."""
    if isinstance(x, bool) or not isinstance(x, (numbers.Real, np.floating, np.integer)):
        raise ValueError(f"{name} must be a finite real number, got {x!r}")
    try:
        value = float(x)
    except OverflowError as err:  # a Python int beyond the float range
        raise ValueError(f"{name} must be a finite real number, got {x!r}") from err
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {x!r}")
    return value


def nonnegative_real(x, name: str) -> float:
    """Rule: a finite real number >= 0."""
    value = finite_real(x, name)
    if value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {x!r}")
    return value


def positive_real(x, name: str) -> float:
    """A finite real number > 0."""
    value = finite_real(x, name)
    if value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {x!r}")
    return value


def real_in_range(x, name: str, low: float, high: float, *, low_open: bool = False,
                  high_open: bool = False) -> float:
    """A finite real number in the interval [low, high], either end optionally open."""
    value = finite_real(x, name)
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if too_low or too_high:
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{name} must be in {interval}, got {x!r}")
    return value


def flag(x, name: str) -> bool:
    """Rule: True or False (a switch; 0, 1 and other truthy values are refused)."""
    if not isinstance(x, bool):
        raise ValueError(f"{name} must be True or False, got {x!r}")
    return x


def integer_at_least(x, name: str, minimum: int) -> int:
    """An integer (Python or numpy, not bool, not float) >= minimum."""
    if isinstance(x, bool) or not isinstance(x, (numbers.Integral, np.integer)):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")
    if x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")
    return int(x)


def integer_in_range(low: int, high: int):
    """Rule: an integer (Python or numpy, not bool, not float) in [low, high]."""
    def rule(x, name):
        if isinstance(x, bool) or not isinstance(x, (numbers.Integral, np.integer)) or not low <= x <= high:
            raise ValueError(f"{name} must be an integer in [{low}, {high}], got {x!r}")
        return int(x)
    return rule


def index_in_range(i, name: str, size: int) -> int:
    """An integer index in [0, size - 1]."""
    if isinstance(i, bool) or not isinstance(i, (numbers.Integral, np.integer)) or not 0 <= i < size:
        raise ValueError(f"{name} must be an integer index in [0, {size - 1}], got {i!r}")
    return int(i)


def vector_of(rule, what: str):
    """Rule: what ``rule`` accepts (an array), 1-D; ``what`` names its entries in the message."""
    def check(x, name):
        arr = rule(x, name)
        if arr.ndim != 1:
            raise ValueError(f"{name} must be a 1-D array of {what}, got shape {arr.shape}")
        return arr
    return check


def same_shape(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str) -> None:
    """Raise unless two arrays have the same shape."""
    if a.shape != b.shape:
        raise ValueError(f"{name_a} and {name_b} must have the same shape, got {a.shape} and {b.shape}")


def seed_list(minimum: int = 1, why: str = ""):
    """Rule: seeds (integers >= 0; one seed or a sequence of them), at least ``minimum`` of them (``why``
    says why, in the message); the function receives a list of ints."""
    def rule(x, name):
        seeds = [integer_at_least(s, name, 0) for s in np.atleast_1d(np.asarray(x, dtype=object)).tolist()]
        if len(seeds) < minimum:
            raise ValueError(f"{name} must hold at least {minimum} seed(s) (integers >= 0){why}, got {x!r}")
        return seeds
    return rule


def reward_vector(rewards, size: int, name: str = "rewards") -> np.ndarray:
    """Finite rewards, one per answer: a 1-D vector of length ``size``."""
    r = as_float_array(rewards, name)
    if r.shape != (size,):
        raise ValueError(f"{name} must be a 1-D vector of length {size} (one reward per answer), got shape {r.shape}")
    return r


def one_reward_per_answer(policy: str = "logits"):
    """Relation: ``rewards`` holds one reward per answer of the (checked) array ``policy`` (its last axis)."""
    def relation(args):
        args["rewards"] = reward_vector(args["rewards"], args[policy].shape[-1])
    return relation


def generator(rng, name: str = "rng") -> np.random.Generator:
    """Rule: a numpy random generator (``np.random.default_rng(seed)``)."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"{name} must be a numpy.random.Generator (np.random.default_rng(seed)), "
                         f"got {type(rng).__name__}")
    return rng


def sample_indices(samples, size: int) -> np.ndarray:
    """Integer answer indices in [0, size - 1], shaped (..., G) with G >= 1."""
    arr = np.asarray(samples)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"samples must be an integer array of answer indices in [0, {size - 1}], "
                         f"got dtype {arr.dtype}")
    if arr.ndim < 1 or arr.shape[-1] < 1:
        raise ValueError(f"samples must have shape (..., G) with G >= 1, got shape {arr.shape}")
    if np.any(arr < 0) or np.any(arr >= size):
        raise ValueError(f"samples must be answer indices in [0, {size - 1}]")
    return arr


def checked(*relations, **rules):
    """Validate a function's arguments where they arrive, declared beside its signature.

    ``rules`` maps an argument's name to its check, ``rule(value, name) -> value`` (a helper above,
    or a range built by :func:`at_least`, :func:`in_range`, :func:`one_of`, :func:`optional`); the
    function body receives what the check returns (a float64 array for an array argument).
    ``relations`` check several arguments at once: ``relation(args)`` on the dict of the checked
    arguments (:func:`same_shapes`, :func:`clip_range`), which may fill in a default from another argument. Every check raises ``ValueError`` naming the parameter and its
    valid range, so the body trusts its inputs and reads like the formula. The undecorated function
    is ``f.unchecked``: an inner loop whose inputs were checked once where they arrived calls it.
    """
    def decorate(fn):
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            for name, rule in rules.items():
                bound.arguments[name] = rule(bound.arguments[name], name)
            for relation in relations:
                relation(bound.arguments)
            return fn(*bound.args, **bound.kwargs)

        wrapper.unchecked = fn
        return wrapper
    return decorate


def at_least(minimum: int):
    """Rule: an integer >= ``minimum``."""
    return lambda x, name: integer_at_least(x, name, minimum)


def in_range(low: float, high: float, *, low_open: bool = False, high_open: bool = False):
    """Rule: a finite real number in [low, high], either end optionally open."""
    return lambda x, name: real_in_range(x, name, low, high, low_open=low_open, high_open=high_open)


def one_of(choices, what: str = ""):
    """Rule: one of ``choices`` (``what`` says what they are, in the message)."""
    def rule(x, name):
        if isinstance(x, bool) or x not in choices:
            raise ValueError(f"{name} must be one of {tuple(choices)}{what}, got {x!r}")
        return x
    return rule


def optional(rule):
    """Rule: None, or what ``rule`` accepts."""
    return lambda x, name: None if x is None else rule(x, name)


def instance_of(*kinds):
    """Rule: an instance of one of the classes ``kinds`` (a strategy object, say, whose own fields were
    checked when it was made)."""
    def rule(x, name):
        if not isinstance(x, kinds):
            raise ValueError(f"{name} must be a {' or '.join(k.__name__ for k in kinds)}, got {x!r}")
        return x
    return rule


def same_shapes(*names: str):
    """Relation: the named (checked) array arguments share one shape."""
    def relation(args):
        for other in names[1:]:
            same_shape(args[names[0]], args[other], names[0], other)
    return relation


def eps_pair(eps_low, eps_high, name_low: str = "eps_low", name_high: str = "eps_high") -> tuple[float, float]:
    """PPO's clip range [1 - eps_low, 1 + eps_high] (chapter 11): each width in (0, 1); ``eps_high=None``
    is ``eps_low`` (a symmetric clip; DAPO's clip-higher sets it larger)."""
    low = clip_width(eps_low, name_low)
    return low, low if eps_high is None else clip_width(eps_high, name_high)


def clip_width(eps, name: str = "eps") -> float:
    """Rule: one width of PPO's clip range, in (0, 1)."""
    return real_in_range(eps, name, 0.0, 1.0, low_open=True, high_open=True)


def clip_range(low: str = "eps_low", high: str = "eps_high"):
    """Relation: the arguments ``low`` and ``high`` are a clip range (:func:`eps_pair`); the function
    receives both as floats, ``high`` filled in with ``low`` where it was None."""
    def relation(args):
        args[low], args[high] = eps_pair(args[low], args[high], low, high)
    return relation


def check_fields(obj, rules: dict, *relations) -> None:
    """Check a config's fields where the config is made: ``rules`` maps a field to its rule (as in
    :func:`checked`), ``relations`` check several fields at once; the fields keep their values."""
    values = {name: getattr(obj, name) for name in vars(obj)}
    for name, rule in rules.items():
        rule(values[name], name)
    for relation in relations:
        relation(dict(values))
