// The head view on a 32K prefix: zoomed out, the heatmap and the kept clusters are reduced to the
// screen's columns by maximum, so one strong key and one kept token stay visible; zoomed in, every
// key has its own column with its own value.
#include <catch2/catch.hpp>

#include <QApplication>
#include <QWheelEvent>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "app/gui/state/analysis_state.h"
#include "app/gui/views/head_view.h"
#include "gui_test_util.h"

using namespace guitest;

namespace {

constexpr int64_t kL = 32768, kW = 4, kSpike = 20001, kLoneKept = 5003;
constexpr float kFloor = 1e-5f, kPeak = 0.5f;

void fill(studio::AnalysisState& state) {
    snapkv::ModelInfo info;
    info.config.n_layer = 1;
    info.config.n_head = 1;
    info.config.n_head_kv = 1;
    state.setModel(info);
    auto sel = std::make_shared<snapkv::Selection>();
    sel->params.window = kW;
    sel->params.budget = 64;
    sel->params.gqa = snapkv::GqaMode::QueryHead;
    sel->n_tokens = kL;
    sel->window = kW;
    sel->budget = 64;
    sel->compressed = true;
    snapkv::LayerSelection ls;
    ls.compressed = true;
    ls.budget = 64;
    snapkv::HeadSelection hs;
    hs.votes.assign(static_cast<size_t>(kL - kW), kFloor);
    hs.votes[kSpike] = kPeak;
    hs.pooled = hs.votes;
    hs.kept = {kLoneKept, kSpike};  // single tokens, far from each other
    ls.heads.push_back(hs);
    sel->layers.push_back(ls);
    auto rows = std::make_shared<studio::AttentionRows>();
    rows->window = kW;
    rows->nKeys = kL;
    rows->rows.assign(static_cast<size_t>(kW * kL), kFloor);
    rows->rows[2 * kL + kSpike] = kPeak;  // one key, one window row
    auto r = std::make_shared<studio::RetuneResult>();
    r->selection = sel;
    r->attention = rows;
    studio::ParamState params;
    params.sel = sel->params;
    state.setRetune(r, params);
}

QCPColorMap* colorMap(QCustomPlot* plot, bool clusters) {
    for (int i = 0; i < plot->plottableCount(); ++i)
        if (auto* m = qobject_cast<QCPColorMap*>(plot->plottable(i)); m && (m->name() == "kept clusters") == clusters)
            return m;
    return nullptr;
}

// The kept-cluster map has a tight boundary: its n cells split its key range evenly.
double keptAt(QCPColorMap* m, double key) {
    const QCPRange r = m->data()->keyRange();
    const int n = m->data()->keySize();
    const int k = static_cast<int>(std::floor((key - r.lower) / (r.size() / n)));
    return m->data()->cell(std::clamp(k, 0, n - 1), 0);
}

double cellAt(QCPColorMap* m, double key, double row) {
    int k = 0, v = 0;
    m->data()->coordToCell(key, row, &k, &v);
    return m->data()->cell(k, v);
}

// The head view of the 32K state (filled here), shown at 1200 x 800 and drawn once.
std::unique_ptr<studio::HeadView> shownView(studio::AnalysisState& state) {
    fill(state);
    auto view = std::make_unique<studio::HeadView>(&state);
    view->resize(1200, 800);
    view->show();
    settle();
    view->refreshNow();
    return view;
}

}  // namespace

TEST_CASE("The head view reduces a 32K prefix to screen columns by maximum and shows every key zoomed in", "[gui]") {
    studio::AnalysisState state;
    const std::unique_ptr<studio::HeadView> shown = shownView(state);
    studio::HeadView& view = *shown;
    QCustomPlot* plot = view.plot();
    QCPColorMap* heat = colorMap(plot, false);
    QCPColorMap* kept = colorMap(plot, true);
    REQUIRE(heat != nullptr);
    REQUIRE(kept != nullptr);
    REQUIRE(view.heatmapKeys() == kL);

    SECTION("zoomed out: about one column per pixel, the strong key and the lone kept token still shown") {
        const int width = plot->axisRect(0)->width();
        CHECK(view.heatmapColumnsDrawn() <= width);
        CHECK(view.heatmapColumnsDrawn() < kL / 10);
        // A mean over the ~30 keys of its column would show about kPeak / 30.
        CHECK(cellAt(heat, kSpike, 2) == Approx(kPeak));
        CHECK(cellAt(heat, kSpike, 1) == Approx(kFloor));
        CHECK(keptAt(kept, kLoneKept) == 1.0);
        CHECK(keptAt(kept, kLoneKept + 2000) == 0.0);
    }

    SECTION("zoomed in: one column per key, the neighbours of the strong key keep their own values") {
        plot->axisRect(0)->axis(QCPAxis::atBottom)->setRange(kSpike - 50.5, kSpike + 50.5);
        CHECK(view.heatmapColumnsDrawn() == 101);
        CHECK(cellAt(heat, kSpike, 2) == Approx(kPeak));
        CHECK(cellAt(heat, kSpike + 1, 2) == Approx(kFloor));
        CHECK(cellAt(heat, kSpike - 1, 2) == Approx(kFloor));
        CHECK(keptAt(kept, kSpike) == 1.0);
        CHECK(keptAt(kept, kSpike + 1) == 0.0);
    }
}

TEST_CASE("One wheel notch on the 32K head view zooms about the cursor and draws the frame once", "[gui]") {
    studio::AnalysisState state;
    const std::unique_ptr<studio::HeadView> shown = shownView(state);
    studio::HeadView& view = *shown;
    settle();
    QCustomPlot* plot = view.plot();
    QCPAxisRect* heatRect = plot->axisRect(0);
    QCPAxis* x = heatRect->axis(QCPAxis::atBottom);
    QCPColorMap* heat = colorMap(plot, false);
    REQUIRE(heat != nullptr);
    const QCPRange before = x->range();
    // A quarter of the way in, so that a zoom about the centre (or about no point) is told apart.
    const QPoint at(heatRect->left() + heatRect->width() / 4, heatRect->center().y());
    const double anchor = x->pixelToCoord(at.x());
    int replots = 0;
    QObject::connect(plot, &QCustomPlot::afterReplot, plot, [&] { ++replots; });
    QWheelEvent e(QPointF(at), QPointF(plot->mapToGlobal(at)), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                  Qt::NoScrollPhase, false);
    QApplication::sendEvent(plot, &e);
    settle();
    // QCustomPlot's factor per notch (0.85), about the key under the cursor.
    CHECK(x->range().size() == Approx(before.size() * heatRect->rangeZoomFactor(Qt::Horizontal)));
    CHECK(x->pixelToCoord(at.x()) == Approx(anchor).margin(1.0));
    CHECK(plot->axisRect(1)->axis(QCPAxis::atBottom)->range().lower == Approx(x->range().lower));
    // One replot per wheel step: QCustomPlot's own wheel zoom replotted at once on top of the
    // replot the range change queues, so every step was drawn twice.
    CHECK(replots == 1);
    // The columns were aggregated again for the new range: the strong key still shows its peak.
    CHECK(heat->data()->keyRange().lower > before.lower + 1);
    CHECK(cellAt(heat, kSpike, 2) == Approx(kPeak));
}
