"""The bridge to Hugging Face TRL: adapters, the knob table, parity checks and runs (PyTorch, transformers, TRL)."""
