"""Shared test settings: hypothesis without deadlines (CI machines are slow and shared)."""
from hypothesis import settings

settings.register_profile("book", deadline=None, max_examples=200, derandomize=True)
settings.load_profile("book")
