#!/usr/bin/env python3
"""Tiny randomly initialised models of every supported architecture, with transformers' outputs.

For each architecture this builds a small model from a transformers config (few layers, GQA where
the family uses it, hidden 64, sliding windows of 8-14 tokens and soft-caps that bite), rounds its
weights to float16, and writes under tests/data/tiny/<name>/:
  hf/            config.json, model.safetensors (float16), tokenizer.json, tokenizer_config.json,
                 generation_config.json: the folder transformers itself saves
  <name>.gguf    the same weights with llama.cpp's tensor names and metadata, converted the way
                 llama.cpp's convert_hf_to_gguf.py does (Q/K row permutation for llama, gemma norm
                 weights + 1, phi3's fused tensors and longrope factor tensors, llama3 rope_freqs)
  ref.json       the token ids, greedy continuation, shapes, tokenizer and chat-template cases
  logits.bin     float32 [N, V]: transformers' logits at every position of ref.json's ids
  attn.bin       float32 [n_layer, H, 32, N]: eager attention probabilities of the last 32 queries

Run by hand (not by CI): /work/venv/bin/python tests/data/make_tiny_models.py
Needs torch, transformers (5.x), tokenizers, safetensors, gguf. Deterministic (fixed seeds).
"""
import copy
import json
import math
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import torch
import gguf
import tokenizers
import transformers
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, decoders, trainers, processors
from transformers import (AutoModelForCausalLM, PreTrainedTokenizerFast, Gemma2Config, Gemma3TextConfig,
                          LlamaConfig, MistralConfig, Phi3Config, Qwen2Config, Qwen3Config)

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "tiny"
REPO = ROOT.parent.parent
N_TOKENS = 64          # prompt length of the reference: longer than every sliding window
N_ATTN_ROWS = 32       # attention rows kept: the last 32 queries
N_GREEDY = 12          # greedy continuation length
VOCAB = 384

LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")

# Chat templates: the families' own templates, reduced to their plain-message paths (no tools, no
# images) where the real one is longer. Each keeps the real template's markers and whitespace.
LLAMA3_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")
MISTRAL_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}"
    "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}")
QWEN_TEMPLATE = (  # Qwen2.5-Instruct without its tools branch
    "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}{%- for message in messages %}{%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first)"
    " or (message.role == \"assistant\") %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")
QWEN3_TEMPLATE = (  # Qwen3 without tools and reasoning_content handling
    "{%- if messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}{%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- elif message.role == \"assistant\" %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")
# Gemma 2, Gemma 3 and Phi-3.5: the same texts as the chat renders of tests/data/tokenizer.
sys.path.insert(0, str(Path(__file__).resolve().parent / "tokenizer"))
from make_chat_reference import GEMMA2_TEMPLATE, GEMMA3_TEMPLATE, PHI3_TEMPLATE  # noqa: E402

TOKENIZER_CASES = [
    "Hello world",
    " Hello  world!",
    "The quick brown fox jumps over the lazy dog.",
    "SnapKV keeps 1024 tokens, 32 of them in the window.",
    "don't stop: it's 3.14159 and 2026-11-30",
    "line one\nline two\n\n  indented\ttab",
    "naïve café — 東京 🙂",
    "   leading and trailing   ",
    "a",
    "",
]

CHAT_CASES = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a colour."}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"},
     {"role": "user", "content": " Summarise the text. "}],
]


def corpus():
    text = (REPO / "datasets" / "sample_document.md").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()] + TOKENIZER_CASES


# ---------------------------------------------------------------------------------------------
# Tokenizers


def byte_level_tokenizer(regex, specials, bos=None):
    """A byte-level BPE with a Split(regex) + ByteLevel pre-tokenizer, as Llama 3 and Qwen2 ship."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(tokenizers.Regex(regex), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB - len(specials), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(corpus(), trainer)
    j = json.loads(tok.to_str())
    vocab = j["model"]["vocab"]
    n = len(vocab)
    added = []
    for i, s in enumerate(specials):
        added.append({"id": n + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True})
    j["added_tokens"] = added
    if bos is not None:
        j["post_processor"] = bos_template(bos, n + specials.index(bos))
    else:
        j["post_processor"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                               "use_regex": False}
    return j


def bos_template(bos, bos_id):
    """The post-processor that adds BOS (LlamaTokenizerFast and GemmaTokenizerFast write one)."""
    return {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}}


def spm_tokenizer(specials, prepend_space, unk="<unk>", bos=None):
    """A SentencePiece-style BPE (spaces as "▁", byte fallback), as Llama 2 / Mistral / Phi-3 /
    Gemma ship it in tokenizer.json. specials: the control tokens at ids 0..k-1."""
    train = Tokenizer(models.BPE())
    train.normalizer = normalizers.Replace(" ", "▁")
    train.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first" if prepend_space else "never")
    n_bytes = 256
    trainer = trainers.BpeTrainer(vocab_size=VOCAB - len(specials) - n_bytes, show_progress=False, special_tokens=[])
    train.train_from_iterator(corpus(), trainer)
    tj = json.loads(train.to_str())
    trained = sorted(tj["model"]["vocab"].items(), key=lambda kv: kv[1])
    vocab = {}
    for s in specials:
        vocab[s] = len(vocab)
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for piece, _ in trained:
        if piece not in vocab:
            vocab[piece] = len(vocab)
    merges = tj["model"]["merges"]
    norm = [{"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]
    if prepend_space:
        norm = [{"type": "Prepend", "prepend": "▁"}] + norm
    decoder = [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
               {"type": "Fuse"}]
    if prepend_space:
        decoder.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    added = [{"id": vocab[s], "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for s in specials]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": norm} if len(norm) > 1 else norm[0],
        "pre_tokenizer": None, "post_processor": bos_template(bos, vocab[bos]) if bos else None,
        "decoder": {"type": "Sequence", "decoders": decoder},
        "model": {"type": "BPE", "dropout": None, "unk_token": unk, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": merges}}


def as_merge_strings(merges):
    return [m if isinstance(m, str) else m[0] + " " + m[1] for m in merges]


# ---------------------------------------------------------------------------------------------
# Architectures

def arch_specs():
    """name -> (transformers config, gguf arch, tokenizer recipe, chat template, extra)."""
    common = dict(hidden_size=64, num_attention_heads=4, intermediate_size=96, vocab_size=VOCAB,
                  max_position_embeddings=512, rms_norm_eps=1e-5)
    specs = {}
    specs["llama3"] = dict(
        config=LlamaConfig(**common, num_hidden_layers=2, num_key_value_heads=2, rope_theta=500000.0,
                           rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                         "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
                           tie_word_embeddings=False),
        gguf_arch="llama", tok=("bpe", LLAMA3_REGEX, "llama-bpe"), template=LLAMA3_TEMPLATE,
        specials=["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
        bos="<|begin_of_text|>", eos="<|eot_id|>")
    specs["mistral"] = dict(
        config=MistralConfig(**common, num_hidden_layers=2, num_key_value_heads=1, rope_theta=10000.0,
                             sliding_window=12, tie_word_embeddings=False),
        gguf_arch="llama", tok=("spm", True), template=MISTRAL_TEMPLATE,
        specials=["<unk>", "<s>", "</s>"], bos="<s>", eos="</s>")
    specs["qwen2"] = dict(
        config=Qwen2Config(**common, num_hidden_layers=2, num_key_value_heads=2, rope_theta=1000000.0,
                           tie_word_embeddings=True, use_sliding_window=False),
        gguf_arch="qwen2", tok=("bpe", QWEN2_REGEX, "qwen2"), template=QWEN_TEMPLATE,
        specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>"], bos=None, eos="<|im_end|>")
    specs["qwen3"] = dict(
        config=Qwen3Config(**common, num_hidden_layers=2, num_key_value_heads=2, head_dim=32,
                           rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False),
        gguf_arch="qwen3", tok=("bpe", QWEN2_REGEX, "qwen2"), template=QWEN3_TEMPLATE,
        specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"], bos=None,
        eos="<|im_end|>")
    specs["gemma2"] = dict(
        config=Gemma2Config(**common, num_hidden_layers=2, num_key_value_heads=2, head_dim=16,
                            query_pre_attn_scalar=24, sliding_window=10, attn_logit_softcapping=6.0,
                            final_logit_softcapping=5.0, rope_theta=10000.0, hidden_activation="gelu_pytorch_tanh",
                            tie_word_embeddings=True),
        gguf_arch="gemma2", tok=("spm", False), template=GEMMA2_TEMPLATE,
        specials=["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"], bos="<bos>",
        eos="<end_of_turn>")
    specs["gemma3"] = dict(
        config=Gemma3TextConfig(**common, num_hidden_layers=6, num_key_value_heads=1, head_dim=16,
                                query_pre_attn_scalar=16, sliding_window=10, sliding_window_pattern=6,
                                rope_theta=1000000.0, rope_local_base_freq=10000.0,
                                rope_scaling={"rope_type": "linear", "factor": 8.0},
                                hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True),
        gguf_arch="gemma3", tok=("spm", False), template=GEMMA3_TEMPLATE,
        specials=["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"], bos="<bos>",
        eos="<end_of_turn>")
    specs["phi3"] = dict(
        config=Phi3Config(**common, num_hidden_layers=2, num_key_value_heads=2, rope_theta=10000.0,
                          original_max_position_embeddings=128, partial_rotary_factor=0.75, sliding_window=14,
                          rope_scaling={"type": "longrope", "short_factor": [1.0, 1.1, 1.3, 1.6, 2.0, 2.5],
                                        "long_factor": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]},
                          tie_word_embeddings=False),
        gguf_arch="phi3", tok=("spm", True), template=PHI3_TEMPLATE,
        specials=["<unk>", "<s>", "</s>", "<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"],
        bos="<s>", eos="<|end|>", add_bos=False)
    return specs


def init_weights(model, arch, gen):
    """Weights of order one (transformers' 0.02 init gives near-uniform attention and logits that
    never reach a soft-cap), rounded to float16 so that the float16 files hold them exactly."""
    gemma = arch.startswith("gemma")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                # gemma multiplies by (1 + w): keep the effective scale near 1 either way
                base = 0.0 if gemma else 1.0
                v = base + 0.2 * torch.randn(p.shape, generator=gen)
            elif name.endswith(".bias"):
                v = 0.5 * torch.randn(p.shape, generator=gen)
            elif "embed_tokens" in name:
                v = torch.randn(p.shape, generator=gen) * (0.3 if gemma else 1.0)
            else:
                fan_in = p.shape[1]
                gain = 1.0
                if any(k in name for k in ("q_proj", "k_proj", "qkv_proj")):
                    gain = 2.5   # peaky attention: soft-caps and sliding windows matter
                if "lm_head" in name:
                    gain = 3.0
                v = torch.randn(p.shape, generator=gen) * (gain / math.sqrt(fan_in))
            p.copy_(v.half().float())


# ---------------------------------------------------------------------------------------------
# GGUF


def llama_permute(w, n_head, n_head_kv):
    """convert_hf_to_gguf.py LlamaModel.permute."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama3_rope_factors(cfg):
    """convert_hf_to_gguf.py LlamaModel.generate_extra_tensors (rope_freqs)."""
    rp = cfg.rope_parameters
    base = rp["rope_theta"]
    dim = cfg.hidden_size // cfg.num_attention_heads
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor, low, high, old = rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"], rp["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    out = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(1)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return torch.tensor(out, dtype=torch.float32)


def write_gguf(path, name, spec, model, tok_json, tok_cfg):
    cfg = model.config
    arch = spec["gguf_arch"]
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(name)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    n_layer = cfg.num_hidden_layers
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_vocab_size(cfg.vocab_size)
    rp = cfg.rope_parameters
    if arch == "gemma3":
        rp = rp["full_attention"]
    w.add_rope_freq_base(rp["rope_theta"])
    if head_dim != cfg.hidden_size // cfg.num_attention_heads or arch.startswith("gemma"):
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    if arch == "llama":
        w.add_rope_dimension_count(head_dim)
    if name == "mistral":
        # llama.cpp's converter writes no window for Mistral (and its llama graph ignores one);
        # transformers applies it, and so do we when the key is set.
        w.add_sliding_window(cfg.sliding_window)
    if arch == "gemma2":
        w.add_attn_logit_softcapping(cfg.attn_logit_softcapping)
        w.add_final_logit_softcapping(cfg.final_logit_softcapping)
        w.add_sliding_window(cfg.sliding_window)
    if arch.startswith("gemma"):
        # llama.cpp derives the scale from the model size; the key carries the config's
        # query_pre_attn_scalar (24 here, not head_dim 16) for readers that look for it.
        w.add_attention_scale(cfg.query_pre_attn_scalar ** -0.5)
    if arch == "gemma3":
        w.add_sliding_window(cfg.sliding_window)
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(rp["factor"])
    if arch == "phi3":
        rp = cfg.rope_parameters
        rope_dims = int(rp["partial_rotary_factor"] * cfg.hidden_size) // cfg.num_attention_heads
        orig = rp["original_max_position_embeddings"]
        w.add_rope_scaling_orig_ctx_len(orig)
        w.add_rope_dimension_count(rope_dims)
        w.add_sliding_window(cfg.sliding_window)
        scale = cfg.max_position_embeddings / orig
        w.add_rope_scaling_attn_factors(math.sqrt(1 + math.log(scale) / math.log(orig)))

    # --- tokenizer (what convert_hf_to_gguf's _set_vocab_gpt2 / _set_vocab_sentencepiece write)
    vocab = tok_json["model"]["vocab"]
    by_id = {i: t for t, i in vocab.items()}
    for a in tok_json["added_tokens"]:
        by_id[a["id"]] = a["content"]
    n = max(by_id) + 1
    tokens = [by_id.get(i, "[PAD%d]" % i) for i in range(n)]
    specials = set(spec["specials"])
    merges = as_merge_strings(tok_json["model"]["merges"])
    if spec["tok"][0] == "bpe":
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(spec["tok"][2])
        w.add_token_list(tokens)
        w.add_token_types([3 if t in specials else 1 for t in tokens])
        w.add_token_merges(merges)
    else:
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        # SentencePiece merges by the score of the merged token: score = -(rank of the merge that
        # makes it) reproduces the BPE merge order; other tokens rank below every merge.
        scores = [-float(len(merges))] * n
        for r in range(len(merges) - 1, -1, -1):
            a, b = merges[r].split(" ", 1)
            if a + b in vocab:
                scores[vocab[a + b]] = -float(r)
        types = []
        for t in tokens:
            if t == "<unk>":
                types.append(2)
            elif t in specials:
                types.append(3)
            elif len(t) == 6 and t.startswith("<0x") and t.endswith(">"):
                types.append(6)
            else:
                types.append(1)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_add_space_prefix(spec["tok"][1])
        if "<unk>" in vocab:
            w.add_unk_token_id(vocab["<unk>"])
    ids = {t: i for i, t in enumerate(tokens)}
    if spec.get("bos"):
        w.add_bos_token_id(ids[spec["bos"]])
    w.add_eos_token_id(ids[spec["eos"]])
    w.add_add_bos_token(bool(tok_cfg.get("add_bos_token", False)))
    w.add_chat_template(spec["template"])

    # --- tensors
    sd = model.state_dict()
    names = gguf.get_tensor_name_map(getattr(gguf.MODEL_ARCH, arch.upper()), n_layer)
    gemma = arch.startswith("gemma")
    for hf_name, t in sd.items():
        if hf_name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        t = t.detach().float()
        if arch == "llama" and hf_name.endswith("q_proj.weight"):
            t = llama_permute(t, cfg.num_attention_heads, cfg.num_attention_heads)
        if arch == "llama" and hf_name.endswith("k_proj.weight"):
            t = llama_permute(t, cfg.num_attention_heads, cfg.num_key_value_heads)
        if gemma and hf_name.endswith("norm.weight"):
            t = t + 1
        new = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if new is None:
            raise SystemExit("no GGUF name for " + hf_name)
        data = t.numpy()
        # convert_hf_to_gguf keeps 1-D tensors (norms, biases) in float32, matrices in float16
        data = data.astype(np.float32) if data.ndim == 1 else data.astype(np.float16)
        w.add_tensor(new, data)
    if arch == "llama" and cfg.rope_parameters.get("rope_type") == "llama3":
        w.add_tensor("rope_freqs.weight", llama3_rope_factors(cfg).numpy())
    if arch == "phi3":
        rp = cfg.rope_parameters
        w.add_tensor("rope_factors_long.weight", np.array(rp["long_factor"], dtype=np.float32))
        w.add_tensor("rope_factors_short.weight", np.array(rp["short_factor"], dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ---------------------------------------------------------------------------------------------
# References


def greedy(model, ids, steps):
    out, margins = [], []
    seq = list(ids)
    with torch.no_grad():
        for _ in range(steps):
            logits = model(torch.tensor([seq])).logits[0, -1]
            top2 = torch.topk(logits, 2)
            margins.append(float(top2.values[0] - top2.values[1]))
            nxt = int(top2.indices[0])
            out.append(nxt)
            seq.append(nxt)
    return out, margins


def build(name, spec, gen):
    cfg = spec["config"]
    tok_kind = spec["tok"]
    specials = spec["specials"]
    if tok_kind[0] == "bpe":
        tok_json = byte_level_tokenizer(tok_kind[1], specials, bos=spec.get("bos"))
    else:
        add_bos = spec.get("add_bos", spec.get("bos") is not None)
        tok_json = spm_tokenizer(specials, prepend_space=tok_kind[1], bos=spec["bos"] if add_bos else None)
    fast = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(json.dumps(tok_json)))
    n_vocab_tok = len(fast.get_vocab())
    assert n_vocab_tok <= VOCAB, (name, n_vocab_tok)
    vocab = {**tok_json["model"]["vocab"], **{a["content"]: a["id"] for a in tok_json["added_tokens"]}}
    cfg.bos_token_id = vocab[spec["bos"]] if spec.get("bos") else None
    cfg.eos_token_id = vocab[spec["eos"]]
    cfg.pad_token_id = None

    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").float().eval()
    init_weights(model, name, gen)
    if cfg.tie_word_embeddings:
        model.tie_weights()

    d = OUT / name
    if d.exists():
        shutil.rmtree(d)
    (d / "hf").mkdir(parents=True)
    # A copy goes to float16: .to() would also round the model's own RoPE buffers (inv_freq).
    copy.deepcopy(model).to(torch.float16).save_pretrained(d / "hf", safe_serialization=True)
    add_bos = spec.get("add_bos", spec.get("bos") is not None)
    tok_cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": add_bos, "add_eos_token": False,
               "bos_token": spec.get("bos"), "eos_token": spec["eos"], "chat_template": spec["template"],
               "model_max_length": cfg.max_position_embeddings}
    if "<unk>" in vocab:
        tok_cfg["unk_token"] = "<unk>"
    (d / "hf" / "tokenizer.json").write_text(json.dumps(tok_json, ensure_ascii=False), encoding="utf-8")
    (d / "hf" / "tokenizer_config.json").write_text(json.dumps(tok_cfg, indent=2, ensure_ascii=False), encoding="utf-8")
    gguf_path = d / (name + ".gguf")
    write_gguf(gguf_path, name, spec, model, tok_json, tok_cfg)

    # Reference token ids: random non-special tokens; keep a sequence whose greedy steps have a
    # clear top-2 margin so that float32 rounding cannot flip them.
    n_special = len(specials)
    for attempt in range(20):
        g = torch.Generator().manual_seed(1000 + attempt)
        lo = n_special + 256 if tok_kind[0] == "spm" else 0
        hi = len(tok_json["model"]["vocab"]) if tok_kind[0] == "bpe" else n_vocab_tok
        ids = torch.randint(lo, hi, (N_TOKENS,), generator=g).tolist()
        cont, margins = greedy(model, ids, N_GREEDY)
        if min(margins) > 1e-3:
            break
    else:
        raise SystemExit(name + ": no sequence with a clear greedy margin")
    with torch.no_grad():
        outp = model(torch.tensor([ids]), output_attentions=True)
    logits = outp.logits[0].float().numpy()                                    # [N, V]
    attn = torch.stack([a[0, :, -N_ATTN_ROWS:, :] for a in outp.attentions])   # [L, H, 32, N]
    logits.astype("<f4").tofile(d / "logits.bin")
    attn.float().numpy().astype("<f4").tofile(d / "attn.bin")

    # Tokenizer and chat-template cases, as transformers' fast tokenizer gives them.
    hf_tok = PreTrainedTokenizerFast.from_pretrained(d / "hf")
    tok_cases = [{"text": t, "ids": hf_tok(t, add_special_tokens=True)["input_ids"]} for t in TOKENIZER_CASES]
    chat_cases = []
    for msgs in CHAT_CASES:
        try:
            text = hf_tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        except Exception as e:   # e.g. Gemma 2 and Mistral refuse a system turn
            chat_cases.append({"messages": msgs, "error": str(e).split("\n")[0]})
            continue
        ids_chat = hf_tok(text, add_special_tokens=False)["input_ids"]
        chat_cases.append({"messages": msgs, "text": text, "ids": ids_chat})

    saturated = None
    if getattr(cfg, "final_logit_softcapping", None):
        with torch.no_grad():
            raw = model.lm_head(model.model(torch.tensor([ids])).last_hidden_state)   # before the cap
        saturated = float((raw.abs() > cfg.final_logit_softcapping).float().mean())
    ref = {
        "name": name, "gguf": name + ".gguf", "hf": "hf", "arch": spec["gguf_arch"],
        "model_type": cfg.model_type, "n_layer": cfg.num_hidden_layers, "n_head": cfg.num_attention_heads,
        "n_head_kv": cfg.num_key_value_heads, "n_vocab": cfg.vocab_size, "n_tokens": N_TOKENS,
        "attn_rows": N_ATTN_ROWS, "ids": ids, "greedy": cont, "greedy_min_margin": min(margins),
        "sliding_window": getattr(cfg, "sliding_window", None),
        "layer_types": getattr(cfg, "layer_types", None),
        "logit_range": [float(logits.min()), float(logits.max())],
        "final_softcap_share_of_raw_logits_beyond_cap": saturated,
        "tokenizer_cases": tok_cases, "chat_cases": chat_cases,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__, "gguf": getattr(gguf, "__version__", "?")},
    }
    (d / "ref.json").write_text(json.dumps(ref, indent=1, ensure_ascii=False), encoding="utf-8")
    size = sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
    print(f"{name:8s} {size / 1024:7.1f} KiB  greedy margin {min(margins):.4f}  logits "
          f"[{logits.min():.2f}, {logits.max():.2f}]" + (f"  capped share {saturated:.3f}" if saturated is not None else ""))


def main():
    torch.manual_seed(0)
    only = set(sys.argv[1:])
    for i, (name, spec) in enumerate(arch_specs().items()):
        if only and name not in only:
            continue
        build(name, spec, torch.Generator().manual_seed(42 + i))


if __name__ == "__main__":
    main()
