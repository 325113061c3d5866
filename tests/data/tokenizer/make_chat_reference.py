#!/usr/bin/env python3
"""Reference chat renders: the models' real Jinja chat templates rendered with jinja2 the way
transformers' apply_chat_template does (sandboxed environment, trim_blocks, lstrip_blocks,
raise_exception). The template texts are the ones shipped in each model's tokenizer_config.json
(SmolLM2-135M-Instruct, Qwen2-7B-Instruct, Meta-Llama-3-8B-Instruct, Llama-2-7b-chat-hf,
Mistral-7B-Instruct-v0.1, gemma-2-*-it, gemma-3-*-it, Phi-3.5-mini-instruct). Output: chat_reference.json next to this file. tests/data/make_tiny_models.py puts the
same template texts into the tiny models.

    pip install jinja2
    python3 tests/data/tokenizer/make_chat_reference.py
"""
import json
import os

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))

TEMPLATES = {
    "smollm2": ("chatml", "<|im_start|>", "<|im_end|>",
                "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
                "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
                "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
                "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"),
    "qwen2": ("chatml", "<|endoftext|>", "<|im_end|>",
              "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
              "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
              "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
              "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"),
    "llama3": ("llama3", "<|begin_of_text|>", "<|eot_id|>",
               "{% set loop_messages = messages %}{% for message in loop_messages %}"
               "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}"
               "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
               "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"),
    "llama2": ("llama2", "<s>", "</s>",
               "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
               "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
               "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
               "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
               "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
               "{% if loop.index0 == 0 and system_message != false %}"
               "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
               "{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}"
               "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
               "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"),
    "mistral": ("mistral", "<s>", "</s>",
                "{{ bos_token }}{% for message in messages %}"
                "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
                "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
                "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
                "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}"
                "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}"),
}

GEMMA2_TEMPLATE = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}"
    "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}")
GEMMA3_TEMPLATE = r"""{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\n'}}
{%- endif -%}
"""
PHI3_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}"
    "{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}"
    "{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'assistant' %}"
    "{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}")

TEMPLATES.update({
    "gemma2": ("gemma", "<bos>", "<eos>", GEMMA2_TEMPLATE),
    "gemma3": ("gemma", "<bos>", "<eos>", GEMMA3_TEMPLATE),
    "phi3": ("phi3", "<s>", "<|endoftext|>", PHI3_TEMPLATE),
})

CONVERSATIONS = [
    ([{"role": "user", "content": "Hi"}], True),
    ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"}], True),
    ([{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"},
      {"role": "user", "content": "  How are you?\n"}], True),
    ([{"role": "system", "content": "S"}, {"role": "user", "content": "U1"},
      {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], False),
]


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    cases = []
    for name, (fmt, bos, eos, text) in TEMPLATES.items():
        template = env.from_string(text)
        for messages, gen in CONVERSATIONS:
            if name in ("mistral", "gemma2") and messages[0]["role"] == "system":
                continue   # the template raises: Mistral v0.1 and Gemma 2 have no system role
            rendered = template.render(messages=messages, add_generation_prompt=gen,
                                       bos_token=bos, eos_token=eos)
            cases.append({"model": name, "format": fmt, "bos_token": bos, "template": text,
                          "messages": messages, "add_generation_prompt": gen, "rendered": rendered})
    out = os.path.join(HERE, "chat_reference.json")
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"what": "jinja2 " + jinja2.__version__ + " renders of real chat templates "
                           "(see make_chat_reference.py)", "cases": cases}, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    print("wrote", out, len(cases), "cases")


if __name__ == "__main__":
    main()
