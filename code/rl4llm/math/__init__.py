"""The formulas: distributions, gradients, estimators, importance sampling, trust regions, clipping, credit, statistics, pass@k, the loss types' weights, memory and time arithmetic (numpy only)."""
