#!/usr/bin/env python3
"""Construct-level golden data for the chat-template interpreter.

Each case is a small template rendered in exactly the environment transformers compiles chat
templates in (transformers.utils.chat_template_utils._compile_jinja_template: an
ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, the loopcontrols and generation
extensions, transformers' tojson filter, and the raise_exception / strftime_now / dict / namespace
globals), then `.render(**context)`. strftime_now's clock is pinned to 2026-07-26 00:00:00.

Writes constructs.json next to this script: a list of
  {"name", "template", "context", "output"}  or  {"name", "template", "context", "error", "error_type"}
sorted by name. Usage: /work/venv-ref/bin/python make_constructs.py
"""

import datetime as _dt
import json
import os

import jinja2
import transformers
import transformers.utils.chat_template_utils as ctu

HERE = os.path.dirname(os.path.abspath(__file__))
PINNED_NOW = _dt.datetime(2026, 7, 26, 0, 0, 0)


class _PinnedDatetime(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return PINNED_NOW


ctu.datetime = _PinnedDatetime

MSGS = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "hello"},
]
PEOPLE = [
    {"name": "bob", "age": 30, "admin": True},
    {"name": "alice", "age": 25, "admin": False},
    {"name": "carol", "age": 35},
]

# (name, template, context)
CASES = [
    # ---- literals and printing -------------------------------------------------------------
    ("lit.int", "{{ 42 }}", {}),
    ("lit.int_negative", "{{ -7 }}", {}),
    ("lit.int_underscore", "{{ 1_000_000 }}", {}),
    ("lit.float_1_0", "{{ 1.0 }}", {}),
    ("lit.float_exp", "{{ 1e-5 }}", {}),
    ("lit.float_exp_big", "{{ 1.5e10 }}", {}),
    ("lit.float_sum", "{{ 0.1 + 0.2 }}", {}),
    ("lit.float_third", "{{ 1 / 3 }}", {}),
    ("lit.float_large", "{{ 1e16 }}", {}),
    ("lit.float_negative", "{{ -2.5 }}", {}),
    ("lit.string_single", "{{ 'single' }}", {}),
    ("lit.string_double", '{{ "double" }}', {}),
    ("lit.string_escapes", r"{{ 'a\nb\tc\\d\'e' }}", {}),
    ("lit.string_escape_double", r'{{ "say \"hi\"" }}', {}),
    ("lit.string_unicode_escape", r"{{ 'caf\u00e9' }}", {}),
    ("lit.string_raw_unicode", "{{ 'naïve 你好 🎉' }}", {}),
    ("lit.string_adjacent_concat", "{{ 'a' 'b' \"c\" }}", {}),
    ("lit.none", "{{ none }}", {}),
    ("lit.None", "{{ None }}", {}),
    ("lit.true_false", "{{ true }} {{ false }} {{ True }} {{ False }}", {}),
    ("lit.list", "{{ [1, 'two', 3.0, none, true] }}", {}),
    ("lit.list_empty", "{{ [] }}", {}),
    ("lit.dict", "{{ {'a': 1, 'b': 'x', 'c': [1, 2]} }}", {}),
    ("lit.dict_empty", "{{ {} }}", {}),
    ("lit.tuple", "{{ (1, 'a') }}", {}),
    ("lit.tuple_single", "{{ (1,) }}", {}),
    ("lit.nested", "{{ {'k': [{'x': none}, (1, 2)], 'q': \"it's\"} }}", {}),
    ("lit.string_in_list_quotes", "{{ [\"it's\", 'say \"x\"', 'both \\' \"'] }}", {}),
    ("print.context_list", "{{ xs }}", {"xs": [1, "a", None, True, 2.5]}),
    ("print.context_dict", "{{ d }}", {"d": {"b": 1, "a": {"z": [None]}}}),
    ("print.context_float_int_valued", "{{ x }} {{ y }}", {"x": 3.0, "y": 3}),
    ("print.unicode_list_repr", "{{ ['é', '你好', '😀'] }}", {}),
    ("print.newline_in_list_repr", "{{ ['a\nb'] }}", {}),
    # ---- access -------------------------------------------------------------------------
    ("access.dict_attr", "{{ m.role }}", {"m": {"role": "user"}}),
    ("access.dict_item", "{{ m['role'] }}", {"m": {"role": "user"}}),
    ("access.dict_missing_attr", "[{{ m.nope }}]", {"m": {"role": "user"}}),
    ("access.dict_missing_item", "[{{ m['nope'] }}]", {"m": {"role": "user"}}),
    # attribute syntax tries getattr first, so the dict method wins over the key "items"
    ("access.dict_key_shadows_method", "{{ m.items is string }} {{ m.items is callable }} {{ m.role }}", {"m": {"items": "key", "role": "r"}}),
    ("access.dict_key_shadows_method_item", "{{ m['items'] }}", {"m": {"items": "key wins"}}),
    ("access.list_index", "{{ xs[0] }} {{ xs[-1] }}", {"xs": [10, 20, 30]}),
    ("access.list_out_of_range", "[{{ xs[5] }}]", {"xs": [10, 20, 30]}),
    ("access.list_attr_digit", "{{ xs.1 }}", {"xs": [10, 20, 30]}),
    ("access.nested", "{{ messages[1].content }} {{ messages[-1]['role'] }}", {"messages": MSGS}),
    ("access.string_index", "{{ s[0] }}{{ s[-1] }}", {"s": "hello"}),
    ("access.variable_key", "{{ d[k] }}", {"d": {"a": 1}, "k": "a"}),
    ("slice.list_from1", "{{ xs[1:] }}", {"xs": [1, 2, 3, 4, 5]}),
    ("slice.list_drop_last", "{{ xs[:-1] }}", {"xs": [1, 2, 3, 4, 5]}),
    ("slice.list_reverse", "{{ xs[::-1] }}", {"xs": [1, 2, 3, 4, 5]}),
    ("slice.list_step2", "{{ xs[::2] }}", {"xs": [1, 2, 3, 4, 5]}),
    ("slice.list_neg_range", "{{ xs[-3:-1] }}", {"xs": [1, 2, 3, 4, 5]}),
    ("slice.list_out_of_range", "{{ xs[10:] }} {{ xs[:10] }}", {"xs": [1, 2, 3]}),
    ("slice.list_reverse_step2", "{{ xs[4:0:-2] }}", {"xs": [1, 2, 3, 4, 5]}),
    ("slice.string_from1", "{{ s[1:] }}", {"s": "hello"}),
    ("slice.string_drop_last", "{{ s[:-1] }}", {"s": "hello"}),
    ("slice.string_reverse", "{{ s[::-1] }}", {"s": "héllo😀"}),
    ("slice.string_step2", "{{ s[::2] }}", {"s": "abcdefg"}),
    ("slice.messages_tail", "{% for m in messages[1:] %}{{ m.role }},{% endfor %}", {"messages": MSGS}),
    # ---- operators ----------------------------------------------------------------------
    ("op.tilde", "{{ 'a' ~ 1 ~ none ~ true ~ [1] }}", {}),
    ("op.plus_strings", "{{ 'a' + 'b' }}", {}),
    ("op.plus_lists", "{{ [1] + [2, 3] }}", {}),
    ("op.plus_str_int", "{{ 'a' + 1 }}", {}),
    ("op.plus_int_float", "{{ 1 + 2.0 }}", {}),
    ("op.floordiv", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7.5 // 2 }}", {}),
    ("op.mod", "{{ 7 % 3 }} {{ -7 % 3 }}", {}),
    ("op.pow", "{{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }}", {}),
    ("op.div_float", "{{ 6 / 3 }} {{ 7 / 2 }}", {}),
    ("op.div_zero", "{{ 1 / 0 }}", {}),
    ("op.floordiv_zero", "{{ 1 // 0 }}", {}),
    ("op.mul", "{{ 3 * 4 }} {{ 1.5 * 2 }}", {}),
    ("op.string_times", "{{ '-' * 3 }}|{{ 3 * 'ab' }}", {}),
    ("op.list_times", "{{ [0] * 3 }}", {}),
    ("op.unary_minus_var", "{{ -x }}", {"x": 5}),
    ("op.precedence", "{{ 1 + 2 * 3 - 4 / 2 }}", {}),
    ("op.compare", "{{ 1 < 2 }} {{ 2 <= 2 }} {{ 3 > 4 }} {{ 'a' == 'a' }} {{ 1 != 1.0 }}", {}),
    ("op.compare_chained", "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }}", {}),
    ("op.compare_strings", "{{ 'abc' < 'abd' }} {{ 'B' < 'a' }}", {}),
    ("op.compare_int_float_eq", "{{ 1 == 1.0 }} {{ true == 1 }}", {}),
    ("op.compare_str_int", "{{ 'a' < 1 }}", {}),
    ("op.in_string", "{{ 'ell' in 'hello' }} {{ 'x' in 'hello' }} {{ 'x' not in 'hello' }}", {}),
    ("op.in_list", "{{ 2 in [1, 2] }} {{ 3 not in [1, 2] }}", {}),
    ("op.in_dict", "{{ 'role' in m }} {{ 'x' in m }}", {"m": {"role": "user"}}),
    ("op.in_undefined", "{{ 'a' in nope }}", {}),
    ("op.and_or_operands", "{{ 0 or 'x' }}|{{ 'a' and 'b' }}|{{ '' and 'b' }}|{{ none or [] }}", {}),
    ("op.not", "{{ not 0 }} {{ not 'a' }} {{ not [] }}", {}),
    ("op.not_in_precedence", "{{ not 'a' in 'abc' }}", {}),
    ("op.inline_if", "{{ 'yes' if x else 'no' }}", {"x": 1}),
    ("op.inline_if_no_else", "[{{ 'yes' if x }}]", {"x": 0}),
    ("op.inline_if_no_else_concat", "{{ 'a' ~ ('b' if false) ~ 'c' }}", {}),
    ("op.is_not_none", "{{ x is not none }} {{ y is not none }}", {"x": None, "y": 0}),
    ("op.truthiness", "{% for v in vals %}{{ 'T' if v else 'F' }}{% endfor %}",
     {"vals": [0, 1, 0.0, "", " ", [], [0], {}, {"a": 1}, None, False, True]}),
    # ---- if / for -------------------------------------------------------------------------
    ("if.elif_else", "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %};{% endfor %}", {}),
    ("if.undefined_falsy", "{% if nope %}T{% else %}F{% endif %}", {}),
    ("if.undefined_attr_chain", "{% if m.tool_calls %}T{% else %}F{% endif %}", {"m": {"role": "user"}}),
    ("for.loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }} {% endfor %}", {}),
    ("for.previtem_nextitem", "{% for x in [1, 2, 3] %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}", {}),
    ("for.previtem_defined", "{% for x in [1, 2] %}{{ loop.previtem is defined }}{% endfor %}", {}),
    ("for.cycle", "{% for x in range(5) %}{{ loop.cycle('a', 'b', 'c') }}{% endfor %}", {}),
    ("for.else_empty", "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}", {}),
    ("for.else_nonempty", "{% for x in [1] %}{{ x }}{% else %}empty{% endfor %}", {}),
    ("for.filter", "{% for x in [0, 1, '', 'a', none, 2] if x %}{{ x }}{{ loop.index }},{% endfor %}", {}),
    ("for.filter_loop_length", "{% for m in messages if m.role != 'system' %}{{ loop.length }}{{ m.role }} {% endfor %}", {"messages": MSGS}),
    ("for.items_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for.dict_iter_keys", "{% for k in d %}{{ k }};{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for.string_iter", "{% for c in 'hé😀' %}[{{ c }}]{% endfor %}", {}),
    ("for.break", "{% for x in range(10) %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("for.continue", "{% for x in range(5) %}{% if x is odd %}{% continue %}{% endif %}{{ x }}{% endfor %}", {}),
    ("for.nested_loop_outer", "{% for a in [1, 2] %}{% set outer = loop %}{% for b in 'xy' %}{{ outer.index }}{{ loop.index }}{{ b }} {% endfor %}{% endfor %}", {}),
    ("for.undefined_iter", "[{% for x in nope %}{{ x }}{% endfor %}]", {}),
    ("for.none_iter", "[{% for x in n %}{{ x }}{% endfor %}]", {"n": None}),
    ("for.int_iter", "[{% for x in 5 %}{{ x }}{% endfor %}]", {}),
    ("for.tuple_unpack_list_of_pairs", "{% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }};{% endfor %}", {}),
    ("for.recursive", "{% for n in tree recursive %}{{ n.name }}{% if n.kids %}({{ loop(n.kids) }}){% endif %}{% endfor %}",
     {"tree": [{"name": "a", "kids": [{"name": "b"}, {"name": "c", "kids": [{"name": "d"}]}]}, {"name": "e"}]}),
    ("for.loop_depth", "{% for n in tree recursive %}{{ loop.depth }}{{ loop.depth0 }}{% if n.kids %}{{ loop(n.kids) }}{% endif %}{% endfor %}",
     {"tree": [{"kids": [{"kids": [{}]}]}]}),
    ("for.loop_changed", "{% for x in [1, 1, 2, 2, 1] %}{{ loop.changed(x) }} {% endfor %}", {}),
    # ---- set / scoping ------------------------------------------------------------------
    ("set.basic", "{% set x = 1 %}{{ x }}", {}),
    ("set.multiple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}", {}),
    ("set.in_for_does_not_leak", "{% set x = 'outer' %}{% for i in [1, 2] %}{% set x = 'inner' ~ i %}{{ x }} {% endfor %}{{ x }}", {}),
    ("set.in_if_leaks", "{% set x = 'outer' %}{% if true %}{% set x = 'inner' %}{% endif %}{{ x }}", {}),
    ("set.counter_in_loop_fails", "{% set count = 0 %}{% for m in messages %}{% set count = count + 1 %}{% endfor %}{{ count }}", {"messages": MSGS}),
    ("set.block", "{% set x %}a {{ 1 + 1 }} b{% endset %}[{{ x }}]", {}),
    ("set.block_filter", "{% set x | upper %}abc{% endset %}{{ x }}", {}),
    ("set.namespace", "{% set ns = namespace(count=0, found=false) %}{% for m in messages %}{% set ns.count = ns.count + 1 %}{% if m.role == 'user' %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.count }} {{ ns.found }}", {"messages": MSGS}),
    ("set.namespace_print", "{% set ns = namespace(a=1) %}{{ ns.a }} {{ ns.b }}|", {}),
    ("set.namespace_dict_arg", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}", {}),
    ("set.namespace_underscore", "{% set ns = namespace(_x=1) %}{{ ns._x }}", {}),
    ("set.namespace_underscore_attr_set", "{% set ns = namespace() %}{% set ns._y = 1 %}{{ ns._y }}", {}),
    ("set.namespace_missing_attr", "{% set ns = namespace() %}[{{ ns.missing }}]", {}),
    ("set.overrides_context", "{% set bos_token = 'X' %}{{ bos_token }}", {"bos_token": "<s>"}),
    ("set.loop_var_after_loop", "{% for x in [1, 2] %}{% endfor %}[{{ x }}]", {}),
    # ---- macros ------------------------------------------------------------------------
    ("macro.defaults", "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Bob') }} {{ greet('Ann', 'Hi') }}", {}),
    ("macro.kwargs", "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet(greeting='Yo', name='Zed') }}", {}),
    ("macro.varargs_kwargs", "{% macro f(a) %}{{ a }}|{{ varargs }}|{{ kwargs }}{% endmacro %}{{ f(1, 2, 3, x=4) }}", {}),
    ("macro.missing_arg", "{% macro f(a, b) %}[{{ a }}][{{ b }}]{% endmacro %}{{ f(1) }}", {}),
    ("macro.too_many_args", "{% macro f(a) %}{{ a }}{% endmacro %}{{ f(1, 2) }}", {}),
    ("macro.caller", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ 1 + 1 }}{% endcall %}", {}),
    ("macro.caller_args", "{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(item) each([1, 2]) %}<{{ item }}>{% endcall %}", {}),
    ("macro.returns_text_used_in_expr", "{% macro f() %}abc{% endmacro %}{{ f() | upper }} {{ f() ~ 'd' }} {{ f() | length }}", {}),
    ("macro.sees_globals_not_caller_locals", "{% macro f() %}[{{ x }}][{{ g }}]{% endmacro %}{% set g = 'G' %}{% for x in [1] %}{{ f() }}{% endfor %}", {}),
    ("macro.context_var", "{% macro f() %}{{ bos_token }}{% endmacro %}{{ f() }}", {"bos_token": "<s>"}),
    ("macro.nested_call", "{% macro inner(x) %}({{ x }}){% endmacro %}{% macro outer(x) %}[{{ inner(x) }}]{% endmacro %}{{ outer('a') }}", {}),
    ("macro.recursion_depth5", "{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% else %}0{% endif %}{% endmacro %}{{ r(5) }}", {}),
    ("macro.render_json_schema_recursive",
     "{% macro t(s) %}{% if s.type == 'object' %}{ {% for k, v in s.properties.items() %}{{ k }}: {{ t(v) }}{% if not loop.last %}, {% endif %}{% endfor %} }{% elif s.type == 'array' %}{{ t(s['items']) }}[]{% else %}{{ s.type }}{% endif %}{% endmacro %}{{ t(schema) }}",
     {"schema": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {"type": "object", "properties": {"c": {"type": "integer"}}}}}}}),
    ("macro.whitespace_in_body", "{% macro f() %}\n  line\n{% endmacro %}[{{ f() }}]", {}),
    # ---- filter blocks, raw, comments ----------------------------------------------------
    ("block.filter", "{% filter upper %}hello {{ 'x' }}{% endfilter %}", {}),
    ("block.filter_chain", "{% filter trim | upper %}  hi  {% endfilter %}|", {}),
    ("block.raw", "{% raw %}{{ not rendered }} {% if %}{% endraw %}", {}),
    ("block.comment", "a{# comment {{ x }} #}b", {}),
    ("block.generation", "{% generation %}gen {{ 1 }}{% endgeneration %}", {}),
    # ---- whitespace control with trim_blocks / lstrip_blocks ----------------------------
    ("ws.trim_blocks_newline_after_tag", "{% if true %}\nyes\n{% endif %}\nafter", {}),
    ("ws.lstrip_indented_tag", "start\n    {% if true %}\n    body\n    {% endif %}\nend", {}),
    ("ws.lstrip_not_for_expressions", "a\n    {{ 'x' }}\nb", {}),
    ("ws.plus_disables_lstrip", "a\n    {%+ if true %}x{% endif %}\nb", {}),
    ("ws.minus_left", "a   \n  {%- if true %}x{% endif %}b", {}),
    ("ws.minus_right", "{% if true -%}   \n  x{% endif %}", {}),
    ("ws.expr_minus", "a  \n {{- 'x' -}} \n  b", {}),
    ("ws.comment_minus", "a  {#- c -#}  b", {}),
    ("ws.comment_line_trim", "a\n  {# comment #}\nb", {}),
    ("ws.tag_mid_line_not_lstripped", "a {% if true %}x{% endif %} b", {}),
    ("ws.set_lines", "{% set x = 1 %}\n{% set y = 2 %}\n{{ x }}{{ y }}\n", {}),
    ("ws.for_lines", "{% for m in messages %}\n{{ m.role }}: {{ m.content }}\n{% endfor %}\n", {"messages": MSGS}),
    ("ws.indented_for_lines", "<s>\n  {% for x in [1, 2] %}\n  - {{ x }}\n  {% endfor %}\n</s>", {}),
    ("ws.trailing_newline_stripped", "abc\n", {}),
    ("ws.trailing_two_newlines", "abc\n\n", {}),
    ("ws.trailing_newline_after_tag", "abc{% if true %}{% endif %}\n", {}),
    ("ws.crlf_normalized", "a\r\nb\r\n{% if true %}\r\nc\r\n{% endif %}\r\nd", {}),
    ("ws.crlf_in_string_literal", "{{ 'x\r\ny' }}", {}),
    ("ws.trim_blocks_only_one_newline", "{% if true %}\n\nx{% endif %}", {}),
    ("ws.tab_indent_lstrip", "a\n\t\t{% if true %}\n\t\tx\n\t\t{% endif %}\nb", {}),
    ("ws.block_end_minus_before_text", "{% for x in [1, 2] -%}\n  {{ x }}\n{%- endfor %}", {}),
    ("ws.expression_then_newline", "{{ 'a' }}\n{{ 'b' }}\n", {}),
    # ---- filters ----------------------------------------------------------------------
    ("filter.trim", "[{{ '  a b \n' | trim }}]", {}),
    ("filter.trim_chars", "[{{ 'xxaxx' | trim('x') }}]", {}),
    ("filter.length", "{{ [1, 2] | length }} {{ 'héllo' | length }} {{ {'a': 1} | length }} {{ [] | count }}", {}),
    ("filter.length_undefined", "{{ nope | length }}", {}),
    ("filter.length_none", "{{ n | length }}", {"n": None}),
    ("filter.first_last", "{{ [1, 2, 3] | first }} {{ [1, 2, 3] | last }} {{ 'abc' | first }} {{ 'abc' | last }}", {}),
    ("filter.first_empty", "[{{ [] | first }}]", {}),
    ("filter.join", "{{ [1, 'a', none] | join(', ') }}|{{ ['x', 'y'] | join }}", {}),
    ("filter.join_attribute", "{{ people | join(', ', attribute='name') }}", {"people": PEOPLE}),
    ("filter.map_attribute", "{{ people | map(attribute='name') | list }}", {"people": PEOPLE}),
    ("filter.map_attribute_default", "{{ people | map(attribute='admin', default='?') | list }}", {"people": PEOPLE}),
    ("filter.map_filter", "{{ ['a', 'b'] | map('upper') | join }}", {}),
    ("filter.map_generator_print", "{{ ([1, 2] | map('string') | string)[:17] }}", {}),
    ("filter.select_test", "{{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, 2, 3, 4] | select('gt', 2) | list }}", {}),
    ("filter.select_truthy", "{{ [0, 1, '', 'a'] | select | list }}", {}),
    ("filter.reject", "{{ [1, 2, 3, 4] | reject('even') | list }}", {}),
    ("filter.selectattr", "{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }}", {"messages": MSGS}),
    ("filter.selectattr_truthy", "{{ people | selectattr('admin') | map(attribute='name') | list }}", {"people": PEOPLE}),
    ("filter.selectattr_defined", "{{ people | selectattr('admin', 'defined') | list | length }}", {"people": PEOPLE}),
    ("filter.rejectattr", "{{ messages | rejectattr('role', 'eq', 'system') | map(attribute='role') | join(',') }}", {"messages": MSGS}),
    ("filter.selectattr_first", "{{ (messages | selectattr('role', '==', 'assistant') | first).content }}", {"messages": MSGS}),
    ("filter.default", "[{{ nope | default('dflt') }}] [{{ '' | default('dflt') }}] [{{ '' | default('dflt', true) }}] [{{ n | d('x') }}] [{{ n | default('x', boolean=true) }}]", {"n": None}),
    ("filter.default_false_value", "[{{ false | default('dflt') }}] [{{ 0 | d('dflt', true) }}]", {}),
    ("filter.tojson_string", "{{ 'a\"b\\\\c\n\té' | tojson }}", {}),
    ("filter.tojson_unicode_control", "{{ s | tojson }}", {"s": "é你好😀\u0001\u001f\u007f\u2028</script>&<>'"}),
    ("filter.tojson_nested_order", "{{ d | tojson }}", {"d": {"z": 1, "a": [1, 2.5, None, True, False], "m": {"y": "x", "b": {}}}}),
    ("filter.tojson_numbers", "{{ [1, 1.0, 0.1, 1e-7, 1e21, -0.0, 123456789012345678] | tojson }}", {}),
    ("filter.tojson_indent2", "{{ d | tojson(indent=2) }}", {"d": {"a": [1, {"b": None}], "c": "x", "e": [], "f": {}}}),
    ("filter.tojson_indent4", "{{ d | tojson(indent=4) }}", {"d": {"a": [1, 2], "c": {"d": "x"}}}),
    ("filter.tojson_separators", "{{ d | tojson(separators=(',', ':')) }}", {"d": {"a": [1, 2], "b": "x"}}),
    ("filter.tojson_sort_keys", "{{ d | tojson(sort_keys=true) }}", {"d": {"b": 1, "a": 2}}),
    ("filter.tojson_ensure_ascii", "{{ 'é😀' | tojson(ensure_ascii=true) }}", {}),
    ("filter.tojson_list", "{{ tools | tojson }}", {"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}),
    ("filter.tojson_tuple", "{{ (1, 'a') | tojson }}", {}),
    ("filter.tojson_none_bool", "{{ none | tojson }} {{ true | tojson }}", {}),
    ("filter.tojson_undefined", "{{ nope | tojson }}", {}),
    ("filter.tojson_generator", "{{ [1, 2] | map('string') | tojson }}", {}),
    ("filter.tojson_int_keys", "{{ {1: 'a', 2.5: 'b', none: 'c', false: 'd'} | tojson }}", {}),
    # transformers' tojson signature is (x, ensure_ascii=False, indent=None, ...): a positional arg is ensure_ascii
    ("filter.tojson_positional_arg_is_ensure_ascii", "{{ ['é', {'a': 1}] | tojson(2) }}", {}),
    ("filter.items", "{{ {'a': 1, 'b': 2} | items | list }}", {}),
    ("filter.dictsort", "{{ {'b': 1, 'A': 2, 'c': 0} | dictsort }}", {}),
    ("filter.dictsort_value", "{{ {'b': 1, 'a': 2, 'c': 0} | dictsort(by='value') }}", {}),
    ("filter.case", "{{ 'hello wORLD' | upper }} {{ 'HeLLo' | lower }} {{ 'hello wORLD it\\'s' | title }} {{ 'hello WORLD' | capitalize }}", {}),
    ("filter.replace", "{{ 'a-b-c' | replace('-', '+') }} {{ 'a-b-c' | replace('-', '', 1) }}", {}),
    ("filter.indent", "[{{ 'a\nb\n\nc' | indent }}]", {}),
    ("filter.indent_width_first", "[{{ 'a\nb\n\nc' | indent(2, first=true) }}]", {}),
    ("filter.indent_blank", "[{{ 'a\nb\n\nc' | indent(2, blank=true) }}]", {}),
    ("filter.indent_string_width", "[{{ 'a\nb' | indent('> ') }}]", {}),
    ("filter.int", "{{ '42' | int }} {{ 3.9 | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ '0x1A' | int(0, 16) }} {{ '3.7' | int }}", {}),
    ("filter.float", "{{ '1.5' | float }} {{ 2 | float }} {{ 'x' | float }}", {}),
    ("filter.string", "{{ 1 | string }} {{ none | string }} {{ [1, 'a'] | string }} {{ (1 | string) ~ 'x' }}", {}),
    ("filter.list", "{{ 'abc' | list }} {{ {'a': 1, 'b': 2} | list }}", {}),
    ("filter.reverse", "{{ [1, 2, 3] | reverse | list }} {{ 'abc' | reverse }}", {}),
    ("filter.unique", "{{ [1, 2, 1, 'a', 'A'] | unique | list }}", {}),
    ("filter.safe", "{{ '<b>&amp;</b>' | safe }} {{ '<b>' }}", {}),
    ("filter.abs_round", "{{ -3 | abs }} {{ 2.567 | round }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 2.567 | round(1, 'floor') }} {{ 3 | round }}", {}),
    ("filter.sum", "{{ [1, 2, 3] | sum }} {{ people | sum(attribute='age') }} {{ [0.1, 0.2] | sum }}", {"people": PEOPLE}),
    ("filter.min_max", "{{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ ['b', 'A', 'c'] | min }} {{ people | max(attribute='age') }}", {"people": PEOPLE}),
    ("filter.sort", "{{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort }} {{ [3, 1, 2] | sort(reverse=true) }}", {}),
    ("filter.sort_attribute", "{{ people | sort(attribute='age') | map(attribute='name') | join(',') }}", {"people": PEOPLE}),
    ("filter.wordcount", "{{ 'one two  three\nfour' | wordcount }}", {}),
    ("filter.center", "[{{ 'ab' | center(8) }}]", {}),
    ("filter.truncate", "{{ 'hello wonderful world' | truncate(12) }}|{{ 'hello wonderful world' | truncate(12, true) }}|{{ 'short' | truncate(12) }}", {}),
    ("filter.batch", "{{ [1, 2, 3, 4, 5] | batch(2) | list }} {{ [1, 2, 3] | batch(2, 'x') | list }}", {}),
    ("filter.slice", "{{ [1, 2, 3, 4, 5] | slice(2) | list }}", {}),
    ("filter.format", "{{ '%s-%d' | format('a', 3) }} {{ '%(x)s' | format(x='y') }}", {}),
    ("filter.escape", "{{ '<a href=\"x\">&</a>' | e }}", {}),
    ("filter.attr", "{{ m | attr('role') }}", {"m": {"role": "user"}}),
    ("filter.unknown", "{{ 'x' | no_such_filter }}", {}),
    ("filter.unknown_in_untaken_branch", "{% if false %}{{ 'x' | no_such_filter }}{% endif %}ok", {}),
    # an unknown filter/test is a compile-time TemplateAssertionError, except inside an `if` body or an
    # inline-if branch, where it becomes a TemplateRuntimeError raised only if that branch runs
    ("filter.unknown_in_taken_branch", "{% if true %}{{ 'x' | no_such_filter }}{% endif %}", {}),
    ("filter.unknown_in_inline_if_untaken", "{{ 'a' if true else ('x' | no_such_filter) }}", {}),
    ("filter.unknown_in_empty_for_body", "{% for x in [] %}{{ x | no_such_filter }}{% endfor %}ok", {}),
    ("filter.unknown_in_uncalled_macro", "{% macro f() %}{{ 1 | no_such_filter }}{% endmacro %}ok", {}),
    ("test.unknown_in_untaken_branch", "{% if false %}{{ 1 is no_such_test }}{% endif %}ok", {}),
    ("filter.groupby", "{% for g in people | groupby('admin', default=false) %}{{ g.grouper }}:{{ g.list | map(attribute='name') | join('/') }};{% endfor %}", {"people": PEOPLE}),
    ("filter.striptags", "{{ '<b>bold</b>  text' | striptags }}", {}),
    ("filter.wordwrap", "{{ 'aaa bbb ccc ddd' | wordwrap(7) }}", {}),
    # ---- tests ----------------------------------------------------------------------
    ("test.defined", "{{ x is defined }} {{ nope is defined }} {{ n is defined }} {{ m.a is defined }} {{ m.b is defined }}", {"x": 1, "n": None, "m": {"a": 1}}),
    ("test.undefined", "{{ nope is undefined }} {{ x is undefined }}", {"x": 0}),
    ("test.none", "{{ n is none }} {{ 0 is none }} {{ nope is none }}", {"n": None}),
    ("test.string", "{{ 'a' is string }} {{ 1 is string }} {{ none is string }}", {}),
    ("test.mapping", "{{ {} is mapping }} {{ [] is mapping }} {{ 'a' is mapping }}", {}),
    ("test.iterable", "{{ [] is iterable }} {{ 'a' is iterable }} {{ {} is iterable }} {{ 1 is iterable }} {{ nope is iterable }}", {}),
    ("test.sequence", "{{ [] is sequence }} {{ 'a' is sequence }} {{ {} is sequence }} {{ 1 is sequence }}", {}),
    ("test.number", "{{ 1 is number }} {{ 1.5 is number }} {{ '1' is number }} {{ true is number }}", {}),
    ("test.integer_float", "{{ 1 is integer }} {{ 1.0 is integer }} {{ 1.0 is float }} {{ 1 is float }} {{ true is integer }}", {}),
    ("test.boolean", "{{ true is boolean }} {{ 1 is boolean }} {{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }}", {}),
    ("test.equalto", "{{ 1 is equalto 1 }} {{ 1 is equalto(2) }} {{ 'a' is eq 'a' }} {{ 'a' is ne 'b' }}", {}),
    ("test.operator_name_syntax_error", "{{ 'a' is == 'a' }}", {}),
    ("test.compare", "{{ 1 is lt 2 }} {{ 2 is gt(1) }} {{ 2 is le 2 }} {{ 2 is ge 3 }} {{ 1 is lessthan 2 }} {{ 1 is greaterthan 2 }}", {}),
    ("test.in", "{{ 1 is in [1, 2] }} {{ 'a' is in('xyz') }}", {}),
    ("test.odd_even_divisible", "{{ 3 is odd }} {{ 3 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(2) }}", {}),
    ("test.sameas", "{{ none is sameas none }} {{ true is sameas(true) }} {{ 1 is sameas 1.0 }}", {}),
    ("test.callable", "{{ raise_exception is callable }} {{ 'a' is callable }} {{ 'a'.upper is callable }} {{ namespace is callable }}", {}),
    ("test.lower_upper", "{{ 'abc' is lower }} {{ 'aBc' is lower }} {{ 'ABC' is upper }}", {}),
    ("test.not", "{{ 1 is not string }} {{ nope is not defined }}", {}),
    ("test.unknown", "{{ 1 is no_such_test }}", {}),
    # ---- Python methods in the sandbox ----------------------------------------------------
    ("method.str_strip", "[{{ '  a \n'.strip() }}][{{ 'xxaxx'.strip('x') }}][{{ '  a '.lstrip() }}][{{ '  a '.rstrip() }}][{{ 'abcba'.lstrip('ab') }}][{{ 'abcba'.rstrip('ab') }}]", {}),
    ("method.str_split", "{{ 'a b  c\n'.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ ''.split(',') }} {{ ''.split() }}", {}),
    ("method.str_rsplit", "{{ 'a,b,c'.rsplit(',', 1) }} {{ 'a b c'.rsplit() }}", {}),
    ("method.str_split_index", "{{ '</think>x'.split('</think>')[-1] }} {{ 'a<sep>b<sep>c'.split('<sep>')[0] }}", {}),
    ("method.str_starts_ends", "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith(('x', 'h')) }} {{ 'hello'.endswith(('a', 'b')) }}", {}),
    ("method.str_case", "{{ 'hello wORLD'.upper() }} {{ 'HeLLo'.lower() }} {{ 'hello wORLD'.title() }} {{ 'hello WORLD'.capitalize() }}", {}),
    ("method.str_replace", "{{ 'aaa'.replace('a', 'b') }} {{ 'aaa'.replace('a', 'b', 2) }}", {}),
    ("method.str_find_count", "{{ 'hello'.find('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.index('e') }}", {}),
    ("method.str_join", "{{ ', '.join(['a', 'b']) }} {{ ''.join('xyz') }}", {}),
    ("method.str_join_nonstr", "{{ ','.join([1, 2]) }}", {}),
    ("method.str_format", "{{ '{} and {}'.format('a', 1) }} {{ '{x}-{y}'.format(x=1, y='z') }} {{ '{:>4}|{:.2f}'.format('a', 3.14159) }}", {}),
    ("method.str_format_attr_unsafe", "{{ '{0.__class__}'.format('a') }}", {}),
    ("method.str_splitlines", "{{ 'a\nb\r\nc\n'.splitlines() }}", {}),
    ("method.str_misc", "{{ 'abc'.isalpha() }} {{ '123'.isdigit() }} {{ '  '.isspace() }} {{ 'a'.zfill(3) }} {{ 'a-b'.partition('-') }} {{ 'ab'.center(6, '*') }}", {}),
    ("method.str_on_content", "{{ messages[0].content.strip().upper() }}", {"messages": MSGS}),
    ("method.str_method_on_undefined", "{{ nope.strip() }}", {}),
    ("method.str_method_on_none", "{{ n.strip() }}", {"n": None}),
    ("method.dict_get", "{{ m.get('role') }} {{ m.get('x') }} {{ m.get('x', 'dflt') }}", {"m": {"role": "user"}}),
    ("method.dict_items_keys_values", "{{ d.items() | list }} {{ d.keys() | list }} {{ d.values() | list }}", {"d": {"a": 1, "b": 2}}),
    ("method.dict_items_print", "{{ d.items() }}", {"d": {"a": 1}}),
    ("method.dict_keys_in", "{{ 'a' in d.keys() }}", {"d": {"a": 1}}),
    ("method.list_index_count", "{{ xs.index(2) }} {{ xs.count(1) }}", {"xs": [1, 2, 1]}),
    ("method.list_append_refused", "{% set xs = [1] %}{{ xs.append(2) }}{{ xs }}", {}),
    ("method.list_append_context_refused", "{{ xs.append(2) }}", {"xs": [1]}),
    ("method.dict_update_refused", "{% set d = {} %}{{ d.update({'a': 1}) }}", {}),
    ("method.list_pop_refused", "{{ xs.pop() }}", {"xs": [1]}),
    ("method.dict_setdefault_refused", "{{ d.setdefault('a', 1) }}", {"d": {}}),
    ("method.underscore_attr_refused", "{{ 'a'.__class__ }}", {}),
    ("method.underscore_attr_dict", "[{{ m._private }}]", {"m": {"_private": "p"}}),
    ("method.underscore_item_dict", "[{{ m['_private'] }}]", {"m": {"_private": "p"}}),
    ("method.dict_global", "{{ dict(a=1, b='x') }} {{ dict([['k', 'v']]) }} {{ dict.fromkeys(['a', 'b'], 0) }}", {}),
    # ---- undefined ------------------------------------------------------------------
    ("undef.print", "[{{ nope }}]", {}),
    ("undef.falsy", "{{ 'T' if nope else 'F' }} {{ not nope }}", {}),
    ("undef.attr_of_undefined", "{{ nope.attr }}", {}),
    ("undef.item_of_undefined", "{{ nope['x'] }}", {}),
    ("undef.missing_attr_printed", "[{{ m.a }}]", {"m": {}}),
    ("undef.missing_attr_chain", "{{ m.a.b }}", {"m": {}}),
    ("undef.default", "{{ nope | default('d') }} {{ m.a | default('e') }}", {"m": {}}),
    ("undef.length", "{{ nope | length }}", {}),
    ("undef.compare", "{{ nope == none }} {{ nope == nope2 }} {{ nope != 1 }}", {}),
    ("undef.concat_tilde", "[{{ 'a' ~ nope ~ 'b' }}]", {}),
    ("undef.concat_plus", "{{ 'a' + nope }}", {}),
    ("undef.is_none", "{{ nope is none }} {{ nope is not none }}", {}),
    ("undef.call", "{{ nope() }}", {}),
    ("undef.upper_filter", "[{{ nope | upper }}]", {}),
    ("undef.join", "[{{ nope | join(',') }}]", {}),
    ("undef.tojson", "{{ m.a | tojson }}", {"m": {}}),
    ("undef.in_list", "{{ nope in [1] }}", {}),
    ("undef.trim", "[{{ nope | trim }}]", {}),
    ("undef.int", "{{ nope | int }}", {}),
    # ---- globals --------------------------------------------------------------------
    ("global.raise_exception", "a{{ raise_exception('Bad role: ' ~ 'x') }}b", {}),
    ("global.raise_exception_in_branch", "{% if messages[0].role != 'user' %}{{ raise_exception('first message must be user') }}{% endif %}", {"messages": MSGS}),
    ("global.strftime_d_b_Y", "{{ strftime_now('%d %b %Y') }}", {}),
    ("global.strftime_iso", "{{ strftime_now('%Y-%m-%d') }}", {}),
    ("global.strftime_B_d_Y", "{{ strftime_now('%B %d, %Y') }}", {}),
    ("global.strftime_A", "{{ strftime_now('%A') }}", {}),
    ("global.strftime_time", "{{ strftime_now('%H:%M:%S %j %a %-d') }}", {}),
    ("global.strftime_defined", "{{ strftime_now is defined }}", {}),
    ("global.range", "{{ range(3) | list }} {{ range(2, 10, 3) | list }} {{ range(5, 0, -2) | list }}", {}),
    ("global.range_print", "{{ range(3) }}", {}),
    ("global.range_too_big", "{{ range(200000) | length }}", {}),
    ("global.dict_call", "{{ dict(a=1) }}", {}),
    ("global.lipsum_defined", "{{ lipsum is defined }} {{ cycler is defined }} {{ joiner is defined }}", {}),
    ("global.joiner", "{% set j = joiner(', ') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %}", {}),
    ("global.cycler", "{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}", {}),
    # ---- string formatting ---------------------------------------------------------------
    ("fmt.percent_s", "{{ 'x=%s' % 5 }} {{ 'x=%s' % none }} {{ 'x=%s' % [1] }}", {}),
    ("fmt.percent_d_f", "{{ '%d' % 3.9 }} {{ '%.2f' % 3.14159 }} {{ '%5.1f|' % 2.25 }} {{ '%03d' % 7 }}", {}),
    ("fmt.percent_tuple", "{{ '%s and %s' % ('a', 'b') }}", {}),
    ("fmt.percent_dict", "{{ '%(a)s' % {'a': 1} }}", {}),
    ("fmt.percent_missing", "{{ '%s %s' % ('a',) }}", {}),
    ("fmt.percent_r", "{{ '%r' % 'x' }}", {}),
    ("more.filter_binds_tighter_than_div", "{{ 10 / 4 | int }} {{ (10 / 4) | int }}", {}),
    ("more.unary_minus_and_filter", "{{ -1 | abs }} {{ (-1) | abs }}", {}),
    # Jinja's `~` binds tighter than `+`: this is ('a' ~ 1) + 2
    ("more.tilde_binds_tighter_than_plus", "{{ 'a' ~ 1 + 2 }}", {}),
    ("more.tilde_with_parenthesised_plus", "{{ 'a' ~ (1 + 2) }}", {}),
    ("more.length_compare", "{{ xs | length > 1 }} {{ '' | length == 0 }}", {"xs": [1, 2]}),
    ("more.not_is_precedence", "{{ not x is none }}", {"x": None}),
    ("more.and_short_circuit_undefined", "{{ (nope is defined and nope.x) }} {{ nope is defined and nope.x }}", {}),
    ("more.string_escapes_hex_U", r"{{ '\x41\U0001F600\d' }}", {}),
    ("more.literal_braces", "{{ '{{' }} {{ '}}' }} {{ '{%' }}", {}),
    ("more.trailing_commas", "{{ [1, 2,] }} {{ {'a': 1,} }}", {}),
    ("more.set_unpack_string", "{% set a, b = 'xy' %}{{ b }}{{ a }}", {}),
    ("more.default_no_args", "[{{ nope | default }}]", {}),
    ("more.map_with_args", "{{ ['aa', 'ba'] | map('replace', 'a', 'x') | list }}", {}),
    ("more.selectattr_in", "{{ messages | selectattr('role', 'in', ['user', 'system']) | map(attribute='role') | list }}", {"messages": MSGS}),
    ("more.namespace_print", "{{ namespace(a=[1], b='x') }}", {}),
    ("more.items_on_string", "{{ 'abc'.items() }}", {}),
    ("more.list_method_missing", "{{ xs.upper() }}", {"xs": [1]}),
    ("more.undefined_attr_is_defined", "{{ nope.attr is defined }}", {}),
    ("more.index_empty_list_then_item", "{{ messages[0]['role'] == 'system' }}", {"messages": []}),
    ("more.index_empty_list_is_defined", "{{ messages[0] is defined }}", {"messages": []}),
    ("more.loop_outside_loop", "[{{ loop.index }}]", {}),
    ("more.int_of_float", "{{ 1.0 | int }} {{ -2.7 | int }} {{ true | int }}", {}),
    ("more.string_of_float_from_context", "{{ x | string }} {{ x ~ '' }} {{ y }}", {"x": 2.50, "y": 1e-4}),
    ("more.big_int", "{{ 2 ** 64 }} {{ 9007199254740993 }}", {}),
    ("more.items_filter_undefined", "[{{ nope | items | list }}]", {}),
    ("more.dict_literal_print_keys_order", "{{ {'z': 1, 'a': 2} | list }}", {}),
    ("more.bool_arith", "{{ true + 1 }} {{ false * 3 }}", {}),
    ("more.str_not_callable", "{{ 'a'() }}", {}),
    ("more.is_string_on_content_parts", "{{ c is string }} {{ c is iterable }} {{ c is sequence }} {{ c is mapping }}", {"c": [{"type": "text", "text": "x"}]}),
    ("ws.chatml_realistic",
     "{%- for message in messages %}\n    {%- if message.role == 'system' %}\n        {{- '<|im_start|>system\\n' + message.content + '<|im_end|>\\n' }}\n    {%- else %}\n        {{- '<|im_start|>' + message.role + '\\n' + message.content | trim + '<|im_end|>\\n' }}\n    {%- endif %}\n{%- endfor %}\n{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n{%- endif %}\n",
     {"messages": MSGS, "add_generation_prompt": True}),
    ("ws.llama2_realistic",
     "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + message['content'] + ' ' + eos_token }}{% endif %}{% endfor %}",
     {"messages": MSGS, "bos_token": "<s>", "eos_token": "</s>"}),
    ("ws.indented_expression_lines", "{% for x in [1, 2] %}\n    {{ x }}\n{% endfor %}", {}),
    ("ws.indented_expression_minus", "{% for x in [1, 2] %}\n    {{- x }}\n{% endfor %}", {}),
    ("ws.trim_after_comment", "a{# c #}\nb", {}),
    ("ws.no_trim_after_expression", "{{ 'a' }}\nb", {}),
    ("ws.raw_trim", "{% raw %}\n  {{ x }}\n{% endraw %}\nz", {}),
    ("ws.minus_block_end_strips_all_newlines", "{% if true -%}\n\n\n  x\n{%- endif %}\n\ny", {}),
    ("ws.lstrip_with_minus_start", "a\n    {%- if true %}b{% endif %}", {}),
    ("ws.text_only_line_kept", "a\n   \nb", {}),
    ("ws.lstrip_only_whitespace_before_tag", "a  b  {% if true %}x{% endif %}", {}),
    # ---- realistic chat-template idioms ------------------------------------------------
    ("idiom.system_split", "{% if messages[0].role == 'system' %}{% set sys = messages[0].content %}{% set rest = messages[1:] %}{% else %}{% set sys = '' %}{% set rest = messages %}{% endif %}[{{ sys }}]{{ rest | length }}", {"messages": MSGS}),
    ("idiom.alternation_check", "{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% endfor %}ok", {"messages": MSGS[1:]}),
    ("idiom.content_string_or_parts", "{% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content %}{% if p.type == 'text' %}{{ p.text }}{% endif %}{% endfor %}{% endif %}|{% endfor %}",
     {"messages": [{"role": "user", "content": "plain"}, {"role": "user", "content": [{"type": "text", "text": "A"}, {"type": "image"}, {"type": "text", "text": "B"}]}]}),
    ("idiom.tool_call_arguments", "{% for tc in m.tool_calls %}{% set f = tc.function if tc.function is defined else tc %}{{ f.name }}{% if f.arguments is string %}{{ f.arguments }}{% else %}{{ f.arguments | tojson }}{% endif %}{% endfor %}",
     {"m": {"tool_calls": [{"type": "function", "function": {"name": "a", "arguments": {"x": 1, "y": "é"}}}, {"function": {"name": "b", "arguments": "{\"z\": 2}"}}]}}),
    ("idiom.last_user_index", "{% set ns = namespace(last=-1) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.last = loop.index0 %}{% endif %}{% endfor %}{{ ns.last }}", {"messages": MSGS + [{"role": "user", "content": "x"}]}),
    ("idiom.reverse_loop", "{% for m in messages[::-1] %}{{ m.role[0] }}{% endfor %}", {"messages": MSGS}),
    ("idiom.think_split", "{% set c = content %}{% if '</think>' in c %}{% set r = c.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}{% set c = c.split('</think>')[-1].lstrip('\n') %}{% endif %}[{{ r }}][{{ c }}]", {"content": "<think>\nreason\n</think>\n\nanswer"}),
    ("idiom.generation_prompt", "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}", {"messages": MSGS, "add_generation_prompt": True}),
    ("idiom.tools_none_check", "{% if tools %}T{% endif %}{% if tools is not none %}N{% endif %}{% if tools is defined %}D{% endif %}|", {"tools": None}),
    ("idiom.tools_none_iterate", "{% for t in tools %}{{ t }}{% endfor %}", {"tools": None}),
    ("idiom.tools_none_length", "{{ tools | length }}", {"tools": None}),
    ("idiom.bos_plus", "{{ bos_token + 'x' }}{{ eos_token }}", {"bos_token": "<s>", "eos_token": "</s>"}),
    ("idiom.json_in_loop", "{% for t in tools %}{{ t | tojson(indent=4) }}\n\n{% endfor %}", {"tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}]}),
    ("idiom.loop_messages_last", "{% for m in messages %}{% if loop.last and m.role == 'assistant' %}LAST{% endif %}{% endfor %}", {"messages": MSGS}),
    ("idiom.string_compare_role_in_list", "{% for m in messages %}{{ m.role in ['user', 'system'] }}{% endfor %}", {"messages": MSGS}),
]


def render_case(template, context):
    compiled = ctu._compile_jinja_template(template)
    return compiled.render(**context)


def main():
    names = [c[0] for c in CASES]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SystemExit(f"duplicate case names: {sorted(dup)}")

    out = []
    for name, template, context in CASES:
        # round-trip the context through JSON so it is exactly what the C++ side reads
        context = json.loads(json.dumps(context))
        rec = {"name": name, "template": template, "context": context}
        try:
            rec["output"] = render_case(template, context)
        except Exception as e:
            rec["error"] = str(e)
            rec["error_type"] = type(e).__name__
        out.append(rec)
    out.sort(key=lambda r: r["name"])
    with open(os.path.join(HERE, "constructs.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")

    ok = sum(1 for r in out if "output" in r)
    errs = {}
    for r in out:
        if "error_type" in r:
            errs[r["error_type"]] = errs.get(r["error_type"], 0) + 1
    print(f"transformers {transformers.__version__}, jinja2 {jinja2.__version__}, now={PINNED_NOW.isoformat()}")
    print(f"{len(out)} cases: {ok} ok, {len(out) - ok} raised {errs}")


if __name__ == "__main__":
    main()
