#!/usr/bin/env python3
"""Render every chat template in templates/ with Hugging Face transformers, as golden data.

Writes, next to this script:
  conversations.json  the inputs (messages, tools, pinned clock)
  expected.json       one record per template x conversation x add_generation_prompt

The rendering goes through transformers' own code path for
`tokenizer.apply_chat_template(conversation, tools=..., add_generation_prompt=..., tokenize=False)`:
`_normalize_chat_messages` then `render_jinja_template` with the tokenizer's special tokens
(bos_token, eos_token) as template kwargs. Only the clock behind the `strftime_now` global is pinned.

Usage (see PROVENANCE.md):  /work/venv-ref/bin/python make_renders.py
The output is deterministic for a given transformers/jinja2 version.
"""

import json
import os
import sys

import jinja2
import transformers
import transformers.utils.chat_template_utils as ctu

from reference_env import HERE, PINNED_NOW, write_records  # noqa: E402 (pins the clock)

TEMPLATE_DIR = os.path.join(HERE, "templates")

# ---------------------------------------------------------------------------------------------
# Special tokens per template family: (bos_token, eos_token). Chosen as the family's tokenizer
# would set them; a template that hard-codes its own tokens ({% set bos_token = ... %}) ignores them.
DEFAULT_TOKENS = ("<s>", "</s>")
LLAMA3 = ("<|begin_of_text|>", "<|eot_id|>")
MISTRAL = ("<s>", "</s>")
GEMMA = ("<bos>", "<eos>")
QWEN = ("<|im_start|>", "<|im_end|>")  # Qwen-style tokenizers; bos is unused by these templates
DEEPSEEK = ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>")
COHERE = ("<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>")
GRANITE = ("<|end_of_text|>", "<|end_of_text|>")
KIMI = ("[BOS]", "[EOS]")
LFM = ("<|startoftext|>", "<|im_end|>")

TOKENS_BY_TEMPLATE = {
    "Apertus-8B-Instruct.jinja": DEFAULT_TOKENS,
    "Apriel-1.6-15b-Thinker-fixed.jinja": MISTRAL,
    "Bielik-11B-v3.0-Instruct.jinja": MISTRAL,
    "ByteDance-Seed-OSS.jinja": ("<seed:bos>", "<seed:eos>"),
    "Cohere2MoE.jinja": COHERE,
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja": COHERE,
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": COHERE,
    "GLM-4.6.jinja": ("[gMASK]", "<|endoftext|>"),
    "GLM-4.7-Flash.jinja": ("[gMASK]", "<|endoftext|>"),
    "GigaChat3-10B-A1.8B.jinja": DEFAULT_TOKENS,
    "GigaChat3.1-10B-A1.8B.jinja": DEFAULT_TOKENS,
    "HuggingFaceTB-SmolLM3-3B.jinja": QWEN,
    "Kimi-K2-Instruct.jinja": KIMI,
    "Kimi-K2-Thinking.jinja": KIMI,
    "Kimi-K3.jinja": KIMI,
    "LFM2-8B-A1B.jinja": LFM,
    "LFM2.5-8B-A1B.jinja": LFM,
    "LFM2.5-Instruct.jinja": LFM,
    "MiMo-VL.jinja": QWEN,
    "MiniMax-M1.jinja": ("<beginning_of_sentence>", "<end_of_sentence>"),
    "MiniMax-M2.jinja": ("]~!b[", "[e~["),
    "MiniMax-M3.jinja": ("]~b]", "[e~["),
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": MISTRAL,
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": ("<s>", "<|im_end|>"),
    "NVIDIA-Nemotron-Nano-v2.jinja": ("<SPECIAL_10>", "<SPECIAL_12>"),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": ("<|begin_of_text|>", "<|im_end|>"),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": ("<|begin_of_text|>", "<|im_end|>"),
    "Qwen-QwQ-32B.jinja": QWEN,
    "Qwen-Qwen2.5-7B-Instruct.jinja": QWEN,
    "Qwen-Qwen3-0.6B.jinja": QWEN,
    "Qwen3-Coder.jinja": QWEN,
    "Qwen3.5-4B.jinja": QWEN,
    "Reka-Edge.jinja": DEFAULT_TOKENS,
    "Spark2.5.jinja": ("<｜start▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "StepFun3.5-Flash.jinja": ("<|begin_of_text|>", "<|im_end|>"),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": DEEPSEEK,
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": DEEPSEEK,
    "deepseek-ai-DeepSeek-V3.1.jinja": DEEPSEEK,
    "deepseek-ai-DeepSeek-V3.2.jinja": DEEPSEEK,
    "deepseek-ai-DeepSeek-V4-Flash-0731.jinja": DEEPSEEK,
    "deepseek-ai-DeepSeek-V4.jinja": DEEPSEEK,
    "fireworks-ai-llama-3-firefunction-v2.jinja": LLAMA3,
    "google-gemma-2-2b-it.jinja": GEMMA,
    "google-gemma-4-31B-it-interleaved.jinja": GEMMA,
    "google-gemma-4-31B-it.jinja": GEMMA,
    "ibm-granite-granite-3.3-2B-Instruct.jinja": GRANITE,
    "ibm-granite-granite-4.0.jinja": GRANITE,
    "ibm-granite-granite-4.1.jinja": GRANITE,
    "inclusionai-ling-3.0-flash.jinja": ("<|startoftext|>", "<|endoftext|>"),
    "llama-cpp-deepseek-r1.jinja": DEEPSEEK,
    "llama-cpp-rwkv-world.jinja": DEFAULT_TOKENS,
    "meetkai-functionary-medium-v3.1.jinja": LLAMA3,
    "meetkai-functionary-medium-v3.2.jinja": LLAMA3,
    "meta-llama-Llama-3.1-8B-Instruct.jinja": LLAMA3,
    "meta-llama-Llama-3.2-3B-Instruct.jinja": LLAMA3,
    "meta-llama-Llama-3.3-70B-Instruct.jinja": LLAMA3,
    "microsoft-Phi-3.5-mini-instruct.jinja": ("<s>", "<|endoftext|>"),
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": MISTRAL,
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": MISTRAL,
    "moonshotai-Kimi-K2.jinja": KIMI,
    "muse-glimmer.jinja": DEFAULT_TOKENS,
    "openai-gpt-oss-120b.jinja": ("<|startoftext|>", "<|return|>"),
    "openbmb-MiniCPM5-1B.jinja": ("<s>", "<|im_end|>"),
    "poolside-Laguna-S-2.1.jinja": DEFAULT_TOKENS,
    "poolside-Laguna-XS-2.1.jinja": DEFAULT_TOKENS,
    "poolside-Laguna-XS.2.jinja": DEFAULT_TOKENS,
    "tencent-Hy3.jinja": ("<｜hy_begin_of_sentence｜>", "<｜hy_eos｜>"),
    "unsloth-Apriel-1.5.jinja": MISTRAL,
    "unsloth-mistral-Devstral-Small-2507.jinja": MISTRAL,
    "upstage-Solar-Open-100B.jinja": ("<|begin|>", "<|endoftext|>"),
}

# ---------------------------------------------------------------------------------------------
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a given city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "City and country, e.g. \"Paris, France\""},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"},
                },
                "required": ["location"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Get the current local time in an IANA time zone.",
            "parameters": {
                "type": "object",
                "properties": {"timezone": {"type": "string", "description": "e.g. Europe/Paris"}},
                "required": ["timezone"],
            },
        },
    },
]


def weather_call_turns(call_content):
    """The "tools" conversation: a tool call made (its assistant turn's content given), answered, used."""
    return [
        {"role": "system", "content": "You can call tools."},
        {"role": "user", "content": "What's the weather in Paris?"},
        {
            "role": "assistant",
            "content": call_content,
            "tool_calls": [
                {
                    "id": "call12345",
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "arguments": {"location": "Paris, France", "unit": "celsius"},
                    },
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call12345",
            "name": "get_weather",
            "content": "{\"temperature\": 22, \"condition\": \"sunny\"}",
        },
        {"role": "assistant", "content": "It is 22 °C and sunny in Paris."},
        {"role": "user", "content": "Thanks! Should I take an umbrella?"},
    ]


CONVERSATIONS = [
    {
        "name": "single_user",
        "tools": None,
        "messages": [{"role": "user", "content": "Hello! What is the capital of France?"}],
    },
    {
        "name": "system_user",
        "tools": None,
        "messages": [
            {"role": "system", "content": "You are a concise assistant."},
            {"role": "user", "content": "Name three primary colours."},
        ],
    },
    {
        "name": "multi_turn",
        "tools": None,
        "messages": [
            {"role": "user", "content": "What is 2 + 2?"},
            {"role": "assistant", "content": "2 + 2 = 4."},
            {"role": "user", "content": "And times three?"},
        ],
    },
    {
        "name": "system_multi_turn",
        "tools": None,
        "messages": [
            {"role": "system", "content": "You answer in one sentence."},
            {"role": "user", "content": "Who wrote Hamlet?"},
            {"role": "assistant", "content": "William Shakespeare wrote Hamlet."},
            {"role": "user", "content": "When?"},
        ],
    },
    {
        "name": "tools",
        "tools": TOOLS,
        "messages": weather_call_turns(""),
    },
    {
        # Same as "tools", but with the OpenAI wire format's arguments: a JSON string, not a dict
        "name": "tools_json_arguments",
        "tools": TOOLS,
        "messages": [
            {"role": "user", "content": "What time is it in Tokyo?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call67890",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": "{\"timezone\": \"Asia/Tokyo\"}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call67890", "name": "get_time", "content": "09:30"},
            {"role": "assistant", "content": "It is 09:30 in Tokyo."},
            {"role": "user", "content": "Thanks."},
        ],
    },
    {
        # Tools offered, no call made yet: the usual first request of an agent loop
        "name": "tools_user_only",
        "tools": TOOLS,
        "messages": [{"role": "user", "content": "Is it raining in London?"}],
    },
    {
        "name": "content_parts",
        "tools": None,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "First part of the question."},
                    {"type": "text", "text": "Second part."},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "An answer in one part."}]},
            {"role": "user", "content": [{"type": "text", "text": "Follow-up."}]},
        ],
    },
    {
        "name": "unicode",
        "tools": None,
        "messages": [
            {"role": "system", "content": "Réponds en français, s'il te plaît. Ünïcödé ✓"},
            {"role": "user", "content": "Café, naïve, résumé — 你好，世界！こんにちは 🌍🚀👩‍💻"},
            {"role": "assistant", "content": "Bonjour ! 你好 😀 — «guillemets» et “quotes”"},
            {"role": "user", "content": "Ελληνικά, русский, العربية, עברית 🎉"},
        ],
    },
    {
        "name": "whitespace",
        "tools": None,
        "messages": [
            {"role": "system", "content": "  system with spaces \n"},
            {"role": "user", "content": "  leading and trailing \n"},
            {"role": "assistant", "content": "\n\n  answer\twith tab  \n"},
            {"role": "user", "content": "\tnext\n\nparagraph  "},
        ],
    },
    {
        "name": "consecutive_users",
        "tools": None,
        "messages": [
            {"role": "user", "content": "First user turn."},
            {"role": "user", "content": "Second user turn in a row."},
        ],
    },
    {
        "name": "assistant_first",
        "tools": None,
        "messages": [
            {"role": "assistant", "content": "I speak first."},
            {"role": "user", "content": "Then me."},
        ],
    },
    {
        # An earlier assistant turn with its reasoning under the standard name. render_jinja_template's
        # _alias_reasoning_fields also copies it to "thinking" (the name gpt-oss templates read).
        "name": "reasoning",
        "tools": None,
        "messages": [
            {"role": "user", "content": "What is 2 + 2?"},
            {"role": "assistant", "content": "The answer is 4.", "reasoning_content": "2 + 2 is 4, a simple sum."},
            {"role": "user", "content": "Are you sure?"},
        ],
    },
    {
        # Same as "tools", but the assistant turn with tool_calls has "content": null, as OpenAI-style APIs
        # return it. _normalize_chat_messages drops None-valued keys, so the template sees no "content" key.
        "name": "null_content_tool_call",
        "tools": TOOLS,
        "messages": weather_call_turns(None),
    },
    {
        # Reasoning under the older name "thinking": _alias_reasoning_fields fills "reasoning_content" from it.
        "name": "thinking_alias",
        "tools": None,
        "messages": [
            {"role": "user", "content": "Summarise our plan."},
            {"role": "assistant", "content": "Done.", "thinking": "Short thought."},
            {"role": "user", "content": "Thanks."},
        ],
    },
]


def template_mentions_tools(text):
    return "tools" in text or "tool_calls" in text


def render_one(template_text, messages, tools, add_generation_prompt, bos_token, eos_token):
    # == tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=..., tokenize=False)
    # with tokenizer.special_tokens_map == {"bos_token": ..., "eos_token": ...}
    conversations = [ctu._normalize_chat_messages(messages)]
    template_kwargs = {"bos_token": bos_token, "eos_token": eos_token}
    rendered, _ = ctu.render_jinja_template(
        conversations=conversations,
        tools=tools,
        documents=None,
        chat_template=template_text,
        return_assistant_tokens_mask=False,
        continue_final_message=False,
        add_generation_prompt=add_generation_prompt,
        **template_kwargs,
    )
    return rendered[0]


def main():
    now_str = PINNED_NOW.isoformat()
    inputs = {
        "now": now_str,
        "note": "strftime_now(fmt) renders PINNED 'now' with Python's strftime in the C locale",
        "conversations": CONVERSATIONS,
    }
    with open(os.path.join(HERE, "conversations.json"), "w", encoding="utf-8") as f:
        json.dump(inputs, f, ensure_ascii=False, indent=1)
        f.write("\n")
    # Render from the file as written, so the C++ tests read exactly these inputs.
    with open(os.path.join(HERE, "conversations.json"), encoding="utf-8") as f:
        conversations = json.load(f)["conversations"]

    names = sorted(n for n in os.listdir(TEMPLATE_DIR) if n.endswith(".jinja"))
    missing = [n for n in names if n not in TOKENS_BY_TEMPLATE]
    if missing:
        print("note: default tokens for", missing, file=sys.stderr)

    records = []
    for name in names:
        with open(os.path.join(TEMPLATE_DIR, name), encoding="utf-8", newline="") as f:
            text = f.read()
        bos, eos = TOKENS_BY_TEMPLATE.get(name, DEFAULT_TOKENS)
        for conv in conversations:
            if conv["tools"] is not None and not template_mentions_tools(text):
                continue
            for agp in (False, True):
                rec = {
                    "template": name,
                    "conversation": conv["name"],
                    "add_generation_prompt": agp,
                    "bos_token": bos,
                    "eos_token": eos,
                    "now": now_str,
                }
                try:
                    rec["output"] = render_one(text, conv["messages"], conv["tools"], agp, bos, eos)
                except Exception as e:  # record what transformers raises
                    rec["error"] = str(e)
                    rec["error_type"] = type(e).__name__
                records.append(rec)

    records.sort(key=lambda r: (r["template"], r["conversation"], r["add_generation_prompt"]))
    write_records("expected.json", records, "renders")


if __name__ == "__main__":
    main()
