// RULER in the Evaluate tab on stories260K: a run from the form writes the same rows as
// `snapkv ruler` and resumes; a results file (ratios and budgets) shows the leaderboard (one line
// per policy, the full cache dashed) and the task x configuration table whose cells are core's mean
// scores; a point or a cell opens its worst sample with the needles and answers marked and the
// head that kept least of them focused. stories260K scores 0 everywhere, so the loaded file's
// scores are rewritten (rows otherwise as the runner wrote them) to give the means something to do.
#include <catch2/catch.hpp>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest/QTest>

#include <algorithm>
#include <fstream>

#include "app/gui/files/data_export.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/state/eval_ruler.h"
#include "app/gui/views/evaluate_ruler_table.h"
#include "app/gui/views/evaluate_view.h"
#include "core/eval/results_file.h"
#include "core/eval/ruler_runner.h"
#include "gui_test_util.h"

#include <qcustomplot.h>

using namespace guitest;
using json = nlohmann::json;

namespace {

const QStringList kGrid = {"--tasks",    "niah_single_1,niah_multivalue", "--lengths", "600", "--samples", "2",
                           "--policies", "snapkv,streaming,random",       "--quiet"};

void rulerForm(studio::EvaluateView* ev, const QString& out, int samples) {
    ev->setTask("ruler");
    ev->setField("tasks", "niah_single_1,niah_multivalue");
    ev->setField("ruler_lengths", "600");
    ev->setField("samples", QString::number(samples));
    ev->setField("policies", "snapkv,streaming,random");
    ev->setField("ratios", "0.5");
    ev->setField("out", out);
}

bool waitEval(studio::EvaluateView* ev, int timeoutMs = 240000) {
    QSignalSpy spy(ev, &studio::EvaluateView::runFinished);
    return spy.wait(timeoutMs);
}

std::vector<json> readRows(const QString& path) { return snapkv::eval::read_results(path.toStdString(), true).rows; }

// `snapkv ruler` with the grid above and the given sizes.
void runCli(const QStringList& sizes, const QString& out) {
    QProcess p;
    p.start(SNAPKV_CLI_PATH, QStringList{"ruler", "--model", modelPath()} + kGrid + sizes + QStringList{"--out", out});
    REQUIRE(p.waitForFinished(240000));
    INFO(p.readAllStandardError().toStdString());
    REQUIRE(p.exitCode() == 0);
}

// Scores spread over 0..1 by cell and configuration (the full cache the highest), as a runner row.
void rewriteScores(const QString& in, const QString& out) {
    std::ofstream f(out.toStdString());
    for (json r : readRows(in)) {
        const int64_t cell = r["cell"], config = r["config"];
        r["score"] = config == 0 ? 1.0 : static_cast<double>((cell * 3 + config * 2) % 5) / 4.0;
        f << snapkv::eval::row_line(r);
    }
}

QCPGraph* graphNamed(QCustomPlot* p, const QString& name) {
    for (int i = 0; i < p->graphCount(); ++i)
        if (p->graph(i)->name() == name) return p->graph(i);
    return nullptr;
}

}  // namespace

TEST_CASE("the Evaluate tab runs RULER like snapkv ruler, cancels and resumes", "[gui][eval][ruler]") {
    auto w = makeWindow(64);
    QTemporaryDir dir;
    auto* ev = w->evaluateView();
    REQUIRE(w->showView("evaluate"));
    const QString out = dir.filePath("ruler.jsonl");
    rulerForm(ev, out, 2);
    QString error;
    REQUIRE(ev->startRun(&error));
    REQUIRE(waitEval(ev));
    INFO(ev->statusText().toStdString());
    // 2 tasks x 1 length x 2 samples = 4 cells, x (full + 3 policies at ratio 0.5).
    CHECK(ev->statusText().startsWith("Done: 16 rows"));
    CHECK(ev->results().task() == "ruler");
    CHECK(ev->results().size() == 16);

    // Its rows are the CLI's, timings aside.
    const QString cli = dir.filePath("cli.jsonl");
    runCli({"--ratios", "0.5"}, cli);
    std::vector<json> a = readRows(out), b = readRows(cli);
    REQUIRE(a.size() == b.size());
    std::stable_sort(a.begin(), a.end(), snapkv::eval::row_less);
    std::stable_sort(b.begin(), b.end(), snapkv::eval::row_less);
    for (size_t i = 0; i < a.size(); ++i) {
        a[i].erase("timing");
        b[i].erase("timing");
        INFO("row " << i << ": " << snapkv::eval::first_difference(a[i], b[i]));
        CHECK(a[i] == b[i]);
    }
    // Run again on the same file: every row is there already.
    REQUIRE(ev->startRun(&error));
    REQUIRE(waitEval(ev));
    CHECK(ev->statusText().contains("(0 cells run, 4 already there)"));
    CHECK(readRows(out).size() == 16);
    // Cancel keeps the finished rows and Run completes them.
    const QString more = dir.filePath("more.jsonl");
    rulerForm(ev, more, 3);
    REQUIRE(ev->startRun(&error));
    {
        QSignalSpy row(ev->controller(), &studio::EvalController::rowFinished);
        REQUIRE(row.wait(120000));
    }
    ev->cancel();
    REQUIRE(waitEval(ev));
    const size_t kept = readRows(more).size();
    CHECK(ev->statusText().startsWith("Cancelled"));
    CHECK(kept >= 1);
    CHECK(kept < 24);
    REQUIRE(ev->startRun(&error));
    REQUIRE(waitEval(ev));
    CHECK(readRows(more).size() == 24);
}

TEST_CASE("the Evaluate tab refuses a ratio that keeps no more than the window, before any prefill",
          "[gui][eval][ruler]") {
    auto w = makeWindow(64);
    QTemporaryDir dir;
    auto* ev = w->evaluateView();
    REQUIRE(w->showView("evaluate"));
    const QString out = dir.filePath("ruler.jsonl");
    rulerForm(ev, out, 1);
    ev->setField("ratios", "0.5,0.99");
    QString error;
    if (ev->startRun(&error)) REQUIRE(waitEval(ev));
    const QString said = error + ev->statusText();
    INFO(said.toStdString());
    CHECK(said.contains("ratio 0.99 keeps about"));
    CHECK(said.contains("not more than the window 32"));
    CHECK_FALSE(QFileInfo::exists(out));
}

TEST_CASE("a RULER file with presses that keep no window opens like any other", "[gui][eval][ruler]") {
    // knorm and keydiff score every position: their configurations have a null window.
    QTemporaryDir dir;
    const QString file = dir.filePath("presses.jsonl");
    QProcess p;
    p.start(SNAPKV_CLI_PATH,
            {"ruler", "--model", modelPath(), "--tasks", "niah_single_1", "--lengths", "600", "--samples", "1",
             "--policies", "knorm,keydiff,tova", "--ratios", "0.5", "--quiet", "--out", file});
    REQUIRE(p.waitForFinished(240000));
    REQUIRE(p.exitCode() == 0);
    auto w = makeWindow(64);
    auto* ev = w->evaluateView();
    REQUIRE(w->showView("evaluate"));
    QString error;
    REQUIRE(ev->loadResults(file, &error));
    INFO(error.toStdString());
    CHECK(ev->results().size() == 4);
    CHECK(ev->field("policies") == "knorm,keydiff,tova");
    CHECK(ev->field("ratios") == "0.5");
}

TEST_CASE("a RULER file shows the leaderboard and the task table, and opens a point's worst sample",
          "[gui][eval][ruler]") {
    // Made once for all the sections (Catch runs the case again for each).
    static QTemporaryDir dir;
    const QString made = dir.filePath("made.jsonl"), file = dir.filePath("ruler.jsonl");
    if (!QFile::exists(file)) {
        runCli({"--ratios", "0.25,0.5", "--budgets", "200"}, made);
        rewriteScores(made, file);
    }
    const std::vector<json> rows = readRows(file);
    REQUIRE(rows.size() == 4 * 10);  // 4 cells x (full + 3 policies x 3 sizes)

    auto w = makeWindow(64);
    auto* ev = w->evaluateView();
    REQUIRE(w->showView("evaluate"));
    QString error;
    REQUIRE(ev->loadResults(file, &error));
    CHECK(ev->task() == "ruler");
    CHECK(ev->field("ratios") == "0.25,0.5");
    CHECK(ev->field("ruler_budgets") == "200");
    CHECK(ev->field("tasks") == "niah_single_1,niah_multivalue");
    CHECK(ev->metric() == "score");
    ev->refreshNow();
    studio::RulerPanel* panel = ev->rulerPanel();
    REQUIRE(panel->isVisible());
    CHECK(panel->axis() == "ratio");
    CHECK(panel->length() == 600);
    QCustomPlot* p = ev->plot();

    SECTION("the leaderboard has one line per policy and the full cache dashed") {
        REQUIRE(p->legend);
        CHECK(p->legend->itemCount() == 4);
        int dashed = 0;
        for (int i = 0; i < p->graphCount(); ++i) dashed += p->graph(i)->pen().style() == Qt::DashLine ? 1 : 0;
        CHECK(dashed == 1);
        auto* full = qobject_cast<QCPGraph*>(qobject_cast<QCPPlottableLegendItem*>(p->legend->item(0))->plottable());
        REQUIRE(full);
        CHECK(full->name() == "full cache (100.0)");
        CHECK(full->pen().style() == Qt::DashLine);
        REQUIRE(full->dataCount() == 2);
        CHECK(full->data()->at(0)->value == full->data()->at(1)->value);  // horizontal
        for (const QString& policy : {"snapkv", "streaming", "random"}) {
            QCPGraph* g = graphNamed(p, policy);
            REQUIRE(g);
            REQUIRE(g->dataCount() == 2);  // ratios 0.25 and 0.5; the budget is on the other axis
            CHECK(g->data()->at(0)->key == 0.25);
            CHECK(g->data()->at(1)->key == 0.5);
        }
    }
    SECTION("the table's cells are core's mean scores at the chosen ratio, the last row their mean") {
        panel->setSize(0.25);
        ev->refreshNow();
        const auto scores = snapkv::eval::ruler_scores(rows);
        QTableWidget* t = panel->table();
        const studio::RulerTable& d = panel->data();
        REQUIRE(d.columns.join(" | ").toStdString() == "full cache | snapkv r0.25 | streaming r0.25 | random r0.25");
        REQUIRE(t->rowCount() == 3);
        REQUIRE(t->columnCount() == 4);
        int checked = 0;
        for (int r = 0; r < 2; ++r)
            for (int c = 0; c < 4; ++c) {
                double mean = 0;
                for (const auto& s : scores)
                    if (s.task == d.tasks[r].toStdString() && s.length == 600 && s.config == d.configs[size_t(c)])
                        mean = s.mean, ++checked;
                CHECK(t->item(r, c)->text() == QString::number(mean, 'f', 1));
                CHECK_THAT(d.cells[size_t(r)][size_t(c)].mean, Catch::Matchers::WithinAbs(mean, 1e-9));
            }
        CHECK(checked == 8);
        for (int c = 0; c < 4; ++c)
            CHECK_THAT(d.average[size_t(c)].mean,
                       Catch::Matchers::WithinAbs((d.cells[0][size_t(c)].mean + d.cells[1][size_t(c)].mean) / 2, 1e-9));
        // The leaderboard's point at that ratio is the table's last row.
        QCPGraph* snap = graphNamed(p, "snapkv");
        REQUIRE(snap);
        CHECK_THAT(snap->data()->at(0)->value, Catch::Matchers::WithinAbs(d.average[1].mean, 1e-9));
        // The budget axis: the same policies at C200, on a log axis.
        panel->setAxis("budget");
        ev->refreshNow();
        CHECK(panel->data().columns.join(" | ").toStdString() ==
              "full cache | snapkv C200 | streaming C200 | random C200");
        REQUIRE(graphNamed(p, "snapkv"));
        CHECK(graphNamed(p, "snapkv")->data()->at(0)->key == 200);
        CHECK(p->axisRects().front()->axis(QCPAxis::atBottom)->scaleType() == QCPAxis::stLogarithmic);
    }
    SECTION("clicking a point finds the worst sample of that policy and ratio") {
        p->replot();
        QCPGraph* g = graphNamed(p, "streaming");
        REQUIRE(g);
        QCPAxisRect* rect = p->axisRects().front();
        const double x = g->data()->at(1)->key, y = g->data()->at(1)->value;
        const json* row = ev->rowAt(
            QPointF(rect->axis(QCPAxis::atBottom)->coordToPixel(x), rect->axis(QCPAxis::atLeft)->coordToPixel(y)));
        REQUIRE(row);
        CHECK((*row)["policy"] == "streaming");
        CHECK((*row)["ratio"] == 0.5);
        double lowest = 2;
        for (const auto& r : rows)
            if (r["config"] == (*row)["config"]) lowest = std::min(lowest, r["score"].get<double>());
        CHECK((*row)["score"].get<double>() == lowest);
    }
    SECTION("clicking a table cell opens its worst sample with needles and answers marked") {
        panel->setSize(0.5);
        ev->refreshNow();
        QTableWidget* t = panel->table();
        const studio::RulerStat& s = panel->data().cells[1][1];  // niah_multivalue, snapkv r0.5
        const json* row = ev->results().row(s.worstCell, s.worstConfig);
        REQUIRE(row);
        CHECK((*row)["ruler_task"] == "niah_multivalue");
        studio::EvalCellPrompt cell;
        QObject::connect(ev, &studio::EvaluateView::openCellRequested, ev,
                         [&](const studio::EvalCellPrompt& c) { cell = c; });
        QSignalSpy opened(ev, &studio::EvaluateView::openCellRequested);
        t->scrollToItem(t->item(1, 1));
        QTest::mouseClick(t->viewport(), Qt::LeftButton, {}, t->visualItemRect(t->item(1, 1)).center());
        REQUIRE(opened.wait(60000));  // a loaded file: the worker rebuilds the sample first
        const int sample = (*row)["sample"].get<int>();
        CHECK(cell.title.startsWith(QString("niah_multivalue #%1 at 600 tokens: snapkv r0.5").arg(sample)));
        CHECK(cell.params.ratio == 0.5);
        CHECK(cell.focusLeastKept);
        REQUIRE(guitest::waitRun(*w).what == "finished");
        auto* st = w->state();
        REQUIRE(st->hasPrefill());
        CHECK(st->prefill().n_tokens == (*row)["n_tokens"].get<int64_t>());
        CHECK(st->params().useRatio);
        CHECK(st->params().ratio == 0.5);
        // Four needles (one per value) and the four values inside them, as the row records them.
        const auto& marks = st->markedSpans();
        REQUIRE(marks.size() == 8);
        for (size_t i = 0; i < 4; ++i) {
            CHECK(marks[i].label == "needle");
            CHECK(marks[i].first == (*row)["needle_spans"][i][0].get<int64_t>());
            CHECK(marks[i + 4].label == "answer");
            CHECK(marks[i + 4].first == (*row)["answer_spans"][i][0].get<int64_t>());
            CHECK(marks[i + 4].last == (*row)["answer_spans"][i][1].get<int64_t>());
            // The main view's own prefill has the reference at the answer's span.
            std::string text;
            for (int64_t k = marks[i + 4].first; k < marks[i + 4].last; ++k) text += st->prefill().pieces[size_t(k)];
            CHECK_THAT(text, Catch::Matchers::Contains((*row)["references"][i].get<std::string>()));
        }
        // The focused head kept no more of the needles than any other head.
        std::vector<studio::EvalCellPrompt::Mark> needles(cell.marks.begin(), cell.marks.begin() + 4);
        const auto [layer, head] = studio::leastKeptHead(*st->selection(), needles);
        CHECK(st->layer() == layer);
        CHECK(st->head() == head);
        CHECK(w->currentViewName() == "document");
    }
    // Screenshots for a person to look at: SNAPKV_GUI_SHOTS=folder (and SNAPKV_RULER_RESULTS=a
    // real run to show instead of these rewritten scores).
    if (const QString shots = qEnvironmentVariable("SNAPKV_GUI_SHOTS"); !shots.isEmpty()) {
        const QString real = qEnvironmentVariable("SNAPKV_RULER_RESULTS");
        if (!real.isEmpty()) REQUIRE(ev->loadResults(real, &error));
        ev->resize(1600, 1000);
        ev->refreshNow();
        QDir().mkpath(shots);
        REQUIRE(studio::exportPlot(p, shots + "/ruler_leaderboard.png", &error, 1000, 650));
        REQUIRE(panel->grab().save(shots + "/ruler_table.png"));
        REQUIRE(ev->grab().save(shots + "/ruler_tab.png"));
        // With SNAPKV_RULER_MODEL (the model of that run): the worst sample of the table's second
        // row and column opened in the document and head views.
        if (const QString model = qEnvironmentVariable("SNAPKV_RULER_MODEL"); !model.isEmpty()) {
            const studio::RulerStat& s = panel->data().cells.at(1).at(1);
            const json* row = ev->results().row(s.worstCell, s.worstConfig);
            REQUIRE(row);
            w->setModelPath(model);
            w->resize(1600, 1000);
            QSignalSpy opened(ev, &studio::EvaluateView::openCellRequested);
            ev->openRow(*row);
            REQUIRE(opened.wait(300000));
            REQUIRE(guitest::waitRun(*w, 300000).what == "finished");
            settle();
            REQUIRE(w->grab().save(shots + "/ruler_sample_document.png"));
            REQUIRE(w->showView("head"));
            settle();
            REQUIRE(w->grab().save(shots + "/ruler_sample_head.png"));
        }
    }
}
