"""The exact and Monte Carlo studies the chapters chart, built on the toys and the formulas (numpy only)."""
