#!/usr/bin/env python3
"""Layer check: every #include in core/, app/ and kernels/ must point down the layer map of
core/layers.txt, and every folder whose README.md states "Rules" must keep them. Prints one line per
broken rule (file:line, the include as written and the file it resolves to, the rule, what is
allowed) and exits 1; exits 0 when all hold.
Each include is first resolved to a file as the compiler would: a quoted one relative to the
including file's folder, then against the include roots; an angle one against the include roots
(the repository root and the source folders that the CMakeLists.txt of core/, app/ and kernels/
add). One that resolves to no file in the tree is a system or generated header and not judged,
unless it is spelled as a project path. Standard library only; it reads the files' text and does
not run the preprocessor (comments are skipped, an include inside `#if 0` counts). Does not check
tests/ (tests may include any layer).

usage: scripts/check_layers.py [--root DIR] [--print-map] [--self-test]
"""
import argparse
import os
import re
import sys

SOURCE_EXT = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
TOPS = ("core", "app", "kernels")
APP_MODULES = ("app/gui", "app/cli")  # siblings: neither includes the other
TORCH_PREFIXES = ("ATen/", "torch/", "c10/")
LAYERS_FILE = "core/layers.txt"
DOC_FILE = "docs/ARCHITECTURE.md"

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^">\n]+)[">]', re.M)
# Comments are blanked (newlines kept, so line numbers hold); strings are kept as they are.
TOKENS = re.compile(r'R"([^(\s"\\]{0,16})\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|'
                    r"'(?:\\.|[^'\\\n])*'|//[^\n]*|/\*.*?\*/", re.S)
CMAKE_INCLUDE_DIRS = re.compile(r'\b(?:target_)?include_directories\s*\(([^)]*)\)', re.S)

# The calls that write a file, for folders whose README says "Writes no files". Matched in the
# code with comments removed; each names the API the report shows. (A word the match must contain
# comes first: a plain substring test skips most files quickly.)
FILE_WRITE_APIS = [
    ("QSaveFile", r'\bQSaveFile\b', "QSaveFile"),
    ("::", r'\b(?:QIODevice|QFile|QFileDevice)::(?:WriteOnly|ReadWrite|Append|Truncate|NewOnly)\b',
     "a QFile opened for writing"),
    ("fstream", r'\b(?:std::)?w?o?fstream\b', "std::ofstream / std::fstream"),
    ("fopen", r'\bfopen\s*\([^;]*?,\s*"[^"]*[wa+]', "fopen for writing"),
    ("O_", r'\bopen\s*\([^;]*\bO_(?:WRONLY|RDWR|CREAT)\b', "open(2) for writing"),
    ("write_file_atomic", r'\bwrite_file_atomic\b', "write_file_atomic"),
    ("Writer", r'\b(?:QImageWriter|QPdfWriter|QTextDocumentWriter)\b', "a Qt file writer"),
    ("save", r'(?:\.|->)save(?:Pdf|Png|Jpg|Bmp|Rastered)\s*\(', "QCustomPlot::save*"),
    ("::", r'\b(?:std::filesystem|fs)::(?:copy|copy_file|rename|remove|remove_all|resize_file|'
           r'create_directory|create_directories)\b', "std::filesystem writing"),
    ("QFile::", r'\bQFile::(?:copy|rename|remove|link|resize)\b', "QFile::copy/rename/remove"),
]
FILE_WRITE_APIS = [(word, re.compile(rx), api) for word, rx, api in FILE_WRITE_APIS]
RULE_LINE = re.compile(r'^\s*[-*]?\s*(May include|Must not include)\s*:\s*(.+?)\s*$', re.I)
WRITES_NO_FILES = re.compile(r'^\s*[-*]?\s*Writes no files\b', re.I)


# ---------------------------------------------------------------------------------------- the map
class LayerMap:
    """core/layers.txt: levels and descriptions of the core modules, what app/ sees of core, what
    core sees of kernels/."""

    def __init__(self, root):
        self.levels, self.what = {}, {}
        self.order = []                     # modules, bottom up, as written
        self.app_modules, self.app_headers = {}, {}
        self.kernels_public = {}
        self.errors = []
        path = os.path.join(root, LAYERS_FILE)
        try:
            with open(path, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except OSError as e:
            self.errors.append("%s: cannot read the layer map: %s" % (LAYERS_FILE, e.strerror))
            return
        for n, line in enumerate(lines, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 2:
                self.errors.append("%s:%d: '%s': expected '<level> <module> <what>', 'app <module or "
                                   "header> <why>' or 'kernels <header> <why>'" % (LAYERS_FILE, n, line))
                continue
            key, name, what = parts[0], parts[1], parts[2] if len(parts) > 2 else ""
            if key.isdigit():
                if name in self.levels:
                    self.errors.append("%s:%d: module '%s' is listed twice" % (LAYERS_FILE, n, name))
                self.levels[name] = int(key)
                self.what[name] = what
                self.order.append(name)
            elif key == "app" and "/" in name:
                self.app_headers[name] = what
            elif key == "app":
                self.app_modules[name] = what
            elif key == "kernels":
                self.kernels_public[name] = what
            else:
                self.errors.append("%s:%d: '%s': the first word must be a level number, 'app' or "
                                   "'kernels'" % (LAYERS_FILE, n, key))
        if self.levels:
            used = sorted(set(self.levels.values()))
            if used != list(range(used[-1] + 1)):
                self.errors.append("%s: levels must run 0, 1, 2, ... without gaps (core/CMakeLists.txt "
                                   "links each layer to the level just below); found %s" %
                                   (LAYERS_FILE, ", ".join(map(str, used))))
        for m in self.app_modules:
            if m not in self.levels:
                self.errors.append("%s: 'app %s': no such core module" % (LAYERS_FILE, m))
        for h in list(self.app_headers) + list(self.kernels_public):
            if not os.path.isfile(os.path.join(root, h)):
                self.errors.append("%s: '%s': no such file" % (LAYERS_FILE, h))
        for d in sorted(os.listdir(os.path.join(root, "core"))) if os.path.isdir(os.path.join(root, "core")) else []:
            full = os.path.join(root, "core", d)
            if os.path.isdir(full) and d not in self.levels and \
                    any(f.endswith(SOURCE_EXT) for _, _, fs in os.walk(full) for f in fs):
                self.errors.append("core/%s: a core folder with sources that %s does not list (add a "
                                   "line '<level> %s <what it holds>')" % (d, LAYERS_FILE, d))

    def known(self, mod):
        return mod in self.levels or mod in APP_MODULES or mod == "kernels"

    def describe_allowed(self, mod):
        if mod in self.levels:
            below = sorted((m for m, lv in self.levels.items() if lv < self.levels[mod]),
                           key=lambda m: -self.levels[m])
            return "core/" + mod + " may include " + ", ".join(["core/" + m for m in below] +
                                                               sorted(self.kernels_public))
        if mod in APP_MODULES:
            return (mod + " may include " + ", ".join("core/" + m for m in sorted(self.app_modules)) +
                    " and the value-type headers " + ", ".join(sorted(self.app_headers)))
        if mod == "kernels":
            return "kernels/ includes only kernels/ (no LibTorch, no core)"
        return "unknown module"

    def text(self):
        """The map as --print-map prints it (and docs/ARCHITECTURE.md shows it)."""
        out = ["app/gui, app/cli (siblings) include of core only:"]
        w = max([len(m) + 7 for m in self.app_modules] + [len(h) for h in self.app_headers] + [0])
        for m in self.app_modules:
            out.append("    %-*s  %s" % (w, "core/%s/*" % m, self.app_modules[m]))
        for h in self.app_headers:
            out.append("    %-*s  %s" % (w, h, self.app_headers[h]))
        w = max([len(m) + 5 for m in self.levels] + [8])
        for lv in sorted(set(self.levels.values()), reverse=True):
            mods = [m for m in self.order if self.levels[m] == lv]
            for i, m in enumerate(mods):
                tail = "  (siblings)" if len(mods) > 1 and i == 0 else ""
                out.append("%-9s %-*s  %s%s" % ("level %d" % lv if i == 0 else "", w, "core/" + m,
                                                self.what[m], tail))
        for h in self.kernels_public:
            out.append("%-9s %-*s  core sees only %s: %s" % ("bottom", w, "kernels/", h, self.kernels_public[h]))
        return "\n".join(out) + "\n"


def module_of(path):
    """'core/kv/kv_cache.h' -> 'kv'; 'app/gui/views/x.h' -> 'app/gui'; 'kernels/x.h' -> 'kernels'."""
    parts = path.split("/")
    if parts[0] == "core" and len(parts) > 2:
        return parts[1]
    if parts[0] == "app" and len(parts) > 2:
        return "app/" + parts[1]
    if parts[0] == "kernels" and len(parts) > 1:
        return "kernels"
    return None


def rule_broken(lm, src, inc):
    """The reason the arrow src -> inc (both resolved paths) breaks the layer map, or None."""
    a, b = module_of(src), module_of(inc)
    if a is None:
        return None
    if b is None:
        return "'%s' is in no module of the layer map" % inc
    for path, mod in ((inc, b), (src, a)):
        if not lm.known(mod):
            return "'%s' is in module '%s', which the layer map does not know (add it to %s)" % \
                   (path, mod, LAYERS_FILE)
    if os.path.basename(inc).endswith("_impl.h") and os.path.dirname(inc) != os.path.dirname(src):
        return "%s -> %s: a *_impl.h header is private to its own folder (%s)" % \
               (a, b, os.path.dirname(inc) + "/")
    if a == b:
        return None
    if a == "kernels":
        return "kernels -> %s: kernels/ sits below core and sees neither core nor app" % b
    if a in lm.levels:
        if b in APP_MODULES:
            return "%s -> %s: core never includes app/" % (a, b)
        if b == "kernels":
            if inc in lm.kernels_public:
                return None
            return "%s -> kernels: core sees only %s of kernels/; '%s' is private to kernels/" % \
                   (a, ", ".join(sorted(lm.kernels_public)), inc)
        la, lb = lm.levels[a], lm.levels[b]
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
    if b in lm.app_modules or inc in lm.app_headers:
        return None
    return "%s -> core/%s: app/ sees core through %s and the value-type headers only" % \
           (a, b, ", ".join("core/" + m for m in lm.app_modules))


# ------------------------------------------------------------------------------------- resolving
def strip_comments(text):
    """The text with comments blanked to spaces (newlines kept); string literals untouched."""
    def blank(m):
        s = m.group(0)
        if s[0] == "/":
            return "\n".join(" " * len(part) for part in s.split("\n"))
        return s
    return TOKENS.sub(blank, text)


def include_roots(root):
    """Repository-relative include roots: the repository root, then the source folders that the
    CMakeLists.txt of core/, app/ and kernels/ add with (target_)include_directories. Folders in the
    build tree (generated headers) and outside the repository are system roots here: an include
    that only they hold is not judged."""
    roots = [""]
    for top in TOPS:
        for d, _, files in os.walk(os.path.join(root, top)):
            if "CMakeLists.txt" not in files:
                continue
            with open(os.path.join(d, "CMakeLists.txt"), encoding="utf-8", errors="replace") as fh:
                text = re.sub(r"#[^\n]*", "", fh.read())
            here = os.path.relpath(d, root).replace(os.sep, "/")
            for m in CMAKE_INCLUDE_DIRS.finditer(text):
                for arg in m.group(1).split():
                    for var, base in (("${PROJECT_SOURCE_DIR}", ""), ("${CMAKE_SOURCE_DIR}", ""),
                                      ("${CMAKE_CURRENT_SOURCE_DIR}", here),
                                      ("${CMAKE_CURRENT_LIST_DIR}", here)):
                        if arg.startswith(var):
                            rel = os.path.normpath(os.path.join(base, arg[len(var):].lstrip("/")))
                            rel = "" if rel == "." else rel.replace(os.sep, "/")
                            if not rel.startswith("..") and rel not in roots:
                                roots.append(rel)
    return roots


def resolve(root, roots, src, delim, name):
    """(path, how): the repository-relative file `#include <delim>name` in src names, found as the
    compiler finds it; or the path the spelling names in the tree when no file is there but it is
    spelled as a project path (how = 'no such file'); or (None, None) for a system or generated
    header."""
    here = os.path.dirname(src)
    candidates = ([here] if delim == '"' else []) + roots
    for base in candidates:
        rel = os.path.normpath(os.path.join(base, name)).replace(os.sep, "/")
        if rel.startswith("../") or rel == ".." or os.path.isabs(rel):
            continue
        if os.path.isfile(os.path.join(root, rel)):
            return rel, None
    # No file: judge the spelling when it names a project path (the compiler fails on it anyway,
    # but the report should say which rule the include would also break).
    if delim == '"' and (name.startswith("./") or name.startswith("../")):
        rel = os.path.normpath(os.path.join(here, name)).replace(os.sep, "/")
    else:
        rel = os.path.normpath(name).replace(os.sep, "/")
    if rel.split("/")[0] in TOPS and not rel.startswith(".."):
        return rel, "no such file"
    return None, None


_READ_CACHE = {}  # full path -> (text, comment-free text, [(line, delim, name)]), for the tests' reruns


def read_source(full):
    with open(full, encoding="utf-8", errors="replace") as fh:
        raw = fh.read()
    hit = _READ_CACHE.get(full)
    if hit and hit[0] == raw:
        return hit[1], hit[2]
    text = strip_comments(raw)
    incs = [(text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2).strip()) for m in INCLUDE.finditer(text)]
    _READ_CACHE[full] = (raw, text, incs)
    return text, incs


def scan(root, roots):
    """{path: [(line, delim, name, resolved or None, note)]}, {path: comment-free text} for the
    sources of core/, app/, kernels/."""
    found, texts = {}, {}
    for top in TOPS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if not f.endswith(SOURCE_EXT):
                    continue
                full = os.path.join(d, f)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                text, raw = read_source(full)
                texts[rel] = text
                found[rel] = [(line, delim, name) + resolve(root, roots, rel, delim, name)
                              for line, delim, name in raw]
    return found, texts


def spelled(delim, name, path, note=None):
    s = '#include %s%s%s' % (delim, name, '"' if delim == '"' else ">")
    if note:
        return "%s (%s: %s)" % (s, note, path)
    if path and path != name:
        return "%s (= %s)" % (s, path)
    return s


# ---------------------------------------------------------------------------- the README rules
class FolderRules:
    """A folder's rules, from the lines of its README.md:
      May include: <paths>       of its own module, the folder includes only itself and these
      Must not include: <paths>  files or folders it never includes (any module)
      Writes no files            none of FILE_WRITE_APIS in its code
    Paths are repository-relative files or folders, separated by commas; text in parentheses and
    backticks are comments."""

    def __init__(self, root, readme):
        self.readme = readme
        self.folder = os.path.dirname(readme)
        self.may, self.must_not, self.no_writes = None, [], False
        self.lines = {}
        self.errors = []
        with open(os.path.join(root, readme), encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if WRITES_NO_FILES.match(line):
                    self.no_writes = True
                    self.lines["writes"] = (n, line.strip().lstrip("-* "))
                    continue
                m = RULE_LINE.match(line)
                if not m:
                    continue
                items = [i.strip().strip("`").rstrip("/") for i in
                         re.sub(r"\([^)]*\)", "", m.group(2)).replace("`", "").split(",")]
                items = [i for i in items if i]
                for i in items:
                    if not os.path.exists(os.path.join(root, i)):
                        self.errors.append("%s:%d: '%s' names no file or folder of the tree" % (readme, n, i))
                if m.group(1).lower() == "may include":
                    self.may = (self.may or []) + items
                    self.lines["may"] = (n, line.strip().lstrip("-* "))
                else:
                    self.must_not += items
                    self.lines["must_not"] = (n, line.strip().lstrip("-* "))

    def applies(self, path):
        return path.startswith(self.folder + "/")

    def include_broken(self, src, inc):
        def under(p, items):
            return [i for i in items if p == i or p.startswith(i + "/")]
        hit = under(inc, self.must_not)
        if hit:
            n, line = self.lines["must_not"]
            return "%s includes %s, which %s:%d forbids (\"%s\")" % (self.folder, hit[0], self.readme, n, line)
        if self.may is not None and module_of(inc) == module_of(src) and module_of(src) is not None \
                and not under(inc, [self.folder] + self.may):
            n, line = self.lines["may"]
            allowed = [self.folder] + [i for i in self.may if i != self.folder]
            return "%s includes %s, but of %s it may include only %s (%s:%d: \"%s\")" % \
                   (self.folder, inc, module_of(src), ", ".join(allowed), self.readme, n, line)
        return None

    def writes(self, text):
        """[(line, api)] of the file-writing calls in text (comment-free)."""
        out = []
        for word, rx, api in FILE_WRITE_APIS:
            for m in (rx.finditer(text) if word in text else ()):
                out.append((text.count("\n", 0, m.start()) + 1, m.group(0).strip(), api))
        return sorted(set(out))


def folder_rules(root):
    rules = []
    for top in TOPS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            if "README.md" in files:
                r = FolderRules(root, os.path.relpath(os.path.join(d, "README.md"), root).replace(os.sep, "/"))
                if r.may is not None or r.must_not or r.no_writes or r.errors:
                    rules.append(r)
    return rules


# ---------------------------------------------------------------------------------- the check
def torch_path(lm, graph, header, seen):
    """A chain of core headers from header to one that includes ATen/torch/c10, or None."""
    if header in seen or header not in graph:
        return None
    seen.add(header)
    for _, delim, name, path, _ in graph[header]:
        if path is None and name.startswith(TORCH_PREFIXES):
            return [header, spelled(delim, name, None)[len("#include "):]]
    for _, _, _, path, _ in graph[header]:
        if path and path.startswith("core/"):
            chain = torch_path(lm, graph, path, seen)
            if chain:
                return [header] + chain
    return None


def doc_block(root):
    """(line, text) of the first ``` block in the "## Layer map" section of docs/ARCHITECTURE.md."""
    path = os.path.join(root, DOC_FILE)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    inside, start, block = False, None, None
    for n, line in enumerate(lines, 1):
        if line.startswith("## "):
            inside = line.strip() == "## Layer map"
            continue
        if not inside:
            continue
        if line.startswith("```"):
            if start is None:
                start, block = n, []
            else:
                return start, "\n".join(block) + "\n"
        elif start is not None:
            block.append(line)
    return (start, None) if start else None


def check(root):
    """(graph, errors, number of includes judged)."""
    lm = LayerMap(root)
    errors = list(lm.errors)
    roots = include_roots(root)
    graph, texts = scan(root, roots)
    rules = folder_rules(root)
    for r in rules:
        errors += r.errors
    judged = 0
    for src in sorted(graph):
        mod = module_of(src)
        for n, delim, name, path, note in graph[src]:
            if path is None:
                continue
            judged += 1
            why = rule_broken(lm, src, path)
            where = "%s:%d: %s" % (src, n, spelled(delim, name, path, note))
            if why:
                errors.append("%s: %s (%s)" % (where, why, lm.describe_allowed(mod)))
                continue
            for r in rules:
                if r.applies(src):
                    why = r.include_broken(src, path)
                    if why:
                        errors.append("%s: %s" % (where, why))
            if mod in APP_MODULES and path.startswith("core/"):
                chain = torch_path(lm, graph, path, set())
                if chain:
                    errors.append("%s: app/ must compile without LibTorch, but %s" % (where, " -> ".join(chain)))
    for r in rules:
        if not r.no_writes:
            continue
        n, line = r.lines["writes"]
        for src in sorted(texts):
            if r.applies(src):
                for ln, found, api in r.writes(texts[src]):
                    errors.append("%s:%d: '%s' (%s): %s writes no files (%s:%d: \"%s\"); files are "
                                  "written by app/gui/files" % (src, ln, found, api, r.folder, r.readme, n, line))
    if not lm.errors:
        doc = doc_block(root)
        if doc is not None and doc[1] != lm.text():
            errors.append("%s:%d: the layer map block is not the output of `scripts/check_layers.py "
                          "--print-map` (the map is %s): paste that output there" % (DOC_FILE, doc[0], LAYERS_FILE))
    return graph, errors, judged


def self_test():
    """The injection tests of tests/layers/test_check_layers.py (one upward include per spelling,
    the private headers and the README rules, each on a copy of the tree)."""
    import unittest
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    suite = unittest.defaultTestLoader.discover(os.path.join(here, "tests", "layers"), pattern="test_*.py")
    return 0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="repository root (default: the one holding this script)")
    ap.add_argument("--print-map", action="store_true",
                    help="print the layer map (%s) as docs/ARCHITECTURE.md shows it, and exit" % LAYERS_FILE)
    ap.add_argument("--self-test", action="store_true",
                    help="run tests/layers: each kind of broken include is reported (on a temporary copy)")
    args = ap.parse_args()
    if args.print_map:
        lm = LayerMap(args.root)
        for e in lm.errors:
            print(e, file=sys.stderr)
        sys.stdout.write(lm.text())
        return 1 if lm.errors else 0
    if args.self_test:
        return self_test()
    graph, errors, judged = check(args.root)
    for e in errors:
        print(e)
    if errors:
        print("check_layers: %d report(s) against the layer map or a folder's README rules (%d project "
              "includes in %d files); the map: %s, or scripts/check_layers.py --print-map" %
              (len(errors), judged, len(graph), LAYERS_FILE))
        return 1
    print("check_layers: %d project includes in %d files follow the layer map and the folders' rules" %
          (judged, len(graph)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
