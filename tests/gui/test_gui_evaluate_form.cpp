// The Evaluate tab's form filled back from a results file that `snapkv needle` wrote: the run's own
// needle (passkey_base, or one from another needles file, which the form adds under its name), its
// lengths and depths, and options no configuration reads left as they were so that Run resumes. And
// the plan a run from the form shows before its first cell (core/eval/eval_plan.h, as the CLI's
// plan line), or its refusal of a largest cell that does not fit.
#include <catch2/catch.hpp>

#include <QComboBox>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <cstdlib>

#include "app/gui/state/eval_results.h"
#include "app/gui/views/evaluate_view.h"
#include "gui_test_util.h"

using namespace guitest;

namespace {

// `snapkv needle` on stories260K: one length, two depths, answers of 4 tokens.
void runNeedle(const QStringList& args, const QString& out) {
    QProcess p;
    p.start(SNAPKV_CLI_PATH,
            QStringList{"needle", "--model", modelPath(), "--haystack", dataPath("reference/ppl-text.txt"), "--lengths",
                        "96", "--depths", "0,50", "--window", "16", "--kernel", "5", "--max-tokens", "4", "--quiet",
                        "--out", out} +
                args);
    REQUIRE(p.waitForFinished(120000));
    INFO(p.readAllStandardError().toStdString());
    REQUIRE(p.exitCode() == 0);
}

// The text the needle combo shows.
QString needleText(studio::EvaluateView* ev) {
    for (QComboBox* c : ev->findChildren<QComboBox*>())
        if (c->findData("passkey") >= 0) return c->currentText();
    return QString();
}

}  // namespace

TEST_CASE("a needle results file shows its own needle in the Evaluate form", "[gui][eval]") {
    QTemporaryDir dir;
    auto w = makeWindow(64);
    auto* ev = w->evaluateView();
    REQUIRE(w->showView("evaluate"));
    QString error;
    SECTION("a run with passkey_base") {
        const QString out = dir.filePath("base.jsonl");
        runNeedle({"--needle", "passkey_base", "--policies", "snapkv", "--budgets", "48"}, out);
        ev->setTask("sweep");
        REQUIRE(ev->field("needle") == "passkey");  // the form's default
        REQUIRE(ev->loadResults(out, &error));
        INFO(error.toStdString());
        CHECK(ev->task() == "needle");
        CHECK(ev->field("needle") == "passkey_base");
        CHECK(needleText(ev) == "pass key (base models)");
        CHECK(ev->field("lengths") == "96");
        CHECK(ev->field("depths") == "0,50");
        CHECK(ev->field("policies") == "snapkv");
        CHECK(ev->field("budgets") == "48");
        CHECK(ev->field("out") == out);
        // A file of the default needle brings the form back to it.
        const QString plain = dir.filePath("plain.jsonl");
        runNeedle({"--policies", "snapkv", "--budgets", "48"}, plain);
        REQUIRE(ev->loadResults(plain, &error));
        CHECK(ev->field("needle") == "passkey");
    }
    SECTION("a run with a needle from another needles file") {
        const QString needles = dir.filePath("needles.jsonl");
        QFile f(needles);
        REQUIRE(f.open(QIODevice::WriteOnly));
        f.write(R"({"name": "colour", "needle": "The door of the red house is {value}.", )"
                R"("question": "What colour is the door of the red house?", "value": "green"})"
                "\n");
        f.close();
        const QString out = dir.filePath("colour.jsonl");
        runNeedle({"--needles", needles, "--needle", "colour", "--policies", "snapkv", "--budgets", "48"}, out);
        REQUIRE(ev->loadResults(out, &error));
        INFO(error.toStdString());
        CHECK(ev->field("needle") == "colour");
        CHECK(needleText(ev) == "colour");
    }
    SECTION("options no configuration reads keep the form's values") {
        // knorm scores every position: its configurations have no window, kernel or pooling.
        const QString out = dir.filePath("knorm.jsonl");
        runNeedle({"--policies", "knorm", "--budgets", "48"}, out);
        ev->setField("window", "16");
        REQUIRE(ev->loadResults(out, &error));
        INFO(error.toStdString());
        CHECK(ev->field("policies") == "knorm");
        CHECK(ev->field("window") == "16");
        CHECK_FALSE(ev->field("gqa").isEmpty());
    }
    SECTION("decoding compression and prefill compression off come back as the run had them") {
        const QString out = dir.filePath("decode.jsonl");
        runNeedle({"--policies", "snapkv", "--budgets", "0,48", "--decode-budget", "0,32", "--decode-interval", "16"},
                  out);
        REQUIRE(ev->loadResults(out, &error));
        INFO(error.toStdString());
        CHECK(ev->field("budgets") == "0,48");
        CHECK(ev->field("decode_budget") == "0,32");
        CHECK(ev->field("decode_interval") == "16");
        // The plots name each configuration with its decoding settings, as core's labels do.
        studio::EvalResults res;
        res.load(out);
        CHECK(res.configLabels() == QStringList({"full cache", "snapkv no-prefill D32/16 W16 K5", "snapkv C48 W16 K5",
                                                 "snapkv C48 D32/16 W16 K5"}));
    }
}

TEST_CASE("a needle grid run from the form shows the plan of its largest cell, or refuses it", "[gui][eval][plan]") {
    QTemporaryDir dir;
    auto w = makeWindow(64);
    auto* ev = w->evaluateView();
    REQUIRE(w->showView("evaluate"));
    ev->setTask("needle");
    ev->setField("lengths", "96,128");
    ev->setField("depths", "0,12.5");
    ev->setField("haystack", dataPath("reference/ppl-text.txt"));
    ev->setField("policies", "snapkv,streaming");
    ev->setField("budgets", "48");
    ev->setField("window", "16");
    ev->setField("kernel", "5");
    ev->setField("max_tokens", "4");
    const QString out = dir.filePath("needle.jsonl");
    ev->setField("out", out);
    QSignalSpy planned(ev->controller(), &studio::EvalController::planned);
    QSignalSpy finished(ev, &studio::EvaluateView::runFinished);
    QString error;
    SECTION("the plan names the longest length's first cell and the cells to run") {
        REQUIRE(ev->startRun(&error));
        REQUIRE(finished.wait(120000));
        REQUIRE(planned.count() == 1);
        const QString plan = planned.at(0).at(0).toString();
        INFO(plan.toStdString());
        CHECK(plan.startsWith("Plan: largest cell length 128 depth 0: 128 tokens"));
        CHECK(plan.contains("4 cells to run"));
        CHECK(plan.endsWith("."));
        CHECK(ev->statusText().startsWith("Done: 12 rows"));
    }
    SECTION("a largest cell that does not fit fails the run before any row, naming the choices") {
        // 500 KiB: a length-96 cell fits, a length-128 cell does not (as the CLI's plan test).
        setenv("SNAPKV_MEMORY_LIMIT", "500K", 1);
        QSignalSpy failed(ev, &studio::EvaluateView::errorOccurred);
        const bool started = ev->startRun(&error);
        const bool done = started && finished.wait(120000);
        unsetenv("SNAPKV_MEMORY_LIMIT");
        REQUIRE(done);
        CHECK(planned.count() == 0);
        REQUIRE(failed.count() == 1);
        const QString message = failed.at(0).at(1).toString();
        INFO(message.toStdString());
        CHECK(message.contains("the grid's largest cell (length 128 depth 0, 128 tokens) needs about"));
        CHECK(message.contains("SNAPKV_MEMORY_LIMIT=500K"));
        CHECK(message.contains("; try prompts of at most "));
        CHECK(message.contains(" tokens (shorter lengths) (peak "));
        CHECK_FALSE(QFile::exists(out));
    }
}
