// One KV head (multi-query attention, Gemma 3, Mistral's tiny model): per KV head the overview has a
// single column. It must fill the plot with whole cells, label every layer row (global layers too)
// and the head view's legend must not cover the notes drawn in the score plot. Checked on the
// tiny Gemma 3 (n_head 4, n_head_kv 1, 6 layers, window 10, layer 5 global) through the plot's data
// and items, plus the rendered pixels for the column. Also: the Model menu lists models/ folders.
#include <catch2/catch.hpp>

#include <QDir>
#include <QFile>
#include <QImage>
#include <QMenu>
#include <QMenuBar>
#include <QTemporaryDir>

#include <qcustomplot.h>

#include "app/gui/panels/model_menu.h"
#include "app/gui/panels/prompt_panel.h"
#include "app/gui/plot/plot_style.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/views/head_view.h"
#include "app/gui/views/overview_view.h"
#include "gui_test_util.h"

using namespace guitest;
using Catch::Matchers::WithinAbs;

namespace {

std::unique_ptr<studio::MainWindow> runTinyGemma3() {
    auto w = makeWindow(24);
    w->setModelPath(dataPath("tiny/gemma3/gemma3.gguf"));
    // 20+ tokens with the chat template: longer than the sliding window (10), so the sliding
    // layers have a prefix the next token cannot see.
    w->setDocumentText("Twelve miles off a cold northern coast there is a rock called Skerry Dun.");
    w->setQuestion("Where is the rock?");
    studio::ParamState p;
    p.sel.window = 8;
    p.sel.budget = 24;
    p.sel.gqa = snapkv::GqaMode::KvHead;
    w->parameterPanel()->setState(p, false);
    return w;
}

bool isBackground(QRgb c) { return qRed(c) > 245 && qGreen(c) > 245 && qBlue(c) > 245; }

}  // namespace

TEST_CASE("Layer labels name every row, sliding or global, while rows are tall enough", "[gui]") {
    // Gemma 3 270M: 18 layers, every sixth global (5, 11, 17), the others a 512-token window.
    std::vector<int64_t> windows(18, 512);
    for (int l : {5, 11, 17}) windows[static_cast<size_t>(l)] = 0;
    const QStringList labels = studio::layerLabels(windows);
    REQUIRE(labels.size() == 18);
    for (int l = 0; l < 18; ++l)
        CHECK(labels[l] == (windows[static_cast<size_t>(l)] > 0 ? QString("%1 sw").arg(l) : QString::number(l)));
    SECTION("every row while a label fits, then every 2nd, 5th, 10th") {
        CHECK(studio::labelStep(30.0, 14.0) == 1);
        CHECK(studio::labelStep(14.0, 14.0) == 1);
        CHECK(studio::labelStep(8.0, 14.0) == 2);
        CHECK(studio::labelStep(3.0, 14.0) == 5);
        CHECK(studio::labelStep(1.0, 14.0) == 20);
        CHECK(studio::labelStep(0.0, 14.0) == 1);  // not laid out yet
    }
    SECTION("an 18-row axis 400 pixels tall labels every row; a short one every step-th row, evenly") {
        QCustomPlot plot;
        plot.setViewport(QRect(0, 0, 300, 460));
        plot.yAxis->setRange(-0.5, 17.5);
        plot.replot();
        studio::setCellLabels(plot.yAxis, labels);
        auto ticks = plot.yAxis->ticker().dynamicCast<QCPAxisTickerText>();
        REQUIRE(ticks);
        CHECK(ticks->ticks().size() == 18);
        CHECK(ticks->ticks().value(11) == "11");
        CHECK(ticks->ticks().value(12) == "12 sw");
        plot.setViewport(QRect(0, 0, 300, 160));
        plot.replot();
        CHECK(studio::setCellLabels(plot.yAxis, labels));
        ticks = plot.yAxis->ticker().dynamicCast<QCPAxisTickerText>();
        const int step = studio::labelStep(plot.axisRect()->height() / 18.0,
                                           QFontMetrics(plot.yAxis->tickLabelFont()).height());
        CHECK(step > 1);
        QList<double> every;
        for (int l = 0; l < 18; l += step) every << l;
        CHECK(ticks->ticks().keys() == every);
        CHECK_FALSE(studio::setCellLabels(plot.yAxis, labels));  // unchanged: no replot needed
    }
}

TEST_CASE("A one-column or one-row colour map covers whole cells", "[gui]") {
    QCustomPlot plot;
    auto* map = new QCPColorMap(plot.xAxis, plot.yAxis);
    const int nx = GENERATE(1, 2, 7);
    const int ny = GENERATE(1, 18);
    CAPTURE(nx, ny);
    studio::setUnitCells(map, nx, ny);
    const QCPRange kx = studio::cellExtent(*map->data(), true);
    const QCPRange ky = studio::cellExtent(*map->data(), false);
    CHECK_THAT(kx.lower, WithinAbs(-0.5, 1e-12));
    CHECK_THAT(kx.upper, WithinAbs(nx - 0.5, 1e-12));
    CHECK_THAT(ky.lower, WithinAbs(-0.5, 1e-12));
    CHECK_THAT(ky.upper, WithinAbs(ny - 0.5, 1e-12));
}

TEST_CASE("One KV head: the overview's single column fills the plot and every layer is labelled", "[gui][arch]") {
    auto w = runTinyGemma3();
    const Outcome o = runAndWait(*w);
    REQUIRE(o.what == "finished");
    const auto& cfg = w->state()->model().config;
    REQUIRE(cfg.n_head_kv == 1);
    REQUIRE(cfg.n_head == 4);
    REQUIRE(cfg.n_layer == 6);

    REQUIRE(w->showView("overview"));
    settle();
    w->overviewView()->refreshNow();
    settle();
    const auto& grid = w->overviewView()->grid();
    REQUIRE(grid.size() == 6);
    for (const auto& row : grid) REQUIRE(row.size() == 1);

    auto* plot = w->overviewView()->plot();
    QCPColorMap* map = nullptr;
    for (int i = 0; i < plot->plottableCount() && !map; ++i) map = qobject_cast<QCPColorMap*>(plot->plottable(i));
    REQUIRE(map != nullptr);
    CHECK_FALSE(map->tightBoundary());

    SECTION("the cells span exactly the axes' ranges: one unit per KV head and per layer") {
        const QCPRange kx = studio::cellExtent(*map->data(), true);
        const QCPRange ky = studio::cellExtent(*map->data(), false);
        CHECK_THAT(kx.lower, WithinAbs(plot->xAxis->range().lower, 1e-9));
        CHECK_THAT(kx.upper, WithinAbs(plot->xAxis->range().upper, 1e-9));
        CHECK_THAT(ky.lower, WithinAbs(plot->yAxis->range().lower, 1e-9));
        CHECK_THAT(ky.upper, WithinAbs(plot->yAxis->range().upper, 1e-9));
        CHECK_THAT(plot->xAxis->range().size(), WithinAbs(1.0, 1e-12));
        CHECK_THAT(plot->yAxis->range().size(), WithinAbs(6.0, 1e-12));
    }

    SECTION("one head tick, '0', under the middle of the column, on an axis named for KV heads") {
        auto heads = plot->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
        REQUIRE(heads);
        CHECK(heads->ticks().size() == 1);
        CHECK(heads->ticks().value(0.0) == "0");
        CHECK(plot->xAxis->label() == "KV head");
        const QRect r = plot->axisRect()->rect();
        CHECK_THAT(plot->xAxis->coordToPixel(0.0), WithinAbs(r.center().x(), 1.0));
    }

    SECTION("every layer row has a label: 'N sw' on the sliding layers, 'N' on the global one") {
        auto layers = plot->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
        REQUIRE(layers);
        REQUIRE(layers->ticks().size() == 6);
        for (int l = 0; l < 6; ++l) {
            const bool sliding = cfg.layers[static_cast<size_t>(l)].sliding_window > 0;
            CHECK(sliding == (l != 5));
            CHECK(layers->ticks().value(l) == (sliding ? QString("%1 sw").arg(l) : QString::number(l)));
        }
    }

    SECTION("drawn, the column is coloured from the left edge of the plot to the right") {
        const QImage img = plot->toPixmap(plot->width(), plot->height()).toImage();
        const QRect r = plot->axisRect()->rect();
        for (int l = 0; l < 6; ++l) {
            if (!std::isfinite(grid[static_cast<size_t>(l)][0])) continue;
            const int y = static_cast<int>(plot->yAxis->coordToPixel(l));
            CAPTURE(l, y);
            for (double fx : {0.08, 0.3, 0.7, 0.92}) {
                const int x = r.left() + static_cast<int>(fx * r.width());
                CAPTURE(fx, x);
                CHECK_FALSE(isBackground(img.pixel(x, y)));
            }
        }
    }
}

TEST_CASE("One KV head: the head view's legend sits apart from the sliding-window note", "[gui][arch]") {
    auto w = runTinyGemma3();
    REQUIRE(runAndWait(*w).what == "finished");
    w->state()->setFocus(0, 0);  // layer 0 slides (window 10)
    REQUIRE(w->showView("head"));
    settle();
    w->headView()->refreshNow();
    settle();
    auto* plot = w->headView()->plot();
    plot->replot();
    const auto* ls = w->state()->focusedLayer();
    REQUIRE(ls != nullptr);
    REQUIRE(ls->first_reachable > 0);

    QList<QCPItemText*> notes;
    bool reachShown = false;
    for (int i = 0; i < plot->itemCount(); ++i) {
        auto* t = qobject_cast<QCPItemText*>(plot->item(i));
        if (!t || !t->visible() || t->text().trimmed().isEmpty()) continue;
        notes << t;
        if (t->text().contains("sliding window 10: the next token sees positions from")) reachShown = true;
    }
    CHECK(reachShown);
    const QRect legend = plot->legend->outerRect();
    REQUIRE(legend.isValid());
    CHECK(plot->legend->itemCount() >= 3);
    // Outside both plots' axis rects: the notes are clipped to the score rect, so none can be
    // covered, however long the prompt or narrow the window.
    for (QCPAxisRect* r : plot->axisRects()) CHECK_FALSE(legend.intersects(r->rect()));
    for (QCPItemText* t : notes) {
        const QRectF note = QRectF(t->topLeft->pixelPosition(), t->bottomRight->pixelPosition()).normalized();
        CAPTURE(t->text().toStdString(), note.left(), note.top(), note.right(), note.bottom(), legend.left(),
                legend.top(), legend.right(), legend.bottom());
        CHECK_FALSE(note.intersects(QRectF(legend)));
    }
}

TEST_CASE("The Model menu lists the models in models/ and says where they come from when there are none", "[gui]") {
    QTemporaryDir tmp;
    REQUIRE(tmp.isValid());
    const QDir root(tmp.path());
    REQUIRE(root.mkpath("models/hf-model"));
    REQUIRE(root.mkpath("models/not-a-model"));
    REQUIRE(root.mkpath("empty"));
    for (const QString& name :
         {"models/b.gguf", "models/A.gguf", "models/c.gguf.part", "models/notes.txt", "models/hf-model/config.json"}) {
        QFile f(root.filePath(name));
        REQUIRE(f.open(QIODevice::WriteOnly));
        f.write("x");
    }
    const QString folder = QFileInfo(root.filePath("models")).canonicalFilePath();
    QMenu menu;
    QString opened;
    auto open = [&](const QString& p) { opened = p; };

    SECTION("GGUF files and Hugging Face folders, by name; downloads in progress and other files left out") {
        QStringList names;
        for (const QFileInfo& fi : studio::listModels(folder)) names << fi.fileName();
        CHECK(names == QStringList({"A.gguf", "b.gguf", "hf-model"}));
    }
    SECTION("one entry per model, the open one checked, each opening its path") {
        studio::fillModelMenu(&menu, {folder}, root.filePath("models/b.gguf"), open);
        QList<QAction*> entries;
        for (QAction* a : menu.actions())
            if (a->objectName() == "modelEntry") entries << a;
        REQUIRE(entries.size() == 3);
        CHECK(entries[0]->text().startsWith("A.gguf"));
        CHECK(entries[2]->text() == "hf-model (Hugging Face folder)");
        CHECK_FALSE(entries[0]->isChecked());
        CHECK(entries[1]->isChecked());
        entries[2]->trigger();
        CHECK(QFileInfo(opened).canonicalFilePath() == QFileInfo(root.filePath("models/hf-model")).canonicalFilePath());
    }
    SECTION("no model: disabled entries name the folder and datasets/fetch_model.sh") {
        studio::fillModelMenu(&menu, {QFileInfo(root.filePath("empty")).canonicalFilePath()}, QString(), open);
        QStringList lines;
        for (QAction* a : menu.actions()) {
            CHECK_FALSE(a->isEnabled());
            lines << a->text();
        }
        CHECK(lines.join("\n").contains("datasets/fetch_model.sh"));
        CHECK(
            lines.join("\n").contains(QDir::toNativeSeparators(QFileInfo(root.filePath("empty")).canonicalFilePath())));
    }
    SECTION("the window's Model menu re-reads the folders each time it opens") {
        const QString cwd = QDir::currentPath();
        REQUIRE(QDir::setCurrent(tmp.path()));  // the working directory's models/ comes first
        auto w = makeWindow();
        QMenu* m = w->menuBar()->findChild<QMenu*>("modelMenu");
        REQUIRE(m != nullptr);
        auto entryNames = [m] {
            QStringList l;
            Q_EMIT m->aboutToShow();
            for (QAction* a : m->actions())
                if (a->objectName() == "modelEntry") l << a->data().toString();
            return l;
        };
        CHECK(entryNames().contains(root.filePath("models/A.gguf")));
        QFile f(root.filePath("models/new.gguf"));
        REQUIRE(f.open(QIODevice::WriteOnly));
        f.close();
        CHECK(entryNames().contains(root.filePath("models/new.gguf")));
        QDir::setCurrent(cwd);
    }
}
