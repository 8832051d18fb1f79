"""Numerical helpers shared by the tests: the independent routes against which formulas are checked."""
import numpy as np


def finite_difference(f, z, h=1e-6):
    """Central differences of a scalar function f at the vector z, one coordinate at a time."""
    z = np.asarray(z, dtype=float)
    grad = np.zeros_like(z)
    for i in range(z.size):
        e = np.zeros_like(z)
        e.flat[i] = h
        grad.flat[i] = (f(z + e) - f(z - e)) / (2 * h)
    return grad
