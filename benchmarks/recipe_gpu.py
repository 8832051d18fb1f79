"""Chapter 19's one-GPU recipes, their training side run on a GPU: TRL 1.16's own step, peak memory and seconds.

    python benchmarks/recipe_gpu.py [--recipes 0.5B-full 0.5B-lora 1.5B-full 1.5B-lora 7B-lora] [--record PATH]

For each one-GPU colocated recipe of ``rl4llm.trl.recipes``, TRL's ``GRPOTrainer`` runs two optimizer steps with
the recipe's own ``GRPOConfig`` arguments (``Recipe.trl_kwargs``: micro-batch, accumulation, G, T, bf16,
activation checkpointing) and, for LoRA, its ``LoraConfig``, on a model of the recipe's published shape
(``transformers``' ``Qwen2ForCausalLM`` from the shape's config.json numbers, its parameter count checked against
the shape's) with random weights: the weights' values change neither the bytes nor the seconds, and nothing is
downloaded. The model is loaded as TRL loads it (float32 for full fine-tuning, bf16 for LoRA: ``model_init_kwargs``).

What is not TRL's own: vLLM is not installed where this runs, so ``use_vllm`` is off and generation is replaced by
completions of exactly T random tokens after prompts of ``PROMPT_LENGTH`` (every completion runs to the cap, as
the recipe counts; no padding, so attention gets no mask), with random advantages; the old log-probs, which TRL
computes for its vLLM correction, are computed by TRL's own ``_get_per_token_logps_and_entropies`` in that
replacement, as TRL does. Everything after it is TRL's step: its loss through the fused log-prob head, activation
checkpointing, bf16 autocast, AdamW. The colocated engine's share is not measured (its count is the recipe's
``engine_bytes``).

Prints, per recipe: the count of one training GPU's bytes (``Recipe.train_bytes``) against the peak
``torch.cuda.max_memory_allocated`` up to the end of the last optimizer step (the first step has no AdamW moments
yet; the record keeps the peak after each step), the allocator's reserved peak, and
``recipe_seconds``' training seconds (40% of an H100's bf16 peak; the H200's peak is the same) against the
second step's measured seconds. The LAST line is the record as one JSON object; ``--record`` also writes it.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
import traceback
from pathlib import Path

import torch

from rl4llm.math.memory import QWEN25_0_5B, QWEN25_1_5B, QWEN25_7B, ModelShape, parameter_count
from rl4llm.trl.recipes import LORA_ALPHA, LORA_RANK, PROMPT_LENGTH, UTILISATION, recipe, recipe_seconds

SHAPES = {"0.5B": QWEN25_0_5B, "1.5B": QWEN25_1_5B, "7B": QWEN25_7B}
#: The one-GPU recipes that exist (7B full fine-tuning fits no 80 GB GPU), smallest first.
NAMES = ("0.5B-full", "0.5B-lora", "1.5B-full", "1.5B-lora", "7B-lora")


def qwen2(shape: ModelShape, dtype: torch.dtype, device: str):
    """A Qwen2 model of ``shape``, random weights, built on ``device`` in ``dtype``."""
    from transformers import AutoModelForCausalLM, Qwen2Config
    config = Qwen2Config(vocab_size=shape.vocab_size, hidden_size=shape.hidden_size,
                         intermediate_size=shape.intermediate_size, num_hidden_layers=shape.n_layers,
                         num_attention_heads=shape.n_heads, num_key_value_heads=shape.n_kv_heads,
                         tie_word_embeddings=shape.tied_embeddings, max_position_embeddings=32768,
                         rope_theta=1e6, rms_norm_eps=1e-6)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    count = sum(p.numel() for p in model.parameters())
    if count != shape.n_params:
        raise RuntimeError(f"{shape.name}: {count} parameters built, the shape says {shape.n_params:.0f}")
    return model


def tokenizer():
    """A two-token tokenizer: TRL needs a pad and an EOS id; the completions never go through it."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast
    backend = Tokenizer(models.WordLevel({"<pad>": 0, "<eos>": 1}, unk_token="<pad>"))
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<eos>", pad_token="<pad>")


def fixed_length_rollouts(trainer, vocab: int, prompt_length: int, completion_length: int):
    """Replaces ``trainer._generate_and_score_completions``: prompts and completions of fixed lengths, random
    tokens and advantages, and the old log-probs by TRL's own pass (micro-batch by micro-batch, as TRL does)."""
    def generate(inputs):
        n, device = len(inputs), trainer.accelerator.device
        prompt_ids = torch.randint(2, vocab, (n, prompt_length), device=device)
        completion_ids = torch.randint(2, vocab, (n, completion_length), device=device)
        prompt_mask, completion_mask = torch.ones_like(prompt_ids), torch.ones_like(completion_ids)
        with torch.no_grad():
            old, _, _ = trainer._get_per_token_logps_and_entropies(
                trainer.model, torch.cat([prompt_ids, completion_ids], 1), torch.cat([prompt_mask, completion_mask], 1),
                completion_length, batch_size=trainer.args.per_device_train_batch_size)
        return {"prompt_ids": prompt_ids, "prompt_mask": prompt_mask, "completion_ids": completion_ids,
                "completion_mask": completion_mask, "advantages": torch.randn(n, device=device),
                "num_items_in_batch": completion_mask.sum(), "old_per_token_logps": old}
    return generate


def measure(name: str, steps: int = 2, smoke: bool = False) -> dict:
    """``steps`` optimizer steps of one recipe: the peak bytes and the seconds after each."""
    import tempfile

    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    size, tuning = name.split("-")
    r = recipe(SHAPES[size], 1, tuning, "colocate")
    shape, prompt_length, completion_length = r.model, PROMPT_LENGTH, r.completion_length
    cuda = torch.cuda.is_available()
    if smoke:           # a CPU check of the plumbing: a 2-layer model of the same kind, short sequences
        shape = ModelShape("smoke", 0, 2, 64, 2, 16, 1000, 4, 128, "swiglu", shape.tied_embeddings, True)
        shape = dataclasses.replace(shape, n_params=sum(parameter_count(shape).values()))
        prompt_length, completion_length = 8, 16
    kwargs = {k: v for k, v in r.trl_kwargs("unused").items() if not k.startswith("vllm") and k != "output_dir"}
    kwargs |= {"use_vllm": False, "max_completion_length": completion_length, "max_steps": steps,
               "logging_steps": 1, "save_strategy": "no", "report_to": "none", "disable_tqdm": True,
               "use_cpu": not cuda, "bf16": cuda}
    model = qwen2(shape, torch.float32 if tuning == "full" else torch.bfloat16, "cuda" if cuda else "cpu")
    peft = None
    if tuning == "lora":
        from peft import LoraConfig
        peft = LoraConfig(r=LORA_RANK, lora_alpha=LORA_ALPHA, target_modules="all-linear")
    clock = {"begin": [], "end": [], "peak_allocated": [], "peak_reserved": []}

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if cuda:
                torch.cuda.synchronize()
            clock["begin"].append(time.perf_counter())

        def on_step_end(self, args, state, control, **kw):
            if cuda:
                torch.cuda.synchronize()
                clock["peak_allocated"].append(torch.cuda.max_memory_allocated())
                clock["peak_reserved"].append(torch.cuda.max_memory_reserved())
            clock["end"].append(time.perf_counter())

    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(output_dir=out, **kwargs)
        sequences = r.micro_batch * r.accumulation
        data = Dataset.from_dict({"prompt": ["x"] * (sequences // r.group_size * (steps + 1))})
        trainer = GRPOTrainer(model=model, reward_funcs=lambda completions, **kw: [0.0] * len(completions),
                              args=args, train_dataset=data, processing_class=tokenizer(), peft_config=peft,
                              callbacks=[Clock()])
        trainer._generate_and_score_completions = fixed_length_rollouts(trainer, shape.vocab_size, prompt_length,
                                                                        completion_length)
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        trainer.train()
    seconds = [e - b for b, e in zip(clock["begin"], clock["end"])]
    predicted = recipe_seconds(r)["train"]
    row = {"recipe": name, "model": r.model.name, "tuning": tuning, "completion_length": r.completion_length,
           "micro_batch": r.micro_batch, "accumulation": r.accumulation, "sequences_a_step": sequences,
           "count_train_bytes": r.train_bytes, "count_train_seconds": predicted, "step_seconds": seconds,
           "peak_allocated_bytes": clock["peak_allocated"], "peak_reserved_bytes": clock["peak_reserved"],
           "loss": [h.get("loss") for h in trainer.state.log_history if "loss" in h]}
    if cuda:
        row["utilisation"] = UTILISATION * predicted / seconds[-1]
        print(f"{name}: count {r.train_bytes / 1e9:.1f} GB, peak allocated in the last step "
              f"{clock['peak_allocated'][-1] / 1e9:.1f} GB ({clock['peak_allocated'][-1] / r.train_bytes:.2f} of the "
              f"count; reserved {clock['peak_reserved'][-1] / 1e9:.1f} GB); train seconds: count {predicted:.1f} s at "
              f"{UTILISATION:.0%} of the peak, measured {seconds[-1]:.1f} s (step 1: {seconds[0]:.1f} s), so "
              f"{row['utilisation']:.0%} of the peak", flush=True)
    else:
        print(f"{name} (smoke, CPU): {len(seconds)} steps, {seconds}, losses {row['loss']}", flush=True)
    del trainer, model
    if cuda:
        torch.cuda.empty_cache()
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recipes", nargs="+", default=list(NAMES), choices=NAMES)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--record", type=Path)
    parser.add_argument("--smoke", action="store_true", help="a tiny model on the CPU: checks the plumbing only")
    args = parser.parse_args()
    record = {"date": time.strftime("%Y-%m-%d"),
              "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
              "torch": torch.__version__, "runs": []}
    import transformers
    import trl
    record |= {"transformers": transformers.__version__, "trl": trl.__version__}
    for name in args.recipes:
        try:
            record["runs"].append(measure(name, args.steps, args.smoke))
        except Exception as error:                       # one recipe's failure must not lose the others' figures
            traceback.print_exc()
            record["runs"].append({"recipe": name, "error": repr(error)})
        if args.record:
            args.record.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record))


if __name__ == "__main__":
    main()
