"""A tiny GPT with a KV cache, and batched sampling of G completions per prompt (chapter 15).

nanoGPT-style: a config dataclass, a forward pass that reads top to bottom. The layout is GPT-2's
(learned absolute positions, pre-norm blocks, GELU MLP, biases, tied input/output embeddings), so
:func:`to_gpt2` can copy the same weights into ``transformers``' ``GPT2LMHeadModel`` for a
like-for-like comparison with TRL.

Two functions give log-probabilities, and chapter 15's tests hold them equal:

- :func:`sample` draws completions token by token with the KV cache and records
  log pi_old(y_t | x, y_<t) of each drawn token as it goes (the "old" log-probs of GRPO);
- :func:`completion_logprobs` recomputes log pi_theta(y_t | x, y_<t) in one batched forward pass
  (the log-probs the loss differentiates).

Both read the logits at temperature T, log softmax(z / T), as the sampler draws from them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .._checks import at_least, check_fields, checked, flag, in_range
from .kv_cache import ConcatCache, LayerCache
from .prefix_sharing import next_shared_logits
from .tasks import BLOCK_SIZE, VOCAB

#: A layer's cache: :class:`~rl4llm.llm.kv_cache.ConcatCache` or :class:`~rl4llm.llm.kv_cache.LayerCache`.
KVCache = ConcatCache | LayerCache


@dataclass
class GPTConfig:
    """Sizes of the tiny GPT. The chapter's (and the benchmark's) model: 2 layers, width 64, 4 heads; its
    vocabulary and context are the addition task's (:data:`~rl4llm.llm.tasks.VOCAB`,
    :data:`~rl4llm.llm.tasks.BLOCK_SIZE`)."""
    vocab_size: int = len(VOCAB)
    block_size: int = BLOCK_SIZE
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64

    def __post_init__(self):
        check_fields(self, dict.fromkeys(("vocab_size", "block_size", "n_layer", "n_head", "n_embd"), at_least(1)),
                     _heads_split_the_width)


def _heads_split_the_width(sizes):
    """Relation: the attention heads split the width evenly (head size n_embd / n_head)."""
    if sizes["n_embd"] % sizes["n_head"]:
        raise ValueError(f"n_embd must be a multiple of n_head={sizes['n_head']}, got {sizes['n_embd']}")


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x: torch.Tensor, cache: KVCache | None) -> tuple[torch.Tensor, KVCache]:
        B, T, C = x.shape                                                  # batch, new tokens, n_embd
        q, k, v = self.c_attn(x).split(C, dim=2)                           # (B, T, C) each
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))  # (B, nh, T, hs)
        if cache is None:
            cache = ConcatCache(k, v)
        else:                                     # new queries attend to every cached key
            cache.extend(k, v)
        k, v = cache.keys, cache.values                                    # (B, nh, T_past + T, hs)
        t_past = k.shape[2] - T
        # softmax(q k^T / sqrt(hs)) v, in torch's fused kernel: query i (absolute position t_past + i)
        # may see keys 0 .. t_past + i; one new token sees every key, and without a past that is the
        # causal mask itself
        if T == 1 or cache.visible is not None:   # (a prefix tree's mask shows each position its own path)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=cache.visible)   # (B, nh, T, hs)
        elif t_past == 0:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            allowed = torch.ones(T, k.shape[2], dtype=torch.bool, device=x.device).tril(diagonal=t_past)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        y = y.transpose(1, 2).reshape(B, T, C)                             # heads side by side again
        return self.c_proj(y), cache


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor, cache: KVCache | None) -> tuple[torch.Tensor, KVCache]:
        a, cache = self.attn(self.ln_1(x), cache)
        x = x + a
        return x + self.mlp(self.ln_2(x)), cache


class GPT(nn.Module):
    """Decoder-only transformer: logits = ln_f(blocks(wte[x] + wpe[pos])) @ wte^T (chapter 15)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.h = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():   # GPT-2's scaled init of the residual projections
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear):
            nn.init.zeros_(module.bias)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx: torch.Tensor, past: list | None = None,
                positions: torch.Tensor | None = None) -> tuple[torch.Tensor, list]:
        """Logits (B, T, vocab) for tokens ``idx`` (B, T) that follow the ``past`` cache, and the cache.

        ``past`` holds one cache per layer (:mod:`rl4llm.llm.kv_cache`), extended in place by these tokens;
        without it the returned caches hold these tokens' keys and values (a :class:`ConcatCache` each).
        ``positions`` (B, T) gives each token's absolute position where they do not follow one another (a prefix
        tree's, :mod:`rl4llm.llm.prefix_tree`); by default they follow the cache, t_past .. t_past + T - 1.
        """
        if positions is None:
            t_past, T = (0 if past is None else past[0].length), idx.shape[1]
            if t_past + T > self.config.block_size:
                raise ValueError(f"sequence length must be <= block_size={self.config.block_size}, got {t_past + T}")
            positions = torch.arange(t_past, t_past + T, device=idx.device)
        x = self.wte(idx) + self.wpe(positions)                            # (B, T, n_embd)
        present = []
        for i, block in enumerate(self.h):
            x, cache = block(x, None if past is None else past[i])
            present.append(cache)
        return F.linear(self.ln_f(x), self.wte.weight), present            # (B, T, vocab)


@dataclass
class Rollout:
    """A batch of sampled completions (chapter 15).

    ``tokens`` (B, P + T): prompt then completion, PAD after EOS; ``logp`` (B, T): log-prob of each
    completion token under the sampler (0 where masked), detached; ``mask`` (B, T): 1 on completion
    tokens up to and including EOS, 0 on the padding after it; ``entropy`` (B, T): the policy's entropy
    at each drawn position (0 where no step ran), detached. Sampled with ``keep_graph=True``, the
    rollout also holds ``loss_logp``, the same log-probs still attached to the pass that drew them (a
    loss can differentiate them with no second forward pass).
    """
    tokens: torch.Tensor
    logp: torch.Tensor
    mask: torch.Tensor
    prompt_len: int
    loss_logp: torch.Tensor | None = None
    entropy: torch.Tensor | None = None

    @property
    def completions(self) -> torch.Tensor:
        return self.tokens[:, self.prompt_len:]


def _prompt_batch(prompts, name: str) -> torch.Tensor:
    """Rule: fixed-width prompts, token ids shaped (N, P) with N >= 1."""
    if prompts.dim() != 2 or prompts.shape[0] < 1:
        raise ValueError(f"{name} must be token ids shaped (N, P) with N >= 1, got {tuple(prompts.shape)}")
    return prompts


#: Rule: a sampling temperature T >= 0 (0 is greedy).
_TEMPERATURE = in_range(0.0, math.inf, high_open=True)


def _shared_prefixes_need_no_graph(args):
    """Relation: ``share_prefixes`` samples without a graph (its caches are selected and written in place)."""
    if args["share_prefixes"] and args["keep_graph"]:
        raise ValueError("share_prefixes must be False with keep_graph=True (a graph needs one row per answer)")


@checked(_shared_prefixes_need_no_graph, prompts=_prompt_batch, max_new_tokens=at_least(1),
         group_size=at_least(1), temperature=_TEMPERATURE, share_prefixes=flag)
def sample(model: GPT, prompts: torch.Tensor, *, max_new_tokens: int, eos_id: int, pad_id: int,
           group_size: int = 1, temperature: float = 1.0, generator: torch.Generator | None = None,
           keep_graph: bool = False, share_prefixes: bool = False) -> Rollout:
    """Sample ``group_size`` completions of every prompt at once, with the KV cache (chapter 15).

    ``prompts`` (N, P) are fixed-width token ids; rows are repeated G times (row i*G + j is sample j
    of prompt i). The prompt is run through the model once and its key/value cache copied to the
    G rows of its group (sharing prefixes, each row reads its prefix's cache instead). Each step draws
    y_t ~ softmax(z_t / T) (``temperature=0`` takes the argmax, greedy) for every unfinished row; a row
    finishes at its first EOS and is padded with ``pad_id`` after it. Sampling stops when every row has
    finished or after ``max_new_tokens`` tokens.

    Without gradients by default (in torch's inference mode, which also skips autograd's bookkeeping of
    views and versions). ``keep_graph=True`` records the autograd graph of the whole pass
    (the caches then grow by concatenation, which autograd can follow) and returns it in
    ``Rollout.loss_logp``: the log-probs :func:`completion_logprobs` would recompute from the same
    weights, as the very numbers the sampler drew with, so that a loss on the policy that sampled
    (GRPO with one inner step) needs no second forward pass. ``share_prefixes=True`` (without a graph) runs
    the model once per distinct (prompt, tokens so far) instead of once per row
    (:func:`rl4llm.llm.prefix_sharing.next_shared_logits`): the same draws, to float rounding, for less compute.
    """
    with torch.enable_grad() if keep_graph else torch.inference_mode():
        logits, past = model(prompts)            # one prefill per prompt, then copy its cache G times
        capacity = prompts.shape[1] + max_new_tokens - 1     # the last token drawn never goes through the model
        if share_prefixes:                       # row i reads the logits of its prefix, prefix[i]
            prefix = torch.arange(len(prompts) * group_size, device=prompts.device) // group_size
            past = [LayerCache(c.keys, c.values, capacity) for c in past]
            z = logits[:, -1, :][prefix]
        else:
            z = logits[:, -1, :].repeat_interleave(group_size, dim=0)
            copies = [(c.keys.repeat_interleave(group_size, dim=0), c.values.repeat_interleave(group_size, dim=0))
                      for c in past]                                       # (N G, nh, P, hs) each
            past = [ConcatCache(k, v) if keep_graph else LayerCache(k, v, capacity) for k, v in copies]
        idx = prompts.repeat_interleave(group_size, dim=0)
        B, P = idx.shape
        tokens = torch.full((B, max_new_tokens), pad_id, dtype=torch.long, device=idx.device)
        logp = torch.zeros(B, max_new_tokens, device=idx.device)
        entropy = torch.zeros(B, max_new_tokens, device=idx.device)
        mask = torch.zeros(B, max_new_tokens, device=idx.device)
        alive = torch.ones(B, dtype=torch.bool, device=idx.device)
        for t in range(max_new_tokens):
            if not bool(torch.isfinite(z).all()):
                raise FloatingPointError(f"the logits for completion token {t + 1} are not finite (NaN or inf)")
            step_logp_all = temperature_log_softmax(z, temperature)
            probs = step_logp_all.detach().exp()
            y = z.argmax(dim=-1) if temperature == 0 else torch.multinomial(probs, 1, generator=generator)[:, 0]
            step_tokens = torch.where(alive, y, pad_id)
            tokens[:, t] = step_tokens
            logp[:, t] = torch.where(alive, step_logp_all.gather(1, y[:, None])[:, 0], 0.0)
            entropy[:, t] = -(probs * step_logp_all.detach()).sum(dim=-1)
            mask[:, t] = alive.float()
            alive = alive & (y != eos_id)
            if t + 1 == max_new_tokens or not bool(alive.any()):
                break
            if share_prefixes:
                z, prefix = next_shared_logits(model, past, prefix, y, alive)
            else:
                logits, past = model(step_tokens[:, None], past)
                z = logits[:, -1, :]
    tokens = torch.cat([idx, tokens], dim=1)
    if keep_graph:
        return Rollout(tokens, logp.detach(), mask, P, loss_logp=logp, entropy=entropy)
    # tensors made in inference mode cannot enter a graph: the rollout holds ordinary copies
    return Rollout(tokens, logp.clone(), mask.clone(), P, entropy=entropy.clone())


def _groups_share_prompts(args):
    """Relation: with ``group_size`` G > 1, the rows come in runs of G that share their prompt."""
    tokens, G, P = args["tokens"], args["group_size"], args["prompt_len"]
    if G == 1:
        return
    if tokens.shape[0] % G:
        raise ValueError(f"group_size must divide the number of rows {tokens.shape[0]}, got {G}")
    if not torch.equal(tokens[:, :P], tokens[::G, :P].repeat_interleave(G, dim=0)):
        raise ValueError(f"group_size={G}: each run of {G} rows must share its prompt")


@checked(_groups_share_prompts, prompt_len=at_least(1), temperature=_TEMPERATURE, group_size=at_least(1),
         entropy_grad=flag)
def completion_logprobs(model: GPT, tokens: torch.Tensor, prompt_len: int, temperature: float = 1.0,
                        group_size: int = 1, *, entropy_grad: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """log pi_theta(y_t | x, y_<t) of every completion token, and the policy's entropy there (chapter 15).

    A forward pass over ``tokens`` (B, P + T): the logits at position P - 1 + t predict completion
    token t. With ``group_size`` G > 1 the rows come in groups of G that share their prompt (as
    :func:`sample` returns them): each prompt then goes through the model once and its key/value
    cache is copied to its G rows, which gives the same log-probs (and gradients, through the copy)
    for less compute. Returns ``(logp, entropy)``, both (B, T); ``entropy`` (H of softmax(z / T) at
    each position) is detached, a diagnostic, unless ``entropy_grad`` (an entropy bonus differentiates it,
    chapter 18). Temperature 0 (greedy) reads the logits at T = 1.
    """
    if group_size == 1:
        logits, _ = model(tokens[:, :-1])
        z = logits[:, prompt_len - 1:, :]
    else:
        prompts = tokens[::group_size, :prompt_len]
        prompt_logits, past = model(prompts)
        past = [ConcatCache(c.keys.repeat_interleave(group_size, dim=0), c.values.repeat_interleave(group_size, dim=0))
                for c in past]                                             # (B, nh, P, hs) each
        logits, _ = model(tokens[:, prompt_len:-1], past)
        z = torch.cat([prompt_logits[:, -1:, :].repeat_interleave(group_size, dim=0), logits], dim=1)
    logp_all = temperature_log_softmax(z, temperature)
    logp = logp_all.gather(2, tokens[:, prompt_len:, None])[..., 0]
    with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
        entropy = -(logp_all.exp() * logp_all).sum(dim=-1)
    return logp, entropy


def temperature_log_softmax(z: torch.Tensor, temperature: float) -> torch.Tensor:
    """log softmax(z / T) over the last axis: the distribution the sampler draws from (T = 0, greedy, reads T = 1)."""
    return torch.log_softmax(z / temperature if temperature > 0 else z, dim=-1)


def to_gpt2(model: GPT, *, eos_id: int | None = None, pad_id: int | None = None):
    """The same network as a ``transformers.GPT2LMHeadModel`` (identical weights and logits).

    GPT-2 stores its linear layers as ``Conv1D`` with the weight transposed (in, out); everything
    else maps name for name. Dropout is off; the MLP uses the exact (erf) GELU, ``"gelu"`` in
    ``GPT2Config`` (GPT-2's own tanh approximation is 4x slower on CPU at this size). ``eos_id`` and
    ``pad_id`` replace GPT-2's default special-token id 50256, which is outside this vocabulary.
    """
    from transformers import GPT2Config, GPT2LMHeadModel

    c = model.config
    hf_config = GPT2Config(vocab_size=c.vocab_size, n_positions=c.block_size, n_embd=c.n_embd,
                           n_layer=c.n_layer, n_head=c.n_head, activation_function="gelu",
                           resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, layer_norm_epsilon=1e-5,
                           tie_word_embeddings=True, bos_token_id=eos_id, eos_token_id=eos_id,
                           pad_token_id=pad_id)
    hf = GPT2LMHeadModel(hf_config)
    state = {"transformer." + name: value.t().contiguous() if is_conv1d(name) else value
             for name, value in model.state_dict().items()}
    state["lm_head.weight"] = model.wte.weight.detach().clone()
    missing, unexpected = hf.load_state_dict(state, strict=False)
    leftover = [k for k in missing if not k.endswith("attn.bias") and not k.endswith("masked_bias")]
    if leftover or unexpected:
        raise RuntimeError(f"weights did not map onto GPT2LMHeadModel: missing {leftover}, unexpected {unexpected}")
    return hf.eval()


def from_gpt2(hf_model) -> GPT:
    """The inverse of :func:`to_gpt2`: a ``GPT`` with the weights of a ``GPT2LMHeadModel``."""
    c = hf_model.config
    model = GPT(GPTConfig(vocab_size=c.vocab_size, block_size=c.n_positions, n_layer=c.n_layer,
                          n_head=c.n_head, n_embd=c.n_embd))
    hf_state = hf_model.state_dict()
    state = {}
    for name in model.state_dict():
        value = hf_state["transformer." + name].detach()
        state[name] = value.t().contiguous() if is_conv1d(name) else value.clone()
    model.load_state_dict(state)
    return model.to(next(hf_model.parameters()).device)


def is_conv1d(name: str) -> bool:
    """GPT-2 stores these linear layers as Conv1D, with the weight transposed."""
    return name.endswith("weight") and any(k in name for k in ("c_attn", "c_proj", "c_fc"))
