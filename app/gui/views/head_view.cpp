// HeadView: two aligned axis rects in one QCustomPlot (heatmap above, scores below).
#include "app/gui/views/head_view.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "app/gui/plot/plot_style.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/state/head_stats.h"

namespace studio {

namespace {

const QColor kVotesColor("#5b6770");
const QColor kPooledColor("#e66100");
const QColor kKeptColor("#1a7f37");
const QColor kWindowColor("#3b6fd8");
const QColor kThresholdColor("#c01c28");
const QColor kMarkColor("#b3001b");  // marked tokens (an evaluation's needle), as in the document view
constexpr double kLogFloor = 1e-6;   // votes can be exactly 0; a log axis needs a positive floor

// A span of key positions shown over both panels (hidden until placed): a rect in the heatmap, one
// in the score plot (x in key positions, y in the score rect's 0..1 right axis) and a caption there.
void makeSpan(QCustomPlot* plot, QCPAxisRect* heatRect, QCPAxisRect* scoreRect, const QPen& pen, const QBrush& brush,
              const QColor& textColor, QCPItemRect** heat, QCPItemRect** scores, QCPItemText** text) {
    QCPAxis* hx = heatRect->axis(QCPAxis::atBottom);
    QCPAxis* hy = heatRect->axis(QCPAxis::atLeft);
    QCPAxis* sx = scoreRect->axis(QCPAxis::atBottom);
    QCPAxis* sy2 = scoreRect->axis(QCPAxis::atRight);
    *heat = new QCPItemRect(plot);
    *scores = new QCPItemRect(plot);
    for (QCPItemRect* r : {*heat, *scores}) {
        r->setPen(pen);
        r->setBrush(brush);
        r->setLayer("overlay");
        r->setVisible(false);
    }
    (*heat)->setClipAxisRect(heatRect);
    (*heat)->topLeft->setAxes(hx, hy);
    (*heat)->bottomRight->setAxes(hx, hy);
    (*scores)->setClipAxisRect(scoreRect);
    (*scores)->topLeft->setAxes(sx, sy2);
    (*scores)->bottomRight->setAxes(sx, sy2);
    *text = new QCPItemText(plot);
    (*text)->setClipAxisRect(scoreRect);
    (*text)->position->setAxes(sx, sy2);
    (*text)->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    (*text)->setColor(textColor);
    (*text)->setVisible(false);
}

// Shows the span over key positions [first, last) (or hides it): heat rect over all W window rows
// (only when the heatmap has rows), score rect over the full height, caption at (textX, textY).
void placeSpan(QCPItemRect* heat, QCPItemRect* scores, QCPItemText* text, bool show, int64_t first, int64_t last,
               int64_t W, double textX, double textY, const QString& label, bool heatShown) {
    if (show) {
        heat->topLeft->setCoords(first - 0.5, -0.5);
        heat->bottomRight->setCoords(last - 0.5, std::max<double>(W, 1) - 0.5);
        scores->topLeft->setCoords(first - 0.5, 1.0);
        scores->bottomRight->setCoords(last - 0.5, 0.0);
        text->position->setCoords(textX, textY);
        text->setText(label);
    }
    heat->setVisible(show && heatShown);
    scores->setVisible(show);
    text->setVisible(show);
}

}  // namespace

HeadView::HeadView(AnalysisState* state, QWidget* parent) : LazyView(parent), m_state(state) {
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel("Layer"));
    m_layer = new QSpinBox;
    m_layer->setObjectName("headViewLayer");
    top->addWidget(m_layer);
    top->addWidget(new QLabel("Head"));
    m_head = new QSpinBox;
    m_head->setObjectName("headViewHead");
    top->addWidget(m_head);
    m_headLabel = new QLabel;
    top->addWidget(m_headLabel);
    m_stats = new QLabel;
    m_stats->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_stats->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // never widens the window:
    m_stats->setWordWrap(true);                                            // a long line wraps instead
    top->addWidget(m_stats, 1);

    m_plot = new QCustomPlot;
    m_plot->setObjectName("headPlot");
    m_plot->setMouseTracking(true);  // hover tooltips
    buildPlot();

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(wrapWithEmptyState(m_plot), 1);

    auto onFocusSpin = [this] {
        if (!m_syncing) m_state->setFocus(m_layer->value(), m_head->value());
    };
    connect(m_layer, qOverload<int>(&QSpinBox::valueChanged), this, onFocusSpin);
    connect(m_head, qOverload<int>(&QSpinBox::valueChanged), this, onFocusSpin);
    for (auto sig : {&AnalysisState::selectionChanged, &AnalysisState::attentionChanged, &AnalysisState::displayChanged,
                     &AnalysisState::prefillChanged, &AnalysisState::markChanged})
        connect(m_state, sig, this, [this] { markDirty(); });
    connect(m_state, &AnalysisState::focusChanged, this, [this] {
        syncFocusControls();
        markDirty();
    });
}

void HeadView::buildPlot() {
    stylePlot(m_plot);
    // One paint buffer, not two: the overlay layer's own buffer (QCustomPlot's default, for
    // selection rectangles this view does not use) cost a clear and a full-size blend per frame.
    m_plot->layer("overlay")->setMode(QCPLayer::lmLogical);
    // The default axis rect becomes the heatmap (it holds the legend, moved below later).
    m_heatRect = m_plot->axisRect();
    m_scoreRect = new QCPAxisRect(m_plot);
    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(0, 1, m_scale);
    m_plot->plotLayout()->addElement(1, 0, m_scoreRect);
    m_plot->plotLayout()->setRowStretchFactor(0, 3);
    m_plot->plotLayout()->setRowStretchFactor(1, 2);
    m_plot->plotLayout()->setColumnStretchFactor(1, 0.01);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(14);
    m_scale->axis()->setLabel("attention");
    // Align the left/right edges of both rects, and the colour scale with the heatmap's height.
    auto* lr = new QCPMarginGroup(m_plot);
    m_heatRect->setMarginGroup(QCP::msLeft | QCP::msRight, lr);
    m_scoreRect->setMarginGroup(QCP::msLeft | QCP::msRight, lr);
    auto* tb = new QCPMarginGroup(m_plot);
    m_heatRect->setMarginGroup(QCP::msTop | QCP::msBottom, tb);
    m_scale->setMarginGroup(QCP::msTop | QCP::msBottom, tb);

    for (QCPAxisRect* r : {m_heatRect, m_scoreRect}) {
        for (QCPAxis* a : r->axes()) styleAxis(a);
        r->setRangeDrag(Qt::Horizontal);
        // The wheel zooms through onWheel, not QCustomPlot: its axis rects replot at once after a
        // wheel step, on top of the replot the range change queues, so every zoom step drew twice.
        r->setRangeZoom(Qt::Orientations());
    }
    QCPAxis* hx = m_heatRect->axis(QCPAxis::atBottom);
    QCPAxis* hy = m_heatRect->axis(QCPAxis::atLeft);
    QCPAxis* sx = m_scoreRect->axis(QCPAxis::atBottom);
    QCPAxis* sy = m_scoreRect->axis(QCPAxis::atLeft);
    QCPAxis* sy2 = m_scoreRect->axis(QCPAxis::atRight);
    hy->setLabel("window query");
    hy->setRangeReversed(true);
    hx->setTickLabels(false);
    sx->setLabel("key position (token)");
    sy->setLabel("score");
    sy2->setVisible(false);
    sy2->setRange(0, 1);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);

    m_heat = new QCPColorMap(hx, hy);
    m_heat->setInterpolate(false);
    m_heat->setTightBoundary(false);
    m_heat->setColorScale(m_scale);

    // Kept clusters shaded as a one-row colour map over the score rect: downsampled to pixels like
    // the heatmap, it costs one image blit instead of a fill polygon with thousands of vertices.
    m_clusters = new QCPColorMap(sx, sy2);
    m_clusters->setName("kept clusters");
    m_clusters->setInterpolate(false);
    m_clusters->setTightBoundary(true);
    m_clusters->setDataRange(QCPRange(0, 1));
    m_plot->legend->removeItem(m_plot->legend->itemWithPlottable(m_clusters));
    setClusterAlpha(46);
    m_votes = m_plot->addGraph(sx, sy);
    m_votes->setName("votes (summed window attention)");
    m_votes->setPen(QPen(kVotesColor, 1));
    m_pooled = m_plot->addGraph(sx, sy);
    m_pooled->setName("pooled scores");
    m_pooled->setPen(QPen(kPooledColor, 1.4));
    m_kept = m_plot->addGraph(sx, sy2);
    m_kept->setName("kept positions");
    // Kept positions as impulses from the bottom edge: one line segment each, drawn in a single
    // call (thousands of scatter symbols would cost tens of milliseconds per repaint at 8K).
    m_kept->setLineStyle(QCPGraph::lsImpulse);
    m_kept->setPen(QPen(kKeptColor, 1.2));
    m_kept->setScatterStyle(QCPScatterStyle::ssNone);

    m_windowHeat = new QCPItemRect(m_plot);
    m_windowScores = new QCPItemRect(m_plot);
    for (QCPItemRect* r : {m_windowHeat, m_windowScores}) {
        r->setPen(QPen(kWindowColor, 1.5, Qt::DashLine));
        r->setBrush(QColor(59, 111, 216, 20));
        r->setLayer("overlay");
    }
    m_windowHeat->setClipAxisRect(m_heatRect);
    m_windowHeat->topLeft->setAxes(hx, hy);
    m_windowHeat->bottomRight->setAxes(hx, hy);
    m_windowScores->setClipAxisRect(m_scoreRect);
    m_windowScores->topLeft->setAxes(sx, sy2);
    m_windowScores->bottomRight->setAxes(sx, sy2);
    m_windowText = new QCPItemText(m_plot);
    m_windowText->setClipAxisRect(m_scoreRect);
    m_windowText->position->setAxes(sx, sy2);
    m_windowText->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
    m_windowText->setText("observation window\n(always kept)");
    m_windowText->setColor(kWindowColor);
    m_windowText->setTextAlignment(Qt::AlignRight);

    // The marked span (an evaluation cell's needle) over both panels.
    makeSpan(m_plot, m_heatRect, m_scoreRect, QPen(kMarkColor, 1.5), QColor(179, 0, 27, 40), kMarkColor, &m_markHeat,
             &m_markScores, &m_markText);
    // Sliding-window layers: the prefix older than the next token's window, hatched grey.
    makeSpan(m_plot, m_heatRect, m_scoreRect, QPen(QColor(90, 90, 90), 1.2, Qt::DotLine),
             QBrush(QColor(120, 120, 120, 60), Qt::BDiagPattern), QColor(70, 70, 70), &m_reachHeat, &m_reachScores,
             &m_reachText);
    m_reachText->setBrush(QColor(255, 255, 255, 200));

    m_thresholdLine = new QCPItemStraightLine(m_plot);
    m_thresholdLine->setClipAxisRect(m_scoreRect);
    m_thresholdLine->point1->setAxes(sx, sy);
    m_thresholdLine->point2->setAxes(sx, sy);
    m_thresholdLine->setPen(QPen(kThresholdColor, 1.2, Qt::DashLine));
    // The threshold's value goes in the legend (below the plot), not on the line: a label there
    // covered the kept-position ticks along the bottom whenever the threshold was low.
    m_thresholdKey = m_plot->addGraph(sx, sy);
    m_thresholdKey->setPen(QPen(kThresholdColor, 1.2, Qt::DashLine));
    m_thresholdKey->removeFromLegend();

    m_emptyText = new QCPItemText(m_plot);
    m_emptyText->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_emptyText->position->setAxisRect(m_heatRect);
    m_emptyText->position->setCoords(0.5, 0.5);
    m_emptyText->setClipToAxisRect(false);
    m_emptyText->setText("Press Run to prefill the document; the selected head's attention appears here.");

    // Legend in one row under the score plot, centred between two empty stretching cells: inside
    // the plot it covered the notes drawn at the top of the score rect (the sliding-window reach,
    // the observation window) whenever they grew towards the middle.
    m_plot->legend->setVisible(true);
    m_plot->legend->setBrush(Qt::NoBrush);
    m_plot->legend->setBorderPen(Qt::NoPen);
    QFont lf = m_plot->legend->font();
    lf.setPointSizeF(9);
    m_plot->legend->setFont(lf);
    m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_plot->legend->setWrap(0);
    m_plot->legend->setColumnSpacing(16);
    m_heatRect->insetLayout()->take(m_plot->legend);
    auto* legendRow = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(2, 0, legendRow);
    legendRow->setMargins(QMargins(0, 0, 0, 0));
    // Plain elements as spacers: an empty QCPLayoutGrid has a maximum width of 0, which handed all
    // the room to the legend and spread its entries across the plot.
    legendRow->addElement(0, 0, new QCPLayoutElement(m_plot));
    legendRow->addElement(0, 1, m_plot->legend);
    legendRow->addElement(0, 2, new QCPLayoutElement(m_plot));
    legendRow->setColumnStretchFactors({1, 0.001, 1});
    m_plot->plotLayout()->setRowStretchFactor(2, 0.001);

    connect(hx, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &HeadView::onXRangeChanged);
    connect(sx, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &HeadView::onXRangeChanged);
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this] { resetZoom(); });
    connect(m_plot, &QCustomPlot::mouseWheel, this, &HeadView::onWheel);
    // Columns are aggregated for the axis rect's width in pixels: a resize (or the first layout)
    // that changes it aggregates again, so a column stays one pixel wide. Inside a replot the
    // layout comes before the drawing, which then uses the new columns: no second replot (a zoom
    // step that widened the score axis's labels drew its frame twice).
    connect(m_plot, &QCustomPlot::beforeReplot, this, [this] { m_replotting = true; });
    connect(m_plot, &QCustomPlot::afterReplot, this, [this] { m_replotting = false; });
    connect(m_plot, &QCustomPlot::afterLayout, this, [this] {
        if (m_heatRect->width() == m_renderedWidth) return;
        renderVisibleColumns();
        if (!m_replotting) m_plot->replot(QCustomPlot::rpQueuedReplot);
    });
    connect(m_plot, &QCustomPlot::mouseMove, this,
            [this](QMouseEvent* e) { showTip(e->pos(), e->globalPosition().toPoint()); });
}

void HeadView::syncFocusControls() {
    m_syncing = true;
    m_layer->setRange(0, std::max(0, m_state->nLayers() - 1));
    m_head->setRange(0, std::max(0, m_state->nHeads() - 1));
    m_layer->setValue(m_state->layer());
    m_head->setValue(m_state->head());
    m_syncing = false;
}

void HeadView::onXRangeChanged(const QCPRange& range) {
    if (m_syncing) return;
    m_syncing = true;
    // Keep both rects on the same range and inside the data.
    QCPRange r = range;
    const double lo = -0.5, hi = std::max<double>(m_L, 1) - 0.5;
    if (r.size() > hi - lo) r = QCPRange(lo, hi);
    if (r.lower < lo) r = QCPRange(lo, lo + r.size());
    if (r.upper > hi) r = QCPRange(hi - r.size(), hi);
    m_heatRect->axis(QCPAxis::atBottom)->setRange(r);
    m_scoreRect->axis(QCPAxis::atBottom)->setRange(r);
    m_syncing = false;
    // Aggregate the new range now, before the replot that the drag or wheel has queued: a render
    // deferred to a timer of its own drew every frame twice, once with the old columns.
    renderVisibleColumns();
    m_plot->replot(QCustomPlot::rpQueuedReplot);  // (queued replots of one event-loop turn are one)
}

void HeadView::onWheel(QWheelEvent* e) {
    if (!m_plot->interactions().testFlag(QCP::iRangeZoom)) return;
    const QPointF pos = e->position();
    QCPAxisRect* rect = m_heatRect->rect().contains(pos.toPoint())    ? m_heatRect
                        : m_scoreRect->rect().contains(pos.toPoint()) ? m_scoreRect
                                                                      : nullptr;
    const double steps = e->angleDelta().y() / 120.0;  // one notch is 120 (as QCPAxisRect::wheelEvent)
    if (!rect || steps == 0) return;
    // QCustomPlot's zoom: its factor per notch about the key under the cursor; onXRangeChanged then
    // syncs the other rect, aggregates and queues the one replot.
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    x->scaleRange(std::pow(rect->rangeZoomFactor(Qt::Horizontal), steps), x->pixelToCoord(pos.x()));
}

void HeadView::resetZoom() {
    const int k = std::clamp<int>(m_state->display().hideSinks, 0, static_cast<int>(std::max<int64_t>(m_L - 1, 0)));
    m_heatRect->axis(QCPAxis::atBottom)->setRange(k - 0.5, std::max<double>(m_L, 1) - 0.5);
    renderVisibleColumns();
    m_plot->replot();
}

std::vector<int64_t> HeadView::keptPositions() const {
    const auto* hs = m_state->focusedHead();
    return hs ? hs->kept : std::vector<int64_t>{};
}

void HeadView::refresh() {
    if (!m_state->selection())
        setEmptyState("No head to show yet",
                      "Press Run (F5) to prefill the document. The focused head then appears here: the attention of "
                      "the observation window's queries to every prefix token, the votes they add up to, the pooled "
                      "scores, and the clusters the budget keeps.",
                      true);
    else setEmptyState(QString());
    syncFocusControls();
    rebuildHeatmap();
    rebuildScores();
    applyHighlight();
    // Keep the user's zoom while tuning; reset it only when the key axis itself changed.
    const int hide = m_state->display().hideSinks;
    if (m_L != m_zoomL || hide != m_zoomHide) {
        m_zoomL = m_L;
        m_zoomHide = hide;
        resetZoom();
    } else {
        renderVisibleColumns();
        m_plot->replot();
    }
}

void HeadView::rebuildHeatmap() {
    const auto* a = m_state->attention();
    const auto& d = m_state->display();
    const bool match = a && a->layer == m_state->layer() && a->head == m_state->head();
    m_W = match ? a->window : 0;
    m_L = match ? a->nKeys : (m_state->selection() ? m_state->selection()->n_tokens : 0);
    m_P = m_state->selection() ? std::max<int64_t>(0, m_state->selection()->n_tokens - m_state->selection()->window)
                               : 0;
    m_rows = match ? transformRows(a->rows, a->window, a->nKeys, d.hideSinks, d.rowNormalise) : std::vector<float>{};
    m_headLabel->setText(match ? a->label : QString());
    double lo = INFINITY, hi = -INFINITY;
    for (float v : m_rows) lo = std::min<double>(lo, v), hi = std::max<double>(hi, v);
    if (m_rows.empty()) lo = 0, hi = 1;
    m_colorLo = lo;
    m_colorHi = hi;
    applyColorSettings(m_heat, m_scale, d, lo, hi);
    m_scale->axis()->setLabel(d.rowNormalise    ? "attention / row max"
                              : d.hideSinks > 0 ? "attention (sinks hidden)"
                                                : "attention");
    m_emptyText->setVisible(m_rows.empty());
    if (m_state->selection() && m_rows.empty()) m_emptyText->setText("Reading this head's attention...");
    auto* hy = m_heatRect->axis(QCPAxis::atLeft);
    hy->setRange(-0.5, std::max<double>(m_W, 1) - 0.5);
    hy->setLabel(m_W > 0 ? QString("window query (%1 rows)").arg(m_W) : QString("window query"));

    // The window: the last W positions of the selection's sequence.
    const double w0 = m_P - 0.5, w1 = m_L - 0.5;
    m_windowHeat->topLeft->setCoords(w0, -0.5);
    m_windowHeat->bottomRight->setCoords(w1, std::max<double>(m_W, 1) - 0.5);
    m_windowScores->topLeft->setCoords(w0, 1.0);
    m_windowScores->bottomRight->setCoords(w1, 0.0);
    m_windowText->position->setCoords(w1, 0.98);
    const bool showWindow = m_L > 0 && m_P < m_L;
    m_windowHeat->setVisible(showWindow && !m_rows.empty());
    m_windowScores->setVisible(showWindow);
    m_windowText->setVisible(showWindow);

    const int64_t m0 = m_state->markedFirst(), m1 = std::min(m_state->markedLast(), m_L);
    placeSpan(m_markHeat, m_markScores, m_markText, m0 >= 0 && m0 < m1, m0, m1, m_W, m1 - 0.5, 0.86,
              " " + (m_state->markedLabel().isEmpty() ? QString("marked") : m_state->markedLabel()), !m_rows.empty());
    // Further spans: each label is captioned once; answers (inside their needles) are filled darker
    // and captioned lower so that both captions stay readable.
    const auto& marks = m_state->markedSpans();
    QStringList captioned{m_state->markedLabel()};
    for (size_t i = 1; i < marks.size(); ++i) {
        if (m_moreMarks.size() < i) {
            SpanItems items{};
            const bool answer = marks[i].label == "answer";
            makeSpan(m_plot, m_heatRect, m_scoreRect, QPen(kMarkColor, answer ? 1.5 : 1.2),
                     QColor(179, 0, 27, answer ? 70 : 40), kMarkColor, &items.heat, &items.scores, &items.text);
            m_moreMarks.push_back(items);
        }
        const SpanItems& items = m_moreMarks[i - 1];
        const auto& m = marks[i];
        const int64_t last = std::min(m.last, m_L);
        const bool caption = !captioned.contains(m.label);
        if (caption) captioned << m.label;
        placeSpan(items.heat, items.scores, items.text, m.first < last, m.first, last, m_W, last - 0.5,
                  m.label == "answer" ? 0.74 : 0.86, " " + m.label, !m_rows.empty());
        items.text->setVisible(items.text->visible() && caption);
    }
    for (size_t i = marks.empty() ? 0 : marks.size() - 1; i < m_moreMarks.size(); ++i)
        for (QCPAbstractItem* it :
             std::initializer_list<QCPAbstractItem*>{m_moreMarks[i].heat, m_moreMarks[i].scores, m_moreMarks[i].text})
            it->setVisible(false);

    // A sliding-window layer: nothing before its first reachable position is kept or counted.
    const auto* ls = m_state->focusedLayer();
    const int64_t reach = ls ? ls->first_reachable : 0;
    placeSpan(
        m_reachHeat, m_reachScores, m_reachText, reach > 0 && m_L > 0, 0, reach, m_W, -0.5, 0.98,
        ls ? QString(" sliding window %1: the next token sees positions from %2 on ").arg(ls->sliding_window).arg(reach)
           : QString(),
        !m_rows.empty());
}

void HeadView::setClusterAlpha(int alpha) {
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorStopAt(0, QColor(0, 0, 0, 0));
    g.setColorStopAt(1, QColor(26, 127, 55, alpha));
    g.setLevelCount(2);
    m_clusters->setGradient(g);
}

void HeadView::renderKeptMask(const QCPRange& r) {
    const int64_t n = static_cast<int64_t>(m_keptMask.size());
    if (n == 0) {
        m_clusters->data()->clear();
        return;
    }
    const int64_t begin = std::clamp<int64_t>(static_cast<int64_t>(std::floor(r.lower + 0.5)), 0, n - 1);
    const int64_t end = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(r.upper + 0.5)), begin + 1, n);
    const int64_t bins = std::min<int64_t>(end - begin, std::max(50, m_scoreRect->width()));
    const std::vector<float> mask = maxDownsample(m_keptMask, 1, n, begin, end, bins);
    const double step = double(end - begin) / double(bins);
    // Tight boundary: the image spans from the first to the last cell centre, so put the centres
    // on the outer edges of the first and last bins.
    m_clusters->data()->setSize(static_cast<int>(bins), 2);
    m_clusters->data()->setRange(QCPRange(begin - 0.5, begin - 0.5 + bins * step), QCPRange(0, 1));
    for (int64_t b = 0; b < bins; ++b) {
        m_clusters->data()->setCell(static_cast<int>(b), 0, mask[b]);
        m_clusters->data()->setCell(static_cast<int>(b), 1, mask[b]);
    }
}

void HeadView::renderVisibleColumns() {
    const QCPRange r = m_heatRect->axis(QCPAxis::atBottom)->range();
    renderKeptMask(r);
    if (m_rows.empty() || m_W <= 0 || m_L <= 0) {
        m_heat->data()->clear();
        m_columnsDrawn = 0;
        return;
    }
    const int64_t begin = std::clamp<int64_t>(static_cast<int64_t>(std::floor(r.lower + 0.5)), 0, m_L - 1);
    const int64_t end = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(r.upper + 0.5)), begin + 1, m_L);
    const int64_t n = end - begin;
    m_renderedWidth = m_heatRect->width();
    const int64_t pixels = std::max(50, m_heatRect->width());
    const int64_t bins = std::min(n, pixels);
    std::vector<float> cols = maxDownsample(m_rows, m_W, m_L, begin, end, bins);
    const auto& d = m_state->display();
    const double floor = d.logScale ? m_heat->dataRange().lower : -INFINITY;
    m_heat->data()->setSize(static_cast<int>(bins), static_cast<int>(m_W));
    // Cell centres: bin b covers about [begin + b*n/bins, begin + (b+1)*n/bins).
    const double step = double(n) / double(bins);
    const double first = begin - 0.5 + 0.5 * step;
    const double last = begin - 0.5 + (bins - 0.5) * step;
    m_heat->data()->setRange(QCPRange(first, bins > 1 ? last : first + 1e-9),
                             QCPRange(0, std::max<double>(m_W - 1, 1e-9)));
    for (int64_t row = 0; row < m_W; ++row)
        for (int64_t b = 0; b < bins; ++b)
            m_heat->data()->setCell(static_cast<int>(b), static_cast<int>(row),
                                    std::max<double>(cols[row * bins + b], floor));
    m_columnsDrawn = static_cast<int>(bins);

    // Score axis: fit what is visible.
    double hi = 0;
    for (QCPGraph* g : {m_votes, m_pooled}) {
        bool found = false;
        const QCPRange vr = g->getValueRange(found, QCP::sdBoth, QCPRange(r.lower, r.upper));
        if (found) hi = std::max(hi, vr.upper);
    }
    auto* sy = m_scoreRect->axis(QCPAxis::atLeft);
    if (d.logScale) {
        sy->setRange(std::max(kLogFloor, hi * 1e-4), std::max(hi * 1.5, kLogFloor * 10));
    } else {
        sy->setRange(0, hi > 0 ? hi * 1.08 : 1);
    }
}

void HeadView::rebuildScores() {
    const auto* hs = m_state->focusedHead();
    const auto* ls = m_state->focusedLayer();
    const auto& d = m_state->display();
    auto* sy = m_scoreRect->axis(QCPAxis::atLeft);
    sy->setScaleType(d.logScale ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (d.logScale) {
        sy->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
        sy->setNumberFormat("eb");
        sy->setNumberPrecision(0);
    } else {
        sy->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        sy->setNumberFormat("gb");
        sy->setNumberPrecision(3);
    }
    QVector<double> keys, votes, pooled;
    const double floor = d.logScale ? kLogFloor : -INFINITY;
    const int k = d.hideSinks;
    if (hs) {
        for (size_t i = 0; i < hs->votes.size(); ++i) {
            if (static_cast<int>(i) < k) continue;
            keys.push_back(double(i));
            votes.push_back(std::max<double>(hs->votes[i], floor));
            pooled.push_back(i < hs->pooled.size() ? std::max<double>(hs->pooled[i], floor) : qQNaN());
        }
    }
    m_votes->setData(keys, votes, true);
    m_pooled->setData(keys, hs && !hs->pooled.empty() ? pooled : QVector<double>{}, true);

    // Kept ticks and cluster shading (uncompressed layers keep every prefix position).
    std::vector<int64_t> kept;
    if (hs) kept = hs->kept;
    if (ls && !ls->compressed && ls->first_reachable == 0) {  // (a sliding layer lists what it reaches)
        kept.resize(static_cast<size_t>(m_P));
        for (int64_t p = 0; p < m_P; ++p) kept[p] = p;
    }
    QVector<double> kx, ky;
    for (int64_t p : kept) kx.push_back(double(p)), ky.push_back(0.06);
    m_kept->setData(kx, ky, true);
    m_keptMask.assign(static_cast<size_t>(std::max<int64_t>(m_L, 0)), 0.f);
    for (int64_t p : kept)
        if (p >= 0 && p < m_L) m_keptMask[p] = 1.f;
    m_clusterCount = static_cast<int>(clusters(kept).size());

    m_threshold = hs ? keptThreshold(hs->pooled, kept) : kNoValue;
    const bool showThreshold = hs && ls && ls->compressed && std::isfinite(m_threshold);
    m_thresholdLine->setVisible(showThreshold);
    if (showThreshold) m_thresholdKey->addToLegend();  // no-ops when already in (or out of) it
    else m_thresholdKey->removeFromLegend();
    if (showThreshold) {
        const double t = std::max(m_threshold, d.logScale ? kLogFloor : -INFINITY);
        m_thresholdLine->point1->setCoords(0, t);
        m_thresholdLine->point2->setCoords(1, t);
        m_thresholdKey->setName(QString("budget threshold %1 (lowest kept pooled score)").arg(m_threshold, 0, 'g', 3));
    }

    const auto* sel = m_state->selection();
    if (!sel || !hs) {
        m_stats->setText(QString());
        return;
    }
    QString s = QString("kept %1 of %2 prefix tokens in %3 clusters · kept attention mass %4 · W %5 · C %6")
                    .arg(kept.size())
                    .arg(m_P)
                    .arg(m_clusterCount)
                    .arg(hs->kept_mass, 0, 'f', 3)
                    .arg(sel->window)
                    .arg(ls ? ls->budget : sel->budget);
    if (ls && !ls->compressed) s += " · this layer is not compressed";
    if (ls && ls->sliding_window > 0)
        s += QString(" · sliding window %1: sees from %2 on").arg(ls->sliding_window).arg(ls->first_reachable);
    m_stats->setToolTip(s);
    if (hs->votes.empty()) s += " · this policy has no votes";
    m_stats->setText(s);
}

QString HeadView::describePosition(int64_t p, int64_t row) const {
    if (p < 0 || p >= m_L) return {};
    QString tip = QString("key position %1").arg(p);
    if (m_state->hasPrefill() && p < static_cast<int64_t>(m_state->prefill().pieces.size())) {
        QString piece = QString::fromStdString(m_state->prefill().pieces[p]);
        piece.replace('\n', QString::fromUtf8("\u21b5"));
        tip += QString(" \"%1\" (id %2)").arg(piece).arg(m_state->prefill().ids[p]);
    }
    if (row >= 0 && row < m_W && !m_rows.empty())
        tip += QString("\nwindow query %1 (position %2): attention %3")
                   .arg(row)
                   .arg(m_L - m_W + row)
                   .arg(m_rows[row * m_L + p], 0, 'g', 4);
    if (p >= m_P) return tip + "\nin the observation window: always kept";
    if (const auto* hs = m_state->focusedHead()) {
        if (p < static_cast<int64_t>(hs->votes.size())) tip += QString("\nvote %1").arg(hs->votes[p], 0, 'g', 4);
        if (p < static_cast<int64_t>(hs->pooled.size())) tip += QString(" · pooled %1").arg(hs->pooled[p], 0, 'g', 4);
        const bool kept = std::binary_search(hs->kept.begin(), hs->kept.end(), p) ||
                          (m_state->focusedLayer() && !m_state->focusedLayer()->compressed);
        tip += kept ? " · kept" : " · evicted";
    }
    return tip;
}

void HeadView::showTip(const QPoint& pos, const QPoint& global) {
    QCPAxisRect* rect = m_heatRect->rect().contains(pos)    ? m_heatRect
                        : m_scoreRect->rect().contains(pos) ? m_scoreRect
                                                            : nullptr;
    if (!rect || m_L <= 0) {
        QToolTip::hideText();
        return;
    }
    const int64_t p = static_cast<int64_t>(std::lround(rect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x())));
    int64_t row = -1;
    if (rect == m_heatRect) row = static_cast<int64_t>(std::lround(rect->axis(QCPAxis::atLeft)->pixelToCoord(pos.y())));
    const QString tip = describePosition(p, row);
    if (tip.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(global, tip, m_plot);
}

void HeadView::setHighlight(HeadHighlight h) {
    m_highlight = h;
    applyHighlight();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeadView::applyHighlight() {
    const bool none = m_highlight == HeadHighlight::None;
    const QColor faint(170, 170, 170);
    m_votes->setPen(QPen(none || m_highlight == HeadHighlight::Votes ? kVotesColor : faint,
                         m_highlight == HeadHighlight::Votes ? 2.4 : 1));
    m_pooled->setPen(
        QPen(none || m_highlight == HeadHighlight::Pooling || m_highlight == HeadHighlight::TopK ? kPooledColor : faint,
             m_highlight == HeadHighlight::Pooling ? 2.6 : 1.4));
    const double winWidth = m_highlight == HeadHighlight::Window ? 3.5 : 1.5;
    for (QCPItemRect* r : {m_windowHeat, m_windowScores}) {
        r->setPen(QPen(kWindowColor, winWidth, Qt::DashLine));
        r->setBrush(QColor(59, 111, 216, m_highlight == HeadHighlight::Window ? 60 : 20));
    }
    m_thresholdLine->setPen(QPen(kThresholdColor, m_highlight == HeadHighlight::TopK ? 2.6 : 1.2, Qt::DashLine));
    m_thresholdKey->setPen(m_thresholdLine->pen());
    setClusterAlpha(m_highlight == HeadHighlight::TopK ? 110 : 46);
    // Dense lines gain nothing from antialiasing (adaptive sampling draws one vertical run per
    // pixel) and it costs tens of milliseconds per repaint at 8K keys.
    const bool dense = m_votes->dataCount() > 2 * std::max(1, m_scoreRect->width());
    m_votes->setAntialiased(!dense);
    m_pooled->setAntialiased(!dense);
    // Dense lines wider than a pixel (pooled scores, the highlights) are drawn segment by segment:
    // Qt strokes a wide polyline of thousands of vertices as one polygon, about 10 ms at 32K keys.
    m_plot->setPlottingHint(QCP::phFastPolylines, dense);
}

}  // namespace studio
