// The Evaluate tab on stories260K: a needle grid run in its worker thread fills one heatmap per
// configuration and the results file; Cancel keeps the finished rows and Run resumes; clicking a
// cell opens its document in the main views with the configuration applied and the needle marked;
// a sweep draws one curve per policy; results files load and export.
#include <catch2/catch.hpp>

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <fstream>

#include "app/gui/state/analysis_state.h"
#include "app/gui/views/document_view.h"
#include "app/gui/views/evaluate_view.h"
#include "app/gui/views/head_view.h"
#include "core/eval/results_file.h"
#include "gui_test_util.h"

#include <qcustomplot.h>

using namespace guitest;
using json = nlohmann::json;

namespace {

void needleForm(studio::EvaluateView* ev, const QString& out, const QString& lengths, int maxTokens) {
    ev->setTask("needle");
    ev->setField("lengths", lengths);
    ev->setField("depths", "0,50,100");
    ev->setField("haystack", dataPath("reference/ppl-text.txt"));
    ev->setField("policies", "snapkv,streaming");
    ev->setField("budgets", "48");
    ev->setField("window", "16");
    ev->setField("kernel", "5");
    ev->setField("max_tokens", QString::number(maxTokens));
    ev->setField("out", out);
}

bool waitRun(studio::EvaluateView* ev, int timeoutMs = 240000) {
    QSignalSpy spy(ev, &studio::EvaluateView::runFinished);
    return spy.wait(timeoutMs);
}

size_t fileRows(const QString& path) { return snapkv::eval::read_results(path.toStdString(), true).rows.size(); }

int colorMaps(QCustomPlot* p) {
    int n = 0;
    for (int i = 0; i < p->plottableCount(); ++i) n += qobject_cast<QCPColorMap*>(p->plottable(i)) ? 1 : 0;
    return n;
}

}  // namespace

TEST_CASE("the Evaluate tab runs a needle grid, draws a heatmap per configuration and opens a cell", "[gui][eval]") {
    auto w = makeWindow(64);
    QTemporaryDir dir;
    auto* ev = w->evaluateView();
    REQUIRE(w->showView("evaluate"));
    const QString out = dir.filePath("needle.jsonl");
    needleForm(ev, out, "96,128", 4);
    QString error;
    REQUIRE(ev->startRun(&error));
    REQUIRE(waitRun(ev));
    INFO(ev->statusText().toStdString());
    CHECK(ev->statusText().startsWith("Done: 18 rows"));
    CHECK(ev->results().size() == 18);
    CHECK(fileRows(out) == 18);
    ev->refreshNow();
    CHECK(colorMaps(ev->plot()) == 3);  // full, snapkv C48, streaming C48
    for (int64_t cell = 0; cell < 6; ++cell)
        for (int64_t k = 0; k < 3; ++k) CHECK(ev->results().value(cell, k, "found").has_value());

    SECTION("hovering a heatmap cell finds its row") {
        ev->refreshNow();
        QCustomPlot* p = ev->plot();
        p->replot();
        // The centre of the second panel's (snapkv) top-right cell: length 128, depth 100.
        QCPAxisRect* rect = nullptr;
        int seen = 0;
        for (QCPAxisRect* r : p->axisRects())
            if (r->graphs().isEmpty() && !r->plottables().isEmpty() && seen++ == 1) rect = r;
        REQUIRE(rect);
        const QPointF pos(rect->axis(QCPAxis::atBottom)->coordToPixel(2), rect->axis(QCPAxis::atLeft)->coordToPixel(1));
        const json* row = ev->rowAt(pos);
        REQUIRE(row);
        CHECK((*row)["length"] == 128);
        CHECK((*row)["depth"] == 100.0);
        CHECK((*row)["config"] == 1);
    }
    SECTION("clicking a cell prefills its document with the configuration and marks the needle") {
        const json* row = ev->results().row(1, 1);  // length 96, depth 50, snapkv C48
        REQUIRE(row);
        QSignalSpy opened(ev, &studio::EvaluateView::openCellRequested);
        ev->openRow(*row);
        REQUIRE(opened.count() == 1);  // from the prompts kept during the run: no session needed
        REQUIRE(guitest::waitRun(*w).what == "finished");
        auto* st = w->state();
        REQUIRE(st->hasPrefill());
        CHECK(st->prefill().n_tokens == 96);
        CHECK(st->params().sel.budget == 48);
        CHECK(st->params().sel.window == 16);
        CHECK(st->params().sel.kernel == 5);
        CHECK(st->markedFirst() == (*row)["needle_span"][0].get<int64_t>());
        CHECK(st->markedLast() == (*row)["needle_span"][1].get<int64_t>());
        CHECK(w->currentViewName() == "document");
        // The marked tokens are the needle in the main view's own prefill.
        std::string marked;
        for (int64_t i = st->markedFirst(); i < st->markedLast(); ++i) marked += st->prefill().pieces[size_t(i)];
        CHECK_THAT(marked, Catch::Matchers::Contains("pass key is " + (*row)["needle_value"].get<std::string>()));
        w->documentView()->refreshNow();
        CHECK(w->documentView()->tooltipFor(static_cast<int>(st->markedFirst())).contains("needle"));
        w->headView()->refreshNow();
        // A new document drops the mark.
        w->setDocumentText(storyText());
        REQUIRE(runAndWait(*w).what == "finished");
        CHECK(st->markedFirst() < 0);
    }
    SECTION("a results file opens again and exports rows and plot") {
        auto w2 = makeWindow(64);
        auto* ev2 = w2->evaluateView();
        REQUIRE(ev2->loadResults(out, &error));
        CHECK(ev2->results().size() == 18);
        CHECK(ev2->task() == "needle");
        REQUIRE(ev2->exportData(dir.filePath("rows.csv"), &error));
        REQUIRE(ev2->exportPlot(dir.filePath("heat.png"), &error));
        CHECK(QFile(dir.filePath("heat.png")).size() > 1000);
        QFile csv(dir.filePath("rows.csv"));
        REQUIRE(csv.open(QIODevice::ReadOnly));
        CHECK(csv.readAll().count('\n') == 19);
        // A cell of a loaded file is rebuilt by the worker (its own session) before it opens; it
        // needs the haystack the file was made with.
        QSignalSpy failed(ev2, &studio::EvaluateView::errorOccurred);
        ev2->openRow(*ev2->results().row(4, 2));
        REQUIRE(failed.wait(60000));
        CHECK(failed.front().at(1).toString().contains("another haystack"));
        ev2->setField("haystack", dataPath("reference/ppl-text.txt"));
        QSignalSpy opened(ev2, &studio::EvaluateView::openCellRequested);
        ev2->openRow(*ev2->results().row(4, 2));
        REQUIRE(opened.wait(60000));
        REQUIRE(guitest::waitRun(*w2).what == "finished");
        CHECK(w2->state()->prefill().n_tokens == 128);
        CHECK(w2->state()->markedFirst() == (*ev2->results().row(4, 2))["needle_span"][0].get<int64_t>());
    }
}

TEST_CASE("Cancel keeps the finished rows and Run resumes the same file", "[gui][eval]") {
    auto w = makeWindow(64);
    QTemporaryDir dir;
    auto* ev = w->evaluateView();
    const QString out = dir.filePath("needle.jsonl");
    needleForm(ev, out, "96,128,160", 24);
    QString error;
    REQUIRE(ev->startRun(&error));
    {
        QSignalSpy row(ev->controller(), &studio::EvalController::rowFinished);
        REQUIRE(row.wait(120000));
    }
    ev->cancel();
    REQUIRE(waitRun(ev));
    const size_t kept = fileRows(out);
    INFO(ev->statusText().toStdString());
    CHECK(ev->statusText().startsWith("Cancelled"));
    CHECK(kept >= 1);
    CHECK(kept < 27);
    CHECK(ev->results().size() == kept);  // partial results stay visible
    REQUIRE(ev->startRun(&error));
    REQUIRE(waitRun(ev));
    CHECK(fileRows(out) == 27);
    CHECK(ev->results().size() == 27);
}

TEST_CASE("a sweep draws one curve per policy against the budget", "[gui][eval]") {
    auto w = makeWindow(64);
    QTemporaryDir dir;
    const QString story = storyText();
    {
        std::ofstream f(dir.filePath("set.jsonl").toStdString());
        f << json({{"id", "a"}, {"document", story.toStdString()}, {"question", "Who was there?"}, {"answer", "Lily"}})
                 .dump()
          << "\n"
          << json({{"id", "b"}, {"document", story.mid(200).toStdString()}, {"question", "What happened?"}}).dump()
          << "\n";
    }
    auto* ev = w->evaluateView();
    ev->setTask("sweep");
    ev->setField("set", dir.filePath("set.jsonl"));
    ev->setField("policies", "snapkv,streaming");
    ev->setField("budgets", "48,96");
    ev->setField("window", "16");
    ev->setField("kernel", "5");
    ev->setField("max_tokens", "4");
    ev->setField("out", dir.filePath("sweep.jsonl"));
    QString error;
    REQUIRE(ev->startRun(&error));
    REQUIRE(waitRun(ev));
    REQUIRE(ev->results().size() == 2 * 5);
    std::optional<double> full;
    const auto curves = ev->results().curves("agree_full", &full);
    REQUIRE(curves.size() == 2);
    CHECK(curves[0].label == "snapkv W16 K5");
    CHECK(curves[1].label == "streaming W16");
    for (const auto& c : curves) {
        REQUIRE(c.points.size() == 2);
        CHECK(c.points[0].budget == 48);
        CHECK(c.points[1].budget == 96);
        for (const auto& p : c.points) {
            CHECK(p.n == 2);
            CHECK(p.lo <= p.mean);
            CHECK(p.mean <= p.hi);
        }
    }
    REQUIRE(full.has_value());
    CHECK(*full == 1.0);
    REQUIRE(w->showView("evaluate"));
    ev->refreshNow();
    QCustomPlot* p = ev->plot();
    CHECK(p->legend != nullptr);
    CHECK(p->legend->itemCount() == 3);  // full cache, snapkv, streaming
    CHECK(qobject_cast<QCPPlottableLegendItem*>(p->legend->item(0))->plottable()->name().startsWith("full cache"));
    // The budget axis is labelled with the budgets that were run.
    QCPAxisRect* plotRect = p->axisRects().front();
    auto ticker = plotRect->axis(QCPAxis::atBottom)->ticker().dynamicCast<QCPAxisTickerText>();
    REQUIRE(ticker);
    CHECK(ticker->ticks().keys() == QList<double>{48, 96});
    // A legend click hides a policy's line and its band; a second click shows them again.
    auto* item = qobject_cast<QCPPlottableLegendItem*>(p->legend->item(1));
    REQUIRE(item);
    int visibleBefore = 0;
    for (int i = 0; i < p->graphCount(); ++i) visibleBefore += p->graph(i)->visible() ? 1 : 0;
    Q_EMIT p->legendClick(p->legend, item, nullptr);
    int visibleAfter = 0;
    for (int i = 0; i < p->graphCount(); ++i) visibleAfter += p->graph(i)->visible() ? 1 : 0;
    CHECK(visibleAfter == visibleBefore - 3);
    CHECK_FALSE(item->plottable()->visible());
    Q_EMIT p->legendClick(p->legend, item, nullptr);
    CHECK(item->plottable()->visible());
    // Clicking near a point opens the worst item of that point.
    QCPAxisRect* rect = p->axisRects().front();
    const auto& pt = curves[0].points[0];
    const json* row = ev->rowAt(QPointF(rect->axis(QCPAxis::atBottom)->coordToPixel(pt.budget),
                                        rect->axis(QCPAxis::atLeft)->coordToPixel(pt.mean)));
    REQUIRE(row);
    CHECK((*row)["cell"] == pt.worstCell);
    CHECK((*row)["budget"] == 48);
}
