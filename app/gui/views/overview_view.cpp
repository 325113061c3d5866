// OverviewView: QCPColorMap grid with a colour legend, value labels when cells are large enough,
// tooltips, click and arrow-key focus.
#include "app/gui/views/overview_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QToolTip>
#include <QVBoxLayout>

#include <cmath>

#include "app/gui/plot/colormaps.h"
#include "app/gui/plot/plot_style.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/state/head_stats.h"
#include "app/gui/state/param_state.h"

namespace studio {

OverviewView::OverviewView(AnalysisState* state, QWidget* parent) : LazyView(parent), m_state(state) {
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel("Colour by:"));
    m_stat = new QComboBox;
    m_stat->addItems(overviewStatNames());
    m_stat->setToolTip("Statistic shown for every (layer, head)");
    top->addWidget(m_stat);
    top->addWidget(new QLabel("other policy:"));
    m_otherPolicy = new QComboBox;
    m_otherPolicy->addItems(policyNames());
    m_otherPolicy->setToolTip("Policy whose kept positions the overlap statistic compares against");
    top->addWidget(m_otherPolicy);
    m_info = new QLabel;
    m_info->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_info->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // long text clips, never widens the window
    top->addWidget(m_info, 1);

    m_plot = new QCustomPlot;
    m_plot->setObjectName("overviewPlot");
    stylePlot(m_plot);
    m_plot->setMouseTracking(true);
    m_plot->setFocusPolicy(Qt::StrongFocus);
    m_plot->installEventFilter(this);
    m_plot->xAxis->setLabel("head");
    m_plot->yAxis->setLabel("layer");
    m_plot->yAxis->setRangeReversed(true);  // layer 0 on top, as the model reads
    m_plot->axisRect()->setupFullAxesBox(true);
    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_map->setInterpolate(false);
    m_map->setTightBoundary(false);
    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(0, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(14);
    m_map->setColorScale(m_scale);
    auto* group = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    m_cursor = new QCPItemRect(m_plot);
    m_cursor->setPen(QPen(QColor("#e4002b"), 2.5));
    m_cursor->setBrush(Qt::NoBrush);
    m_cursor->setVisible(false);
    // Tick labels depend on the cell size in pixels, known once the plot is laid out (and changed
    // by every resize): recompute them after each layout and replot when they changed.
    connect(m_plot, &QCustomPlot::afterLayout, this, [this] {
        if (updateTickLabels()) m_plot->replot(QCustomPlot::rpQueuedReplot);
    });

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(wrapWithEmptyState(m_plot), 1);

    connect(m_stat, qOverload<int>(&QComboBox::activated), this, &OverviewView::onStatChosen);
    connect(m_otherPolicy, qOverload<int>(&QComboBox::activated), this, &OverviewView::onOtherPolicyChosen);
    for (auto sig : {&AnalysisState::selectionChanged, &AnalysisState::comparisonChanged,
                     &AnalysisState::displayChanged, &AnalysisState::modelChanged, &AnalysisState::previewChanged})
        connect(m_state, sig, this, [this] { markDirty(); });
    connect(m_state, &AnalysisState::focusChanged, this, [this] { markDirty(); });
    syncControls();
}

bool OverviewView::updateTickLabels() {
    if (m_rowLabels.isEmpty() || m_columnLabels.isEmpty()) return false;
    const bool rows = setCellLabels(m_plot->yAxis, m_rowLabels);
    const bool columns = setCellLabels(m_plot->xAxis, m_columnLabels);
    // The frame's top and right axes tick at the same cells (their own tickers put marks at 0.2 steps).
    m_plot->xAxis2->setTicker(m_plot->xAxis->ticker());
    m_plot->yAxis2->setTicker(m_plot->yAxis->ticker());
    return rows || columns;
}

void OverviewView::syncControls() {
    const auto& d = m_state->display();
    m_stat->setCurrentIndex(static_cast<int>(d.overviewStat));
    m_otherPolicy->setCurrentText(d.overlapPolicy);
    m_otherPolicy->setEnabled(d.overviewStat == OverviewStat::Overlap);
}

void OverviewView::onStatChosen(int index) {
    DisplaySettings d = m_state->display();
    d.overviewStat = static_cast<OverviewStat>(index);
    m_state->setDisplay(d);
}

void OverviewView::onOtherPolicyChosen(int) {
    DisplaySettings d = m_state->display();
    d.overlapPolicy = m_otherPolicy->currentText();
    m_state->setDisplay(d);
}

void OverviewView::setHighlight(bool on) {
    m_highlight = on;
    m_cursor->setPen(QPen(QColor("#e4002b"), on ? 5 : 2.5));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

const snapkv::Selection* OverviewView::shownSelection() const {
    return m_state->hasPreview() ? m_state->previewSelection() : m_state->selection();
}

int OverviewView::shownHeads() const {
    const auto* sel = shownSelection();
    if (sel && !sel->layers.empty()) return static_cast<int>(sel->layers.front().heads.size());
    return m_state->nHeads();
}

int OverviewView::selectionHeadOf(int gridHead) const {
    // Hit rates are per query head; in kv-head mode a selection head serves a group of them.
    const int nSel = shownHeads();
    const int nGrid = m_grid.empty() ? nSel : static_cast<int>(m_grid.front().size());
    if (nSel <= 0 || nGrid <= nSel) return gridHead;
    return gridHead / (nGrid / nSel);
}

int OverviewView::gridHeadOf(int selectionHead) const {
    const int nSel = shownHeads();
    const int nGrid = m_grid.empty() ? nSel : static_cast<int>(m_grid.front().size());
    if (nSel <= 0 || nGrid <= nSel) return selectionHead;
    return selectionHead * (nGrid / nSel);
}

void OverviewView::refresh() {
    syncControls();
    const auto& d = m_state->display();
    // While a prefill runs, its finished layers (no comparison belongs to them yet); the rows of
    // the layers still to come stay empty, greyed, so the grid has its final shape from the start.
    const bool preview = m_state->hasPreview();
    const auto* sel = shownSelection();
    m_grid = preview ? overviewGrid(d.overviewStat, sel, m_state->previewOther(), nullptr)
                     : overviewGrid(d.overviewStat, sel, m_state->otherSelection(), m_state->comparison());
    m_pendingRows = 0;
    m_pendingText.clear();
    if (preview && m_state->hasModel()) {
        const auto& cfg = m_state->model().config;
        const bool kv = sel ? sel->params.gqa == snapkv::GqaMode::KvHead
                            : m_state->params().toSelectionParams().gqa == snapkv::GqaMode::KvHead;
        const size_t width = !m_grid.empty() && !m_grid.front().empty()
                                 ? m_grid.front().size()
                                 : static_cast<size_t>(kv ? cfg.n_head_kv : cfg.n_head);
        const int done = static_cast<int>(m_grid.size());
        m_grid.resize(static_cast<size_t>(std::max(m_state->previewTotal(), done)),
                      std::vector<double>(width, kNoValue));
        m_pendingRows = static_cast<int>(m_grid.size()) - m_state->previewDone();
        m_pendingText = m_pendingRows > 0 ? QString("layer %1 running · %1 of %2 layers done")
                                                .arg(m_state->previewDone())
                                                .arg(m_state->previewTotal())
                                          : QString("all %1 layers done, selecting…").arg(m_state->previewTotal());
    }
    for (int i = m_plot->itemCount() - 1; i >= 0; --i)
        if (m_plot->item(i) != m_cursor) m_plot->removeItem(i);

    const int nL = static_cast<int>(m_grid.size());
    const int nH = nL ? static_cast<int>(m_grid.front().size()) : 0;
    const QString statName = overviewStatNames().at(static_cast<int>(d.overviewStat));
    m_scale->axis()->setLabel(statName);
    if (nL == 0 || nH == 0) {
        // No empty axes and colour scale: a panel says what to do.
        m_map->data()->clear();
        m_cursor->setVisible(false);
        m_info->clear();
        m_rowLabels.clear();
        if (d.overviewStat == OverviewStat::HitRate && m_state->selection())
            setEmptyState("Hit rates need a comparison",
                          "Open Compare and press Generate & compare (Ctrl+G). The hit rate of a head is the share "
                          "of the positions its generated tokens attend to (attention above the threshold) that the "
                          "selection kept.");
        else if (d.overviewStat == OverviewStat::Overlap && m_state->selection())
            setEmptyState("Computing the other policy's selection…");
        else
            setEmptyState("No results yet",
                          "Press Run (F5) to load the model, prefill the document and select what the cache keeps. "
                          "Each cell will then be one attention head (layers down, heads across), coloured by the "
                          "statistic chosen above; click a cell to inspect that head.",
                          true);
        return;
    }
    setEmptyState(QString());
    setUnitCells(m_map, nH, nL);
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    int count = 0;
    for (int l = 0; l < nL; ++l)
        for (int h = 0; h < nH; ++h) {
            const double v = h < static_cast<int>(m_grid[l].size()) ? m_grid[l][h] : kNoValue;
            m_map->data()->setCell(h, l, v);
            if (std::isfinite(v)) {
                lo = std::min(lo, v), hi = std::max(hi, v), sum += v, ++count;
            }
        }
    // Every statistic here is a share in [0, 1]: a fixed 0..1 range keeps colours comparable
    // between runs; log scale is a heatmap option and does not apply here.
    DisplaySettings grid = d;
    grid.logScale = false;
    grid.fixedRange = true;
    grid.rangeMin = 0;
    grid.rangeMax = 1;
    applyColorSettings(m_map, m_scale, grid, lo, hi);
    m_plot->xAxis->setRange(-0.5, nH - 0.5);
    m_plot->yAxis->setRange(-0.5, nL - 0.5);
    // In kv-head mode a column is one KV head (a query-head group); hit rates stay per query head.
    const bool grouped = m_state->hasModel() && m_state->model().config.n_head_kv < m_state->model().config.n_head;
    const bool kvColumns = grouped && sel && sel->params.gqa == snapkv::GqaMode::KvHead &&
                           d.overviewStat != OverviewStat::HitRate;
    m_plot->xAxis->setLabel(kvColumns                                            ? "KV head"
                            : grouped && d.overviewStat == OverviewStat::HitRate ? "query head"
                                                                                 : "head");

    // Sliding-window layers only ever see their window: their rows get a dotted frame and "sw" on
    // the layer axis, and the caption says what that means. Every row is labelled while the rows
    // are tall enough for a label; heads likewise while the columns are wide enough.
    std::vector<int64_t> windows(static_cast<size_t>(nL), 0);
    int nSliding = 0;
    int64_t slidingWindow = 0;
    for (int l = 0; sel && l < nL && l < static_cast<int>(sel->layers.size()); ++l) {
        const int64_t w = sel->layers[l].sliding_window;
        windows[static_cast<size_t>(l)] = w;
        if (w <= 0) continue;
        ++nSliding;
        slidingWindow = w;
        auto* frame = new QCPItemRect(m_plot);
        frame->topLeft->setCoords(-0.5, l - 0.5);
        frame->bottomRight->setCoords(nH - 0.5, l + 0.5);
        frame->setPen(QPen(QColor("#303030"), 1.4, Qt::DotLine));
        frame->setBrush(Qt::NoBrush);
        frame->setClipToAxisRect(true);
    }
    m_rowLabels = layerLabels(windows);
    m_columnLabels = indexLabels(nH);
    updateTickLabels();

    // Value labels when a cell has room for "0.00".
    const double cellW = m_plot->axisRect()->width() / double(nH);
    const double cellH = m_plot->axisRect()->height() / double(nL);
    if (cellW >= 34 && cellH >= 13) {
        QFont f = font();
        f.setPointSizeF(std::min(9.0, cellH * 0.55));
        for (int l = 0; l < nL; ++l)
            for (int h = 0; h < nH; ++h) {
                const double v = m_grid[l][h];
                if (!std::isfinite(v)) continue;
                auto* t = new QCPItemText(m_plot);
                t->position->setCoords(h, l);
                t->setText(QString::number(v, 'f', 2));
                t->setFont(f);
                t->setColor(textColorOn(colorAt(d.colorMap, std::clamp(v, 0.0, 1.0))));
                t->setClipToAxisRect(true);
            }
    }

    if (m_pendingRows > 0) {
        // The layers still running: greyed, with where the prefill is.
        const int first = nL - m_pendingRows;
        auto* pending = new QCPItemRect(m_plot);
        pending->topLeft->setCoords(-0.5, first - 0.5);
        pending->bottomRight->setCoords(nH - 0.5, nL - 0.5);
        pending->setPen(Qt::NoPen);
        pending->setBrush(QBrush(QColor(150, 150, 150, 90), Qt::BDiagPattern));
        pending->setClipToAxisRect(true);
        auto* fill = new QCPItemRect(m_plot);
        fill->topLeft->setCoords(-0.5, first - 0.5);
        fill->bottomRight->setCoords(nH - 0.5, nL - 0.5);
        fill->setPen(QPen(QColor("#9a9a9a"), 1));
        fill->setBrush(QColor(225, 225, 225, 150));
        fill->setClipToAxisRect(true);
        auto* t = new QCPItemText(m_plot);
        t->position->setCoords((nH - 1) / 2.0, first - 0.5 + m_pendingRows / 2.0);
        t->setText(m_pendingText);
        QFont f = font();
        f.setPointSizeF(11);
        f.setBold(true);
        t->setFont(f);
        t->setColor(QColor("#404040"));
        t->setBrush(QColor(255, 255, 255, 210));
        t->setPadding(QMargins(6, 3, 6, 3));
        t->setClipToAxisRect(true);
    }

    const int gh = gridHeadOf(m_state->head());
    m_cursor->topLeft->setCoords(gh - 0.5, m_state->layer() - 0.5);
    const int span = std::max(1, nH / std::max(1, m_state->nHeads()));
    m_cursor->bottomRight->setCoords(gh - 0.5 + (d.overviewStat == OverviewStat::HitRate ? span : 1),
                                     m_state->layer() + 0.5);
    m_cursor->setVisible(true);
    const QString column = m_plot->xAxis->label();
    QString info = QString("%1 layers x %2 %3%4 · mean %5 · focused: %6")
                       .arg(nL)
                       .arg(nH)
                       .arg(column, nH == 1 ? "" : "s")
                       .arg(count ? sum / count : 0.0, 0, 'f', 3)
                       .arg(describe(m_state->layer(), gh));
    if (nSliding > 0) info += QString(" · sw: sliding window %1").arg(slidingWindow);
    if (preview)
        info = QString("prefill running: %1 of %2 layers done in %3 s · %4")
                   .arg(m_state->previewDone())
                   .arg(m_state->previewTotal())
                   .arg(m_state->previewElapsedMs() / 1000.0, 0, 'f', 1)
                   .arg(info);
    m_info->setText(info);
    m_info->setToolTip(nSliding == 0 ? QString()
                                     : QString("Rows marked sw (dotted) are sliding-window layers: each sees only "
                                               "its last %1 tokens, so only those are kept or counted.")
                                           .arg(slidingWindow));
    m_plot->replot();
}

bool OverviewView::cellAt(const QPoint& pos, int* layer, int* head) const {
    if (m_grid.empty() || !m_plot->axisRect()->rect().contains(pos)) return false;
    const int h = static_cast<int>(std::lround(m_plot->xAxis->pixelToCoord(pos.x())));
    const int l = static_cast<int>(std::lround(m_plot->yAxis->pixelToCoord(pos.y())));
    if (l < 0 || l >= static_cast<int>(m_grid.size()) || h < 0 || h >= static_cast<int>(m_grid[l].size())) return false;
    *layer = l;
    *head = h;
    return true;
}

QString OverviewView::describe(int layer, int head) const {
    if (layer < 0 || layer >= static_cast<int>(m_grid.size()) || head < 0 ||
        head >= static_cast<int>(m_grid[layer].size()))
        return {};
    const double v = m_grid[layer][head];
    const QString name = overviewStatNames().at(static_cast<int>(m_state->display().overviewStat));
    return QString("layer %1, %2 %3: %4 %5")
        .arg(layer)
        .arg(m_plot->xAxis->label())
        .arg(head)
        .arg(name, std::isfinite(v) ? QString::number(v, 'f', 3) : QString("n/a"));
}

bool OverviewView::eventFilter(QObject* watched, QEvent* event) {
    if (watched != m_plot) return LazyView::eventFilter(watched, event);
    if (event->type() == QEvent::MouseMove) {
        auto* me = static_cast<QMouseEvent*>(event);
        int l, h;
        if (cellAt(me->pos(), &l, &h)) {
            QString tip = describe(l, h);
            const auto* sel = shownSelection();
            const int sh = selectionHeadOf(h);
            if (sel && l < static_cast<int>(sel->layers.size()) && sh < static_cast<int>(sel->layers[l].heads.size())) {
                const auto& hs = sel->layers[l].heads[sh];
                tip += QString("\nkept %1 prefix tokens · kept mass %2 · entropy %3 · sink mass %4")
                           .arg(hs.kept.size())
                           .arg(hs.kept_mass, 0, 'f', 3)
                           .arg(voteEntropy(hs.votes), 0, 'f', 3)
                           .arg(sinkMass(hs.votes, sel->params.n_sink), 0, 'f', 3);
                const auto& ls = sel->layers[l];
                if (ls.sliding_window > 0)
                    tip += QString(
                               "\nsliding-window layer (window %1): the next token sees positions from %2 on; "
                               "nothing older is kept or counted")
                               .arg(ls.sliding_window)
                               .arg(ls.first_reachable);
            }
            tip += "\nclick to inspect this head";
            QToolTip::showText(me->globalPosition().toPoint(), tip, m_plot);
        } else {
            QToolTip::hideText();
        }
    } else if (event->type() == QEvent::MouseButtonPress) {
        auto* me = static_cast<QMouseEvent*>(event);
        int l, h;
        if (me->button() == Qt::LeftButton && cellAt(me->pos(), &l, &h)) m_state->setFocus(l, selectionHeadOf(h));
    } else if (event->type() == QEvent::KeyPress) {
        auto* ke = static_cast<QKeyEvent*>(event);
        int l = m_state->layer(), h = m_state->head();
        switch (ke->key()) {
        case Qt::Key_Up: --l; break;
        case Qt::Key_Down: ++l; break;
        case Qt::Key_Left: --h; break;
        case Qt::Key_Right: ++h; break;
        default: return false;
        }
        m_state->setFocus(l, h);
        return true;
    }
    return false;
}

}  // namespace studio
