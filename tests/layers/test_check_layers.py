#!/usr/bin/env python3
"""Tests of scripts/check_layers.py on a copy of the tree: each test adds one file (or one line) that
breaks one rule, spelled one way, and asserts that the check reports exactly it, naming the file, the
line, the include as written and the rule; the untouched copy's own reports are set aside, so this
tests the check and the plain run tests the tree. Standard library only; needs no build.
Does not test the CMake side of core/layers.txt (the build does: the layer link checks).
"""
import importlib.util
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
_spec = importlib.util.spec_from_file_location("check_layers", os.path.join(REPO, "scripts", "check_layers.py"))
cl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cl)

UP = "core/snapkv/gpu_ops.h"   # level 6, included below from core/kv (level 4)
UP_RULE = "kv (level 4) -> snapkv (level 6): the arrow points up"


class TreeCopy(unittest.TestCase):
    """A copy of core/, app/, kernels/ and docs/ARCHITECTURE.md, shared by the tests of a class;
    each test's changes are undone after it."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="check_layers_")
        for top in ("core", "app", "kernels"):
            shutil.copytree(os.path.join(REPO, top), os.path.join(cls.tmp, top))
        os.makedirs(os.path.join(cls.tmp, "docs"))
        shutil.copy(os.path.join(REPO, cl.DOC_FILE), os.path.join(cls.tmp, cl.DOC_FILE))
        _, cls.baseline, _ = cl.check(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def setUp(self):
        self.undo = []
        self.probes = []

    def tearDown(self):
        for path, text in reversed(self.undo):
            full = os.path.join(self.tmp, path)
            if text is None:
                if os.path.exists(full):
                    os.remove(full)
            else:
                with open(full, "w", encoding="utf-8") as fh:
                    fh.write(text)

    def write(self, path, text):
        full = os.path.join(self.tmp, path)
        old = None
        if os.path.exists(full):
            with open(full, encoding="utf-8") as fh:
                old = fh.read()
        os.makedirs(os.path.dirname(full), exist_ok=True)
        self.undo.append((path, old))
        with open(full, "w", encoding="utf-8") as fh:
            fh.write(text)

    def append(self, path, line):
        with open(os.path.join(self.tmp, path), encoding="utf-8") as fh:
            text = fh.read()
        if not text.endswith("\n"):
            text += "\n"
        self.write(path, text + line + "\n")
        return text.count("\n") + 1

    def probe(self, folder, line, ext=".cpp"):
        """A new source file in folder whose line 3 is `line` (the test's earlier probe goes);
        returns its path."""
        path = folder + "/layer_probe" + ext
        for old in self.probes:
            if old != path:
                os.remove(os.path.join(self.tmp, old))
        self.probes = [path]
        self.write(path, "// A file the layer check's tests add to a copy of the tree.\n\n" + line + "\n")
        return path

    def new_reports(self):
        _, errors, _ = cl.check(self.tmp)
        return [e for e in errors if e not in self.baseline]

    def assertOneReport(self, *words):
        reports = self.new_reports()
        self.assertEqual(len(reports), 1, "expected one new report, got:\n" + "\n".join(reports))
        for w in words:
            self.assertIn(w, reports[0])
        return reports[0]

    def assertNoReport(self):
        reports = self.new_reports()
        self.assertEqual(reports, [], "expected no new report, got:\n" + "\n".join(reports))


class EverySpellingOfAnUpwardInclude(TreeCopy):
    """core/kv -> core/snapkv is against the map however the include names the file."""

    def check_spelling(self, include, folder="core/kv"):
        path = self.probe(folder, "#include " + include)
        self.assertOneReport("%s:3: #include %s" % (path, include), "(= %s)" % UP, UP_RULE,
                             "core/kv may include core/ops")

    def test_a_quoted_include_relative_to_the_including_file_is_reported(self):
        self.check_spelling('"../snapkv/gpu_ops.h"')

    def test_a_quoted_include_from_the_repository_root_is_reported(self):
        path = self.probe("core/kv", '#include "%s"' % UP)
        self.assertOneReport('%s:3: #include "%s"' % (path, UP), UP_RULE)

    def test_an_angle_include_from_the_repository_root_is_reported(self):
        path = self.probe("core/kv", "#include <%s>" % UP)
        self.assertOneReport("%s:3: #include <%s>" % (path, UP), UP_RULE)

    def test_a_dot_slash_include_is_reported(self):
        self.check_spelling('"./../snapkv/gpu_ops.h"')

    def test_an_include_with_dot_dot_in_the_middle_is_reported(self):
        self.check_spelling('"../kv/../snapkv/gpu_ops.h"')

    def test_an_angle_include_with_dot_dot_in_the_middle_is_reported(self):
        self.check_spelling("<core/kv/../snapkv/gpu_ops.h>")

    def test_a_root_include_with_a_dot_folder_is_reported(self):
        self.check_spelling('"core/./snapkv/gpu_ops.h"')

    def test_a_quoted_include_from_two_folders_down_is_reported(self):
        self.write("core/kv/detail/kv_detail.h", "#pragma once\n")
        path = "core/kv/detail/layer_probe.cpp"
        self.write(path, '// probe\n\n#include "../../snapkv/gpu_ops.h"\n')
        self.assertOneReport('%s:3: #include "../../snapkv/gpu_ops.h" (= %s)' % (path, UP), UP_RULE)

    def test_a_bare_name_found_through_an_include_root_of_the_build_is_reported(self):
        # A same-folder spelling crosses a module only through an include root; the check reads the
        # roots from CMakeLists.txt as the compiler gets them.
        self.append("core/CMakeLists.txt",
                    "target_include_directories(snapkv_kv PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/snapkv)")
        for inc in ('"gpu_ops.h"', "<gpu_ops.h>"):
            with self.subTest(include=inc):
                path = self.probe("core/kv", "#include " + inc)
                self.assertOneReport("%s:3: #include %s (= %s)" % (path, inc, UP), UP_RULE)

    def test_a_same_folder_include_is_found_in_the_folder_first_and_allowed(self):
        self.probe("core/kv", '#include "kv_cache.h"\n#include "./kv_cache.h"\n#include "core/kv/kv_cache.h"')
        self.assertNoReport()

    def test_an_include_of_a_file_that_is_not_there_is_judged_by_its_spelling(self):
        path = self.probe("core/kv", '#include "../snapkv/no_such_header.h"')
        self.assertOneReport('%s:3: #include "../snapkv/no_such_header.h" (no such file: '
                             'core/snapkv/no_such_header.h)' % path, UP_RULE)

    def test_system_headers_are_not_judged(self):
        self.probe("core/kv", "#include <vector>\n#include <ATen/ATen.h>\n#include \"qcustomplot.h\"")
        self.assertNoReport()

    def test_an_include_in_a_comment_is_not_judged(self):
        self.probe("core/kv", '/* #include "../snapkv/gpu_ops.h"\n#include "../snapkv/gpu_ops.h" */\n'
                              '// #include <core/snapkv/gpu_ops.h>')
        self.assertNoReport()


class TheOtherRulesOfTheMap(TreeCopy):
    def test_siblings_on_one_level_do_not_include_each_other(self):
        path = self.probe("core/quant", '#include "../tokenizer/tokenizer.h"')
        self.assertOneReport('%s:3: #include "../tokenizer/tokenizer.h" (= core/tokenizer/tokenizer.h)' % path,
                             "quant -> tokenizer: siblings on level 2")

    def test_core_never_includes_app(self):
        path = self.probe("core/model", "#include <app/gui/state/gui_types.h>")
        self.assertOneReport("%s:3: #include <app/gui/state/gui_types.h>" % path, "core never includes app/")

    def test_private_kernels_files_are_reported_in_each_spelling(self):
        for inc in ('"../../kernels/cuda_util.cuh"', "<kernels/cuda_util.cuh>", '"kernels/gather_kv.cu"',
                    '"../ops/../../kernels/cuda_util.cuh"'):
            with self.subTest(include=inc):
                path = self.probe("core/ops", "#include " + inc)
                self.assertOneReport("%s:3: #include %s" % (path, inc), "ops -> kernels: core sees only "
                                     "kernels/snapkv_kernels.h of kernels/", "is private to kernels/")

    def test_the_public_kernels_header_is_allowed_in_each_spelling(self):
        self.probe("core/ops", '#include "../../kernels/snapkv_kernels.h"\n#include <kernels/snapkv_kernels.h>')
        self.assertNoReport()

    def test_kernels_include_nothing_of_core(self):
        path = self.probe("kernels", '#include "../core/common/errors.h"', ext=".cu")
        self.assertOneReport('%s:3: #include "../core/common/errors.h" (= core/common/errors.h)' % path,
                             "kernels/ sits below core")

    def test_an_impl_header_is_private_to_its_folder_in_each_spelling(self):
        for folder, inc in (("app/cli", '"../../core/session/session_impl.h"'),
                            ("app/cli", "<core/session/session_impl.h>"),
                            ("core/eval", '"../session/session_impl.h"'),
                            ("core/eval", '"core/session/./session_impl.h"')):
            with self.subTest(folder=folder, include=inc):
                path = self.probe(folder, "#include " + inc)
                self.assertOneReport("%s:3: #include %s" % (path, inc),
                                     "a *_impl.h header is private to its own folder (core/session/)")

    def test_an_impl_header_is_allowed_in_its_own_folder(self):
        self.probe("core/session", '#include "session_impl.h"\n#include "./session_impl.h"')
        self.assertNoReport()

    def test_app_sees_only_the_session_facade_of_core(self):
        path = self.probe("app/gui", '#include "../../core/model/llama_model.h"')
        self.assertOneReport('%s:3: #include "../../core/model/llama_model.h" (= core/model/llama_model.h)' % path,
                             "app/gui -> core/model: app/ sees core through")

    def test_the_two_apps_are_siblings(self):
        path = self.probe("app/cli", '#include "../gui/main_window.h"')
        self.assertOneReport('%s:3: #include "../gui/main_window.h" (= app/gui/main_window.h)' % path,
                             "the two apps are siblings")

    def test_a_value_type_header_that_includes_aten_fails_the_apps(self):
        self.append("core/io/model_config.h", "#include <ATen/ATen.h>")
        reports = self.new_reports()
        self.assertTrue(reports and all("must compile without LibTorch" in r for r in reports), reports)
        self.assertTrue(any("core/io/model_config.h -> <ATen/ATen.h>" in r for r in reports), reports)


class TheLayerOrderFromCoreLayersTxt(TreeCopy):
    def test_a_core_folder_that_layers_txt_does_not_list_is_reported(self):
        self.write("core/newlayer/thing.h", "#pragma once\n")
        self.assertOneReport("core/newlayer: a core folder with sources that core/layers.txt does not list")

    def test_a_new_level_in_layers_txt_orders_the_includes(self):
        self.write("core/newlayer/thing.h", '#pragma once\n#include "core/eval/needle.h"\n')
        self.append(cl.LAYERS_FILE, "10 newlayer  a layer above eval")
        reports = self.new_reports()
        # The new level is allowed to include eval; only the doc's printed map is now stale.
        self.assertEqual(len(reports), 1, reports)
        self.assertIn("docs/ARCHITECTURE.md", reports[0])
        self.assertIn("--print-map", reports[0])
        path = self.probe("core/eval", '#include "../newlayer/thing.h"')
        self.assertIn('%s:3: #include "../newlayer/thing.h" (= core/newlayer/thing.h): eval (level 9) -> '
                      "newlayer (level 10): the arrow points up" % path, "\n".join(self.new_reports()))


class TheFoldersReadmeRules(TreeCopy):
    def test_a_state_file_that_includes_a_panel_header_is_reported(self):
        for inc in ('"../panels/prompt_panel.h"', '"app/gui/panels/prompt_panel.h"', "<app/gui/panels/prompt_panel.h>"):
            with self.subTest(include=inc):
                path = self.probe("app/gui/state", "#include " + inc)
                self.assertOneReport("%s:3: #include %s" % (path, inc),
                                     "app/gui/state includes app/gui/panels/prompt_panel.h, but of app/gui it "
                                     "may include only app/gui/state", "app/gui/state/README.md:")

    def test_a_state_file_that_includes_a_files_header_is_reported(self):
        path = self.probe("app/gui/state", '#include "../files/session_file.h"')
        self.assertOneReport('%s:3: #include "../files/session_file.h" (= app/gui/files/session_file.h)' % path,
                             "app/gui/state includes app/gui/files/session_file.h", "May include: app/gui/state")

    def test_plot_may_include_the_one_state_header_its_readme_names(self):
        self.probe("app/gui/plot", '#include "../state/display_settings.h"')
        self.assertNoReport()
        path = self.probe("app/gui/plot", '#include "../state/analysis_state.h"')
        self.assertOneReport("%s:3:" % path, "app/gui/plot includes app/gui/state/analysis_state.h")

    def test_a_view_that_writes_a_file_is_reported_for_each_api(self):
        for code, api in (("QSaveFile out(path);", "QSaveFile"),
                          ("f.open(QIODevice::WriteOnly);", "a QFile opened for writing"),
                          ("std::ofstream out(path);", "std::ofstream"),
                          ("snapkv::write_file_atomic(path, text);", "write_file_atomic"),
                          ('FILE* f = fopen(path, "wb");', "fopen for writing"),
                          ('plot->savePdf(path);', "QCustomPlot::save*")):
            with self.subTest(api=api):
                path = self.probe("app/gui/views", "void f() { %s }" % code)
                self.assertOneReport("%s:3:" % path, api, "app/gui/views writes no files",
                                     "app/gui/views/README.md:", "Writes no files")

    def test_a_view_that_reads_a_file_or_names_an_api_in_a_comment_is_not_reported(self):
        self.probe("app/gui/views", "// never a QSaveFile here: app/gui/files writes\n"
                                    "void f() { QFile f(p); f.open(QIODevice::ReadOnly); }")
        self.assertNoReport()

    def test_a_must_not_include_line_is_read_from_the_readme(self):
        self.append("app/gui/panels/README.md", "- Must not include: app/gui/plot/plot_style.h (panels draw no plots)")
        path = self.probe("app/gui/panels", "#include <app/gui/plot/plot_style.h>")
        self.assertOneReport("%s:3: #include <app/gui/plot/plot_style.h>" % path,
                             "app/gui/panels includes app/gui/plot/plot_style.h, which app/gui/panels/README.md:")

    def test_a_readme_rule_that_names_no_file_is_reported(self):
        n = self.append("app/gui/workers/README.md", "- May include: app/gui/nosuch")
        self.assertOneReport("app/gui/workers/README.md:%d: 'app/gui/nosuch' names no file or folder" % n)


class Resolving(unittest.TestCase):
    """resolve() finds the file as the compiler does, on the real tree."""

    def test_each_spelling_resolves_to_the_same_file(self):
        roots = cl.include_roots(REPO)
        for delim, name in (('"', "../snapkv/gpu_ops.h"), ('"', "core/snapkv/gpu_ops.h"),
                            ("<", "core/snapkv/gpu_ops.h"), ('"', "./../snapkv/gpu_ops.h"),
                            ('"', "../kv/../snapkv/gpu_ops.h"), ("<", "core/kv/../snapkv/gpu_ops.h")):
            with self.subTest(include=delim + name):
                self.assertEqual(cl.resolve(REPO, roots, "core/kv/kv_cache.cpp", delim, name), (UP, None))

    def test_an_angle_include_is_not_looked_up_beside_the_including_file(self):
        roots = cl.include_roots(REPO)
        self.assertEqual(cl.resolve(REPO, roots, "core/kv/kv_cache.cpp", '"', "kv_cache.h"), ("core/kv/kv_cache.h", None))
        self.assertEqual(cl.resolve(REPO, roots, "core/kv/kv_cache.cpp", "<", "kv_cache.h"), (None, None))


if __name__ == "__main__":
    unittest.main(verbosity=2)
