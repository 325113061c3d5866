// The main window end to end on stories260K: run, every view, generation, cancel, corrupt model,
// a document longer than the context.
#include <catch2/catch.hpp>

#include <QAction>
#include <QApplication>
#include <QFile>
#include <QMimeData>
#include <QSignalSpy>
#include <QUrl>
#include <QMessageBox>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTest>
#include <QTextEdit>
#include <QElapsedTimer>

#include "app/gui/analysis_state.h"
#include "app/gui/compare_view.h"
#include "app/gui/document_view.h"
#include "app/gui/head_view.h"
#include "app/gui/overview_view.h"
#include "app/gui/prompt_panel.h"
#include "app/gui/run_controller.h"
#include "app/gui/shortcuts_dialog.h"
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
        CHECK(state->comparison() == nullptr);   // never generated without asking
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
    for (int i = 0; i < 200 && !(state->attention() && state->attention()->layer == 3 && state->attention()->head == 5); ++i)
        settle();
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
    for (int i = 0; i < 12; ++i) doc += storyText() + "\n\n";   // about 5000 tokens; the context is 2048
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
    x->setRange(99.5, 139.5);   // 40 keys: fewer than the pixels, so no downsampling
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
    w->close();   // cancels, waits for the worker, never hangs
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
