// The main window end to end on stories260K: run, every view, generation, cancel, corrupt model,
// a document longer than the context, empty states, an empty document, the cache report, settings.
#include <catch2/catch.hpp>

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMessageBox>
#include <QMimeData>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <QTextEdit>
#include <QUrl>

#include "app/gui/files/data_export.h"
#include "app/gui/panels/parameter_panel.h"
#include "app/gui/panels/prompt_panel.h"
#include "app/gui/panels/shortcuts_dialog.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/view_tabs.h"
#include "app/gui/views/compare_view.h"
#include "app/gui/views/document_view.h"
#include "app/gui/views/head_view.h"
#include "app/gui/views/overview_view.h"
#include "app/gui/views/timeline_view.h"
#include "app/gui/workers/run_controller.h"
#include "gui_test_util.h"

#include <qcustomplot.h>
#include <QTableWidget>

using namespace guitest;

TEST_CASE("Run on stories260K fills the overview, head, document and compare views", "[gui]") {
    auto w = makeWindow(64);
    const Outcome o = runAndWait(*w);
    REQUIRE(o.what == "finished");
    auto* state = w->state();
    REQUIRE(state->hasModel());
    REQUIRE(state->hasPrefill());
    REQUIRE(state->selection() != nullptr);
    const auto& cfg = state->model().config;
    const int64_t L = state->prefill().n_tokens;
    REQUIRE(L > 128);

    SECTION("overview: one cell per layer and query head") {
        REQUIRE(w->showView("overview"));
        settle();
        w->overviewView()->refreshNow();
        const auto& grid = w->overviewView()->grid();
        REQUIRE(static_cast<int64_t>(grid.size()) == cfg.n_layer);
        REQUIRE(static_cast<int64_t>(grid.front().size()) == cfg.n_head);
        for (const auto& row : grid)
            for (double v : row) CHECK((v >= 0.0 && v <= 1.0 + 1e-9));
    }
    SECTION("head detail: W rows over L keys, kept positions match the selection") {
        REQUIRE(w->showView("head"));
        settle();
        auto* hv = w->headView();
        hv->refreshNow();
        CHECK(hv->heatmapRows() == 32);
        CHECK(hv->heatmapKeys() == L);
        CHECK(hv->heatmapColumnsDrawn() > 0);
        CHECK(hv->keptPositions() == state->focusedHead()->kept);
        CHECK(static_cast<int64_t>(hv->keptPositions().size()) == 64 - 32);
        CHECK(hv->clusterCount() >= 1);
    }
    SECTION("document: one category per prompt token, window and kept marked") {
        REQUIRE(w->showView("document"));
        settle();
        auto* dv = w->documentView();
        dv->refreshNow();
        const auto& cats = dv->categories();
        REQUIRE(static_cast<int64_t>(cats.size()) == L);
        CHECK(std::count(cats.begin(), cats.end(), studio::DocumentView::Window) == 32);
        const auto kept = std::count(cats.begin(), cats.end(), studio::DocumentView::Kept) +
                          std::count(cats.begin(), cats.end(), studio::DocumentView::Sink);
        CHECK(kept == 32);
        CHECK(!dv->tooltipFor(5).isEmpty());
        CHECK(dv->tooltipFor(5).contains("token id"));
    }
    SECTION("compare: generation on request fills outputs, table, KL plot and hit rates") {
        REQUIRE(w->showView("compare"));
        CHECK(state->comparison() == nullptr);  // never generated without asking
        const Outcome g = generateAndWait(*w, 6);
        REQUIRE(g.what == "finished");
        REQUIRE(state->comparison() != nullptr);
        auto* cv = w->compareView();
        cv->refreshNow();
        CHECK(state->comparison()->full.ids.size() == 6);
        CHECK(cv->table()->rowCount() >= 5);
        CHECK(cv->plot()->graphCount() == 1);
        CHECK(cv->plot()->graph(0)->dataCount() == 6);
        CHECK(!state->comparison()->hit_rate.empty());
        CHECK(cv->fullHtml().size() > 0);
        // The hit-rate statistic of the overview comes from this comparison.
        studio::DisplaySettings d = state->display();
        d.overviewStat = studio::OverviewStat::HitRate;
        state->setDisplay(d);
        w->showView("overview");
        settle();
        w->overviewView()->refreshNow();
        CHECK(static_cast<int64_t>(w->overviewView()->grid().size()) == cfg.n_layer);
    }
}

TEST_CASE("Clicking focus in one view moves the others", "[gui]") {
    auto w = makeWindow(64);
    REQUIRE(runAndWait(*w).what == "finished");
    auto* state = w->state();
    state->setFocus(3, 5);
    // The head view's heatmap follows once the worker has read the new head's rows.
    settleUntil([&] { return state->attention() && state->attention()->layer == 3 && state->attention()->head == 5; });
    REQUIRE(state->attention() != nullptr);
    CHECK(state->attention()->layer == 3);
    CHECK(state->attention()->head == 5);
    w->showView("head");
    settle();
    w->headView()->refreshNow();
    CHECK(w->headView()->keptPositions() == state->selection()->layers[3].heads[5].kept);
}

TEST_CASE("Cancelling a run keeps the window usable", "[gui]") {
    auto w = makeWindow(64);
    // A long document (several copies of the story) so that there is a prefill to cancel.
    QString doc;
    for (int i = 0; i < 3; ++i) doc += storyText() + "\n\n";
    w->setDocumentText(doc);
    bool cancelledSeen = false;
    QObject::connect(w->controller(), &studio::RunController::cancelled, [&] { cancelledSeen = true; });
    // Cancel right after queuing: the worker sees the flag before or during load/prefill.
    w->run();
    w->cancel();
    const Outcome o = waitRun(*w);
    CHECK(o.what.startsWith("cancelled"));
    CHECK(cancelledSeen);
    CHECK_FALSE(w->controller()->busy());
    // The window still works: the next run completes.
    w->setDocumentText(storyText());
    const Outcome again = runAndWait(*w);
    CHECK(again.what == "finished");
    CHECK(w->state()->selection() != nullptr);
}

TEST_CASE("A corrupt model file shows an error dialog, not a crash", "[gui]") {
    QTemporaryDir dir;
    const QString path = dir.filePath("garbage.gguf");
    {
        QFile f(path);
        REQUIRE(f.open(QIODevice::WriteOnly));
        QByteArray junk(4096, '\0');
        for (int i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>((i * 131 + 7) & 0xff);
        f.write(junk);
    }
    auto w = makeWindow(64, /*interactive=*/true);
    QString shown;
    QObject::connect(w.get(), &studio::MainWindow::errorShown, [&](const QString& m) { shown = m; });
    w->setModelPath(path);
    const Outcome o = runAndWait(*w);
    REQUIRE(o.what.startsWith("failed: load model"));
    CHECK(!shown.isEmpty());
    auto* box = w->findChild<QMessageBox*>("errorDialog");
    REQUIRE(box != nullptr);
    CHECK(box->text() == shown);
    CHECK(box->windowTitle() == "Cannot load the model");
    box->close();
    settle();
    // A good model afterwards works in the same window.
    w->setModelPath(modelPath());
    CHECK(runAndWait(*w).what == "finished");
}

TEST_CASE("A document longer than the model's context offers truncation", "[gui]") {
    auto w = makeWindow(64, /*interactive=*/true);
    QString doc;
    for (int i = 0; i < 12; ++i) doc += storyText() + "\n\n";  // about 5000 tokens; the context is 2048
    w->setDocumentText(doc);
    const Outcome o = runAndWait(*w);
    REQUIRE(o.what == "context");
    auto* box = w->findChild<QMessageBox*>("truncateDialog");
    REQUIRE(box != nullptr);
    CHECK(box->text().contains("Truncate"));
    // Accepting truncates and runs.
    box->button(QMessageBox::Yes)->click();
    const Outcome after = waitRun(*w);
    REQUIRE(after.what == "finished");
    CHECK(w->state()->prefill().n_tokens <= 2048);
}

TEST_CASE("Zooming the head view re-renders the visible columns at full resolution", "[gui]") {
    auto w = makeWindow(64);
    REQUIRE(runAndWait(*w).what == "finished");
    w->showView("head");
    settle();
    auto* hv = w->headView();
    hv->refreshNow();
    const int64_t L = hv->heatmapKeys();
    auto* x = hv->plot()->axisRect(0)->axis(QCPAxis::atBottom);
    x->setRange(99.5, 139.5);  // 40 keys: fewer than the pixels, so no downsampling
    settle();
    CHECK(hv->heatmapColumnsDrawn() == 40);
    // The score rect follows the same range.
    CHECK(hv->plot()->axisRect(1)->axis(QCPAxis::atBottom)->range().lower == Approx(99.5));
    // Live tuning keeps the zoom.
    REQUIRE(editAndWait(*w, studio::ParameterPanel::FBudget, 96).ok);
    hv->refreshNow();
    CHECK(x->range().lower == Approx(99.5));
    CHECK(hv->heatmapColumnsDrawn() == 40);
    hv->resetZoom();
    settle();
    CHECK(hv->heatmapColumnsDrawn() <= L);
    CHECK(hv->heatmapColumnsDrawn() > 0);
}

TEST_CASE("The overview grid moves the focus with clicks and arrow keys", "[gui]") {
    auto w = makeWindow(64);
    REQUIRE(runAndWait(*w).what == "finished");
    w->showView("overview");
    settle();
    auto* plot = w->overviewView()->plot();
    const QPoint cell(plot->xAxis->coordToPixel(2), plot->yAxis->coordToPixel(1));
    QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, cell);
    settle();
    CHECK(w->state()->layer() == 1);
    CHECK(w->state()->head() == 2);
    plot->setFocus();
    QTest::keyClick(plot, Qt::Key_Down);
    QTest::keyClick(plot, Qt::Key_Right);
    CHECK(w->state()->layer() == 2);
    CHECK(w->state()->head() == 3);
}

TEST_CASE("Closing the window during a run cancels and returns promptly", "[gui]") {
    auto w = makeWindow(64);
    QString doc;
    for (int i = 0; i < 4; ++i) doc += storyText() + "\n\n";
    w->setDocumentText(doc);
    w->run();
    QElapsedTimer t;
    t.start();
    w->close();  // cancels, waits for the worker, never hangs
    CHECK(t.elapsed() < 20000);
    CHECK_FALSE(w->isVisible());
}

TEST_CASE("Without a model the window explains what to do instead of failing", "[gui]") {
    auto w = makeWindow(64, /*interactive=*/true);
    w->setModelPath(QString());
    w->run();
    settle();
    CHECK(w->lastError().contains("No model is open"));
    auto* box = w->findChild<QMessageBox*>("errorDialog");
    REQUIRE(box != nullptr);
    box->close();
}

TEST_CASE("The overlap statistic fetches the other policy's selection", "[gui]") {
    auto w = makeWindow(64);
    REQUIRE(runAndWait(*w).what == "finished");
    auto* state = w->state();
    QSignalSpy applied(w->controller(), &studio::RunController::retuneApplied);
    studio::DisplaySettings d = state->display();
    d.overviewStat = studio::OverviewStat::Overlap;
    d.overlapPolicy = "streaming";
    state->setDisplay(d);
    REQUIRE(applied.wait(30000));
    settle();
    REQUIRE(state->otherSelection() != nullptr);
    CHECK(state->otherSelection()->params.policy == snapkv::Policy::Streaming);
    w->showView("overview");
    settle();
    w->overviewView()->refreshNow();
    const auto& grid = w->overviewView()->grid();
    REQUIRE(!grid.empty());
    for (const auto& row : grid)
        for (double v : row) CHECK((v >= 0.0 && v <= 1.0));
}

TEST_CASE("Dropping a text file on the window opens it as the document", "[gui]") {
    auto w = makeWindow(64);
    w->setDocumentText("something else");
    w->openDroppedUrls({QUrl::fromLocalFile(guiDataPath("short_story.txt"))});
    CHECK(w->promptPanel()->document().size() == storyText().size());
    CHECK(w->promptPanel()->documentPath().endsWith("short_story.txt"));
}

TEST_CASE("The shortcuts dialog lists the main actions", "[gui]") {
    auto w = makeWindow(64, /*interactive=*/true);
    const auto actions = w->shortcutActions();
    QStringList names;
    for (QAction* a : actions) names << a->text().remove('&');
    CHECK(names.contains("Run"));
    CHECK(names.contains("Cancel"));
    CHECK(names.contains("Save Session…"));
    for (QAction* a : actions)
        if (a->text().remove('&') == "Keyboard Shortcuts") a->trigger();
    settle();
    auto* dialog = w->findChild<studio::ShortcutsDialog*>();
    REQUIRE(dialog != nullptr);
    auto* table = dialog->findChild<QTableWidget*>();
    REQUIRE(table != nullptr);
    CHECK(table->rowCount() >= 15);
    dialog->close();
}

TEST_CASE("Two quick runs of the same prompt prefill once", "[gui]") {
    auto w = makeWindow(64);
    int prefills = 0;
    QObject::connect(w->state(), &studio::AnalysisState::prefillChanged, [&] {
        if (w->state()->hasPrefill()) ++prefills;
    });
    QSignalSpy finished(w->controller(), &studio::RunController::runFinished);
    w->run();
    w->run();
    for (int i = 0; i < 2 && finished.count() < 2; ++i) finished.wait(60000);
    CHECK(finished.count() == 2);
    CHECK(prefills == 1);
}

TEST_CASE("Before the first Run every view says what to do instead of showing empty axes", "[gui]") {
    auto w = makeWindow(64);
    // Every view of the run's results, as the registry lists them: its empty-state panel stands in
    // for its content (the stack's first page) until there is something to draw.
    const QList<studio::LazyView*> views = w->views()->analysisViews();
    REQUIRE(views.size() >= 4);
    auto contentShown = [](studio::LazyView* v) {
        auto* stack = v->findChild<QStackedWidget*>();
        REQUIRE(stack != nullptr);
        return stack->widget(0)->isVisible();
    };
    for (studio::LazyView* v : views) {
        INFO(v->metaObject()->className());
        w->views()->setCurrentWidget(v);
        settle();
        v->refreshNow();
        CHECK(v->emptyStateShown());
        CHECK(v->emptyStateText().contains("Press Run (F5)"));
        CHECK_FALSE(contentShown(v));  // no empty axes, no 0..1 colour scale
    }
    // The empty state's button runs.
    REQUIRE(w->showView("overview"));
    settle();
    auto* button = w->overviewView()->findChild<QPushButton*>("emptyStateAction");
    REQUIRE(button != nullptr);
    CHECK(button->isVisible());
    button->click();
    REQUIRE(w->controller()->busy());
    REQUIRE(waitRun(*w).what == "finished");
    for (studio::LazyView* v : views) {
        INFO(v->metaObject()->className());
        w->views()->setCurrentWidget(v);
        settle();
        v->refreshNow();
        if (v == w->compareView() || qobject_cast<studio::TimelineView*>(v)) {
            CHECK(v->emptyStateShown());  // until Generate & compare
            CHECK(v->emptyStateText().contains("Generate & compare"));
        } else {
            CHECK_FALSE(v->emptyStateShown());
            CHECK(contentShown(v));
        }
    }
    REQUIRE(generateAndWait(*w, 4).ok);
    w->compareView()->refreshNow();
    CHECK_FALSE(w->compareView()->emptyStateShown());
    CHECK(w->compareView()->plot()->isVisible());
}

TEST_CASE("An empty document gets a plain message and leaves the window ready", "[gui]") {
    auto w = makeWindow(64, /*interactive=*/true);
    w->setDocumentText("  \n ");
    CHECK_FALSE(w->run());
    settle();
    CHECK(w->lastError().contains("document"));
    CHECK(w->lastError().contains("empty"));
    auto* box = w->findChild<QMessageBox*>("errorDialog");
    REQUIRE(box != nullptr);
    CHECK(box->windowTitle() == "No document");
    CHECK_FALSE(w->controller()->busy());
    box->close();
    CHECK_FALSE(w->generate(4));  // nothing prefilled: refused at once, not queued
    CHECK_FALSE(w->controller()->busy());
    if (auto* b = w->findChild<QMessageBox*>("errorDialog")) b->close();
    w->setDocumentText(storyText());
    CHECK(runAndWait(*w).what == "finished");
}

TEST_CASE("The default setting shrinks the cache and per query head the panel says why it grows", "[gui]") {
    // The default is a preset of its own, one selection per KV head; the official one is a click away.
    const auto ps = studio::presets();
    REQUIRE(ps.size() >= 2);
    CHECK(ps.front().state == studio::ParamState{});
    CHECK(ps.front().name.contains("default"));
    CHECK(studio::ParamState{}.sel.gqa == snapkv::GqaMode::KvHead);
    CHECK(ps.at(1).name.startsWith("Official SnapKV"));
    CHECK(ps.at(1).state.sel.gqa == snapkv::GqaMode::QueryHead);

    auto w = makeWindow(64);
    w->parameterPanel()->setState(studio::ParamState{}, false);  // the app's default
    REQUIRE(runAndWait(*w).what == "finished");
    const int64_t L = w->state()->prefill().n_tokens;
    const auto& cfg = w->state()->model().config;
    REQUIRE(cfg.n_head > cfg.n_head_kv);  // stories260K: 8 query heads, 4 KV heads
    REQUIRE(w->state()->selection()->params.gqa == snapkv::GqaMode::KvHead);
    // A budget between L * Hkv / H and L: per KV head it shrinks the cache, per query head it grows it.
    const int64_t C = L * 3 / 4;
    REQUIRE(editAndWait(*w, studio::ParameterPanel::FBudget, double(C)).ok);
    auto r = w->state()->retune();
    REQUIRE(r);
    CHECK(r->kvBytesKept < r->kvBytesFull);
    CHECK(r->cacheNote.isEmpty());
    CHECK(w->parameterPanel()->cacheReport().contains("smaller"));
    REQUIRE(editAndWait(*w, studio::ParameterPanel::FGqa, 0).ok);
    r = w->state()->retune();
    CHECK(r->kvBytesKept > r->kvBytesFull);
    const QString report = w->parameterPanel()->cacheReport();
    INFO(report.toStdString());
    CHECK(report.contains("larger"));
    CHECK(report.contains(QString("each of the %1 query heads").arg(cfg.n_head)));
    CHECK(report.contains(QString("the %1 KV heads").arg(cfg.n_head_kv)));
    CHECK(report.contains(QString("at most %1 tokens").arg((L * cfg.n_head_kv - 1) / cfg.n_head)));
}

TEST_CASE("Settings never keep or restore parameters that no prompt can make valid", "[gui]") {
    auto savedParams = [] { return QJsonDocument::fromJson(QSettings().value("params").toByteArray()).object(); };
    SECTION("a poisoned setting (an older version saved a window of 100000) is not restored") {
        QSettings().setValue("params", QJsonDocument(QJsonObject{{"window", 100000}, {"budget", 300}}).toJson());
        studio::MainWindow w;
        CHECK(w.parameterPanel()->state() == studio::ParamState{});
    }
    SECTION("invalid parameters are not saved over valid ones") {
        {
            studio::MainWindow w;
            studio::ParamState good;
            good.sel.window = 16;
            good.sel.budget = 200;
            w.parameterPanel()->setState(good, false);
            w.close();
        }
        REQUIRE(savedParams()["window"].toInt() == 16);
        {
            studio::MainWindow w;
            CHECK(w.parameterPanel()->state().sel.window == 16);
            studio::ParamState bad = w.parameterPanel()->state();
            bad.sel.window = 100000;
            w.parameterPanel()->setState(bad, false);
            w.close();
        }
        CHECK(savedParams()["window"].toInt() == 16);
    }
    QSettings().remove("params");
}

TEST_CASE("The timeline shows what the compressed cache holds at each step, events and needed tokens", "[gui]") {
    auto w = makeWindow(64);  // per query head, C 64 (see makeWindow)
    studio::ParamState p = w->parameterPanel()->state();
    p.sel.window = 8;
    p.sel.kernel = 5;
    p.decodeBudget = 48;
    p.decodeInterval = 8;
    w->parameterPanel()->setState(p, false);
    REQUIRE(runAndWait(*w).what == "finished");
    REQUIRE(generateAndWait(*w, 40).ok);
    auto* t = w->views()->view<studio::TimelineView>();
    REQUIRE(t != nullptr);
    REQUIRE(w->showView("timeline"));
    settle();
    t->refreshNow();
    const snapkv::CompareResult* r = w->state()->comparison();
    REQUIRE(r != nullptr);
    REQUIRE(r->decode.budget == 48);
    REQUIRE(r->decode_events.size() >= 3);
    CHECK_FALSE(t->emptyStateShown());
    REQUIRE(t->steps() == static_cast<int>(r->steps.size()));
    REQUIRE(t->positions() == static_cast<int>(r->prompt_tokens) + t->steps());
    // Each column holds at most the prefill's budget before the first event, and at most budget +
    // interval after it; a position not generated yet is never drawn as held.
    const int first = static_cast<int>(r->decode_events.front().step) - 1;
    for (int i = 0; i < t->steps(); ++i) {
        int held = 0;
        for (int pos = 0; pos < t->positions(); ++pos) {
            const auto c = t->cellState(i, pos);
            if (pos > r->prompt_tokens + i) CHECK(c == studio::TimelineView::Future);
            held += c == studio::TimelineView::Kept ? 1 : 0;
        }
        INFO("step " << i);
        CHECK(held <= (i < first ? 64 + i + 1 : 48 + 8));
        if (i >= first) CHECK(held == r->cache_tokens[static_cast<size_t>(i)]);
    }
    CHECK(t->tooltipFor(0, 0).contains("prompt token 0"));
    // The share mode and every row.
    t->setShareMode(true);
    t->setCompactRows(false);
    t->refreshNow();
    CHECK(t->rows() == t->positions());
    QString error;
    const QString png = QDir::temp().filePath("snapkv_timeline_test.png");
    CHECK(studio::exportPlot(t->plot(), png, &error));
    CHECK(QFileInfo(png).size() > 1000);
    QFile::remove(png);
}
