#!/usr/bin/env python3
"""Layer check: every #include "core/...", "app/..." or "kernels/..." in core/, app/ and kernels/ must
point down the layer map of docs/ARCHITECTURE.md. Prints one line per broken arrow (file:line, the
include, the rule it breaks, what is allowed) and exits 1; exits 0 when all arrows point down.
Standard library only; it reads the text of the files and does not run the preprocessor, so an
include inside `#if 0` counts too. Does not check tests/ (tests may include any layer).

usage: scripts/check_layers.py [--root DIR] [--print-map] [--self-test]
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

# Core layers, bottom up. A core module may include the modules of lower levels; modules on one
# level are siblings and may not include each other. The same order is in core/CMakeLists.txt,
# where each layer's library links only the layer(s) below it.
CORE_LEVELS = {
    "common": 0,     # errors, atomic files, path checks: no LibTorch (torch_pch.h is the PCH only)
    "io": 1,         # GGUF / safetensors / config readers, dequantization
    "quant": 2,      # weight kernels over stored ggml blocks
    "tokenizer": 2,  # BPE / SPM tokenizers, chat templates; a sibling of quant
    "ops": 3,        # LibTorch adapters over kernels/ that the cache needs (gather)
    "kv": 4,         # the KV cache and its gather
    "model": 5,      # the transformer, decoding, sampling, generation
    "snapkv": 6,     # scoring, policies, selection
    "compare": 7,    # full vs compressed runs in lock step
    "session": 8,    # the facade app/ talks to
    "eval": 9,       # needle / QA grids over a session
}

# kernels/ exposes one header to core; the rest of kernels/ is private to it.
KERNELS_PUBLIC = {"kernels/snapkv_kernels.h"}

# What app/gui and app/cli may include of core: the session facade and evaluation (the two
# interfaces app/ is written against), core/common (errors, atomic files, path checks: no LibTorch),
# and the plain value-type headers below, which the session interface already exposes as
# parameters or results. Every core header app/ includes must also be free of LibTorch
# (transitively), so the GUI and the CLI compile without ATen.
APP_CORE_MODULES = {"session", "eval", "common"}
APP_VALUE_HEADERS = {
    "core/snapkv/snapkv_params.h": "SnapKVParams, the policy settings (session.h takes them)",
    "core/io/model_config.h": "ModelConfig, what a loaded model is (session.h returns it)",
    "core/compare/compare_types.h": "the full-vs-compressed result types (session.h returns them)",
    "core/tokenizer/chat_template.h": "render_chat_template, for `snapkv chat-template` (no LibTorch)",
    "core/snapkv/policy_table.h": "the policy table: names, what each policy reads (lists and forms)",
    "core/snapkv/params_json.h": "the one JSON form of parameters and selections (CLI and app write it)",
}
APP_MODULES = ("app/gui", "app/cli")  # siblings: neither includes the other
TORCH_INCLUDE = re.compile(r'^\s*#\s*include\s*<(ATen|torch|c10)/')
INCLUDE = re.compile(r'^\s*#\s*include\s*"((?:core|app|kernels)/[^"]+)"')
SOURCE_EXT = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")


def module_of(path):
    """'core/kv/kv_cache.h' -> 'kv'; 'app/gui/views/x.h' -> 'app/gui'; 'kernels/x.h' -> 'kernels'."""
    parts = path.split("/")
    if parts[0] == "core" and len(parts) > 2:
        return parts[1]
    if parts[0] == "app" and len(parts) > 2:
        return "app/" + parts[1]
    if parts[0] == "kernels":
        return "kernels"
    return None


def describe_allowed(mod):
    if mod in CORE_LEVELS:
        below = sorted((m for m, lv in CORE_LEVELS.items() if lv < CORE_LEVELS[mod]),
                       key=lambda m: -CORE_LEVELS[m])
        return "core/" + mod + " may include " + ", ".join(["core/" + m for m in below] +
                                                           sorted(KERNELS_PUBLIC))
    if mod in APP_MODULES:
        return (mod + " may include " + ", ".join("core/" + m for m in sorted(APP_CORE_MODULES)) +
                " and the value-type headers " + ", ".join(sorted(APP_VALUE_HEADERS)))
    if mod == "kernels":
        return "kernels/ includes only kernels/ (no LibTorch, no core)"
    return "unknown module"


def rule_broken(src, inc):
    """The reason the arrow src -> inc is against the layer map, or None when it is allowed."""
    a, b = module_of(src), module_of(inc)
    if a is None:
        return None
    if b is None:
        return "'%s' is in no module of the layer map" % inc
    if b not in CORE_LEVELS and b not in APP_MODULES and b != "kernels":
        return "'%s' is in module '%s', which the layer map does not know (add it to CORE_LEVELS)" % (inc, b)
    if a not in CORE_LEVELS and a not in APP_MODULES and a != "kernels":
        return "'%s' is in module '%s', which the layer map does not know (add it to CORE_LEVELS)" % (src, a)
    if inc.endswith("_impl.h") and a != b:
        return "%s -> %s: a *_impl.h header is private to its own module" % (a, b)
    if a == b:
        return None
    if a == "kernels":
        return "kernels -> %s: kernels/ sits below core and sees neither core nor app" % b
    if a in CORE_LEVELS:
        if b in APP_MODULES:
            return "%s -> %s: core never includes app/" % (a, b)
        if b == "kernels":
            if inc in KERNELS_PUBLIC:
                return None
            return "%s -> kernels: core sees only %s of kernels/" % (a, ", ".join(sorted(KERNELS_PUBLIC)))
        la, lb = CORE_LEVELS[a], CORE_LEVELS[b]
        if lb > la:
            return "%s (level %d) -> %s (level %d): the arrow points up" % (a, la, b, lb)
        if lb == la:
            return "%s -> %s: siblings on level %d do not include each other" % (a, b, la)
        return None
    # a is app/gui or app/cli
    if b in APP_MODULES:
        return "%s -> %s: the two apps are siblings" % (a, b)
    if b == "kernels":
        return "%s -> kernels: app/ reaches the kernels only through core" % a
    if b in APP_CORE_MODULES or inc in APP_VALUE_HEADERS:
        return None
    return "%s -> core/%s: app/ sees core through core/session, core/eval, core/common and " \
           "the value-type headers only" % (a, b)


def scan(root):
    """{relative path: [(line number, included path)]} for the sources of core/, app/, kernels/."""
    found = {}
    for top in ("core", "app", "kernels"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(SOURCE_EXT):
                    continue
                full = os.path.join(d, f)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                incs = []
                with open(full, encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if m:
                            incs.append((n, m.group(1)))
                found[rel] = incs
    return found


def torch_path(root, header, graph, seen):
    """A chain of core headers from header to one that includes ATen/torch/c10, or None."""
    if header in seen:
        return None
    seen.add(header)
    full = os.path.join(root, header)
    if not os.path.isfile(full):
        return None
    with open(full, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            m = TORCH_INCLUDE.match(line)
            if m:
                return [header, "<" + line.split("<", 1)[1].split(">", 1)[0] + ">"]
    for _, inc in graph.get(header, []):
        if inc.startswith("core/"):
            chain = torch_path(root, inc, graph, seen)
            if chain:
                return [header] + chain
    return None


def check(root):
    graph = scan(root)
    errors = []
    for src in sorted(graph):
        for n, inc in graph[src]:
            why = rule_broken(src, inc)
            if why:
                errors.append("%s:%d: #include \"%s\": %s (%s)" %
                              (src, n, inc, why, describe_allowed(module_of(src))))
            elif module_of(src) in APP_MODULES and inc.startswith("core/"):
                chain = torch_path(root, inc, graph, set())
                if chain:
                    errors.append("%s:%d: #include \"%s\": app/ must compile without LibTorch, but %s" %
                                  (src, n, inc, " -> ".join(chain)))
    return graph, errors


def print_map():
    by_level = {}
    for m, lv in CORE_LEVELS.items():
        by_level.setdefault(lv, []).append("core/" + m)
    print("app/gui, app/cli  (siblings) -> core/session, core/eval, core/common, value-type headers:")
    for h, why in sorted(APP_VALUE_HEADERS.items()):
        print("    %s  (%s)" % (h, why))
    for lv in sorted(by_level, reverse=True):
        print("level %d: %s" % (lv, ", ".join(sorted(by_level[lv]))))
    print("bottom : kernels/ (core sees only %s)" % ", ".join(sorted(KERNELS_PUBLIC)))


def self_test():
    """Copies core/, app/, kernels/ to a temporary folder, adds one include against the direction
    per rule, and checks that each is reported; the untouched copy must pass."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tmp = tempfile.mkdtemp(prefix="check_layers_")
    try:
        for top in ("core", "app", "kernels"):
            shutil.copytree(os.path.join(here, top), os.path.join(tmp, top))
        # Reports already there (a tree with a wrong include of its own) are set aside, so this
        # tests the check and the plain run tests the tree.
        _, baseline = check(tmp)
        baseline = set(baseline)
        cases = [  # (file that gets the include, include, words the report must contain)
            ("core/kv/kv_cache.cpp", "core/snapkv/gpu_ops.h", "kv (level 4) -> snapkv (level 6): the arrow points up"),
            ("core/quant/qkernels.cpp", "core/tokenizer/tokenizer.h", "siblings on level 2"),
            ("core/model/sampler.cpp", "app/gui/state/gui_types.h", "core never includes app/"),
            ("core/snapkv/selector.cpp", "kernels/cuda_util.h", "core sees only kernels/snapkv_kernels.h"),
            ("kernels/gather_kv.cu", "core/common/errors.h", "kernels/ sits below core"),
            ("app/gui/main.cpp", "core/model/llama_model.h", "app/ sees core through"),
            ("app/cli/main.cpp", "app/gui/main_window.h", "the two apps are siblings"),
            ("app/cli/main.cpp", "core/session/session_impl.h", "private to its own module"),
            ("core/eval/needle.cpp", "core/newlayer/thing.h", "does not know"),
        ]
        failed = 0
        for path, inc, want in cases:
            full = os.path.join(tmp, path)
            with open(full, encoding="utf-8") as fh:
                text = fh.read()
            with open(full, "w", encoding="utf-8") as fh:
                fh.write(text + '\n#include "%s"\n' % inc)
            _, errors = check(tmp)
            errors = [e for e in errors if e not in baseline]
            hit = [e for e in errors if e.startswith(path + ":") and ('"%s"' % inc) in e and want in e]
            print("%s %s -> %s" % ("ok  " if hit and len(errors) == 1 else "FAIL", path, inc))
            if not hit or len(errors) != 1:
                print("    expected one report containing '%s', got:\n    %s" % (want, "\n    ".join(errors)))
                failed += 1
            with open(full, "w", encoding="utf-8") as fh:
                fh.write(text)
        # A value-type header that starts to include ATen: app's include of it must fail.
        vt = os.path.join(tmp, "core/io/model_config.h")
        with open(vt, encoding="utf-8") as fh:
            text = fh.read()
        with open(vt, "w", encoding="utf-8") as fh:
            fh.write(text + "\n#include <ATen/ATen.h>\n")
        _, errors = check(tmp)
        errors = [e for e in errors if e not in baseline]
        ok = any("must compile without LibTorch" in e and "core/io/model_config.h -> <ATen/ATen.h>" in e
                 for e in errors)
        print("%s app/ include of a value-type header that includes ATen" % ("ok  " if ok else "FAIL"))
        failed += 0 if ok else 1
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="repository root (default: the one holding this script)")
    ap.add_argument("--print-map", action="store_true", help="print the layer map and exit")
    ap.add_argument("--self-test", action="store_true",
                    help="check that includes against the direction are reported (on a temporary copy)")
    args = ap.parse_args()
    if args.print_map:
        print_map()
        return 0
    if args.self_test:
        return self_test()
    graph, errors = check(args.root)
    for e in errors:
        print(e)
    n = sum(len(v) for v in graph.values())
    if errors:
        print("check_layers: %d include(s) against the layer map (of %d in %d files); the map: "
              "docs/ARCHITECTURE.md, or scripts/check_layers.py --print-map" % (len(errors), n, len(graph)))
        return 1
    print("check_layers: %d project includes in %d files follow the layer map" % (n, len(graph)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
