"""Adapters that let TRL see the book's tokenizer and tiny GPT as its own (chapter 16).

What that takes: the character tokenizer as a transformers tokenizer
(:func:`char_tokenizer_for_transformers`), the GPT as a ``GPT2LMHeadModel`` with our special ids
(:func:`trl_policy`), and :func:`quiet`, which silences transformers' and TRL's warnings, log lines
and progress bars. ``transformers`` and ``tokenizers`` are imported inside the functions.
"""
from __future__ import annotations

import contextlib
import warnings

import torch

from .._checks import checked, instance_of
from ..llm.model import GPT, to_gpt2
from ..llm.tasks import CharTokenizer


def vocab_matches(tokenizer: str | None = "tokenizer"):
    """Relation: the ``model``'s vocab_size is the size of the (checked) CharTokenizer ``tokenizer``, or of
    the addition tokenizer ``CharTokenizer()`` when ``tokenizer`` is None."""
    def relation(args):
        size = len(args[tokenizer]) if tokenizer is not None else len(CharTokenizer())
        if args["model"].config.vocab_size != size:
            raise ValueError(f"model must have the tokenizer's vocab_size {size}, got {args['model'].config.vocab_size}")
    return relation


@checked(tokenizer=instance_of(CharTokenizer))
def char_tokenizer_for_transformers(tokenizer: CharTokenizer):
    """Our character tokenizer as a transformers ``PreTrainedTokenizerFast`` (TRL needs one).

    Same ids as ``tokenizer``: one token per character, ``<eos>`` and ``<pad>`` one token each.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(tokenizer.vocab)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex("<eos>|<pad>|."), behavior="isolated")
    backend.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<eos>", pad_token="<pad>")


@checked(vocab_matches(), tokenizer=instance_of(CharTokenizer))
def trl_policy(model: GPT, tokenizer: CharTokenizer, directory: str | None = None):
    """``model`` as a ``GPT2LMHeadModel`` ready for TRL's ``GRPOTrainer`` (chapter 16).

    :func:`rl4llm.llm.model.to_gpt2` with our EOS and PAD ids, and the generation config pointed at
    them too (GPT-2's default id 50256 is outside this vocabulary; TRL stops sampling at every EOS
    id the generation config declares), no BOS. With ``directory``, the model is also saved there
    and its ``_name_or_path`` set to it: with ``beta > 0`` TRL builds its frozen reference model by
    loading ``_name_or_path``, which an in-memory model does not have. Under several processes
    every process must pass the same ``directory``: only rank 0 writes it.
    """
    hf = to_gpt2(model, eos_id=tokenizer.eos_id, pad_id=tokenizer.pad_id).train()
    hf.generation_config.eos_token_id = tokenizer.eos_id
    hf.generation_config.pad_token_id = tokenizer.pad_id
    hf.generation_config.bos_token_id = None
    if directory is not None:
        with quiet():
            hf.save_pretrained(directory)       # under torch.distributed only rank 0 writes
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.barrier()         # so the others wait, and read the same directory
        hf.config._name_or_path = str(directory)
    return hf


@contextlib.contextmanager
def quiet():
    """Silence transformers/TRL warnings, log lines and progress bars inside the block."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
