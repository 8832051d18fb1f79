"""The tiny language model and GRPO on it: the loss, the model and its cache, the task, warm start, the trainer and its strategies, evaluation (PyTorch)."""
