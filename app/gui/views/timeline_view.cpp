// TimelineView: the compressed cache per generation step as an image over (step, position), the
// full run's attention drawn over it, KL and top-1 agreement below.
//
// Column i is the compressed cache after step i (token i fed, any event that fired then applied):
// the positions of the last event with step <= i + 1 (CompareResult::decode_events; an event after
// the k-th fed-back token fired after step k - 1), or before any event the prefill's kept positions
// (start_kept), plus every generated position after them. Its overlay is the attention of token
// i + 1 in the full run (step_attention[i + 1]): what the next token looks for in this cache.
#include "app/gui/views/timeline_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QSpinBox>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "app/gui/plot/plot_style.h"
#include "app/gui/state/analysis_state.h"

namespace studio {

namespace {

const QColor kFuture("#ffffff");
const QColor kKeptColor("#b9cfe8");
const QColor kEvictedColor("#555555");
const QColor kAttention("#e6550d");
const QColor kNeededGone("#ff00ff");
const QColor kEventColor("#1f4e9c");

QColor mix(const QColor& a, const QColor& b, double t) {
    t = std::clamp(t, 0.0, 1.0);
    return QColor::fromRgbF(a.redF() + (b.redF() - a.redF()) * t, a.greenF() + (b.greenF() - a.greenF()) * t,
                            a.blueF() + (b.blueF() - a.blueF()) * t);
}

QString pieceText(const std::string& piece) {
    QString s = QString::fromUtf8(piece.data(), static_cast<int>(piece.size()));
    s.replace("\n", "\\n");
    return s.isEmpty() ? QString("·") : s;
}

// The kept positions of layer l, cache head h after step i, as a mask over positions [0, P).
void keptAfter(const snapkv::CompareResult& r, int l, int h, int i, int P, std::vector<uint8_t>& mask) {
    const int64_t L = r.prompt_tokens;
    mask.assign(static_cast<size_t>(P), 0);
    const std::vector<int64_t>* base = nullptr;
    int64_t genFrom = L;
    for (const snapkv::DecodeCompressionEvent& e : r.decode_events) {
        if (e.step > i + 1) break;
        base = &e.kept[static_cast<size_t>(l)][static_cast<size_t>(h)];
        genFrom = L + e.step;
    }
    if (!base) base = &r.start_kept[static_cast<size_t>(l)][static_cast<size_t>(h)];
    for (int64_t p : *base)
        if (p >= 0 && p < P) mask[static_cast<size_t>(p)] = 1;
    // The last sampled token is never fed: the cache ends at position L + steps - 2.
    for (int64_t p = genFrom; p <= std::min<int64_t>(L + i, P - 2); ++p) mask[static_cast<size_t>(p)] = 1;
}

}  // namespace

TimelineView::TimelineView(AnalysisState* state, QWidget* parent) : LazyView(parent), m_state(state) {
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel("Show"));
    m_mode = new QComboBox;
    m_mode->setObjectName("timelineMode");
    m_mode->addItem("one layer and head");
    m_mode->addItem("share of all heads keeping it");
    top->addWidget(m_mode);
    top->addWidget(new QLabel("Layer"));
    m_layer = new QSpinBox;
    m_layer->setObjectName("timelineLayer");
    top->addWidget(m_layer);
    top->addWidget(new QLabel("Head"));
    m_head = new QSpinBox;
    m_head->setObjectName("timelineHead");
    m_head->setToolTip("A head of the compressed cache (a KV head per KV-head selection, a query head per query-head)");
    top->addWidget(m_head);
    top->addWidget(new QLabel("Rows"));
    m_rows = new QComboBox;
    m_rows->setObjectName("timelineRows");
    m_rows->addItem("positions ever kept");
    m_rows->addItem("every position");
    m_rows->setToolTip(
        "Positions ever kept: one row per position that some step keeps (and every generated "
        "token), labelled with its position; every position: the whole prompt to scale");
    top->addWidget(m_rows);
    m_attention = new QCheckBox("Full-cache attention");
    m_attention->setChecked(true);
    m_attention->setToolTip(
        "The full run's attention of the next token over each position (orange), and in magenta "
        "where it exceeds θ on a position the compressed cache had already evicted");
    top->addWidget(m_attention);
    m_summary = new QLabel;
    m_summary->setWordWrap(true);
    top->addWidget(m_summary, 1);

    m_plot = new QCustomPlot;
    m_plot->setObjectName("timelinePlot");
    stylePlot(m_plot);
    m_plot->xAxis->setLabel("generation step");
    m_plot->yAxis->setLabel("cache position (prompt, then generated)");
    // KL and top-1 agreement under the image, step by step on the same x range.
    m_metricRect = new QCPAxisRect(m_plot);
    m_plot->plotLayout()->addElement(1, 0, m_metricRect);
    m_plot->plotLayout()->setRowStretchFactor(1, 0.28);
    for (QCPAxis* a : m_metricRect->axes()) styleAxis(a);
    m_metricRect->axis(QCPAxis::atBottom)->setLabel("generation step");
    m_metricRect->axis(QCPAxis::atLeft)->setLabel("KL, nats");
    m_metricRect->axis(QCPAxis::atRight)->setVisible(true);
    m_metricRect->axis(QCPAxis::atRight)->setLabel("top-1 differs");
    m_metricRect->axis(QCPAxis::atRight)->setRange(0, 1);
    m_metricRect->axis(QCPAxis::atRight)->setTickLabels(false);
    auto* group = new QCPMarginGroup(m_plot);
    m_plot->axisRect(0)->setMarginGroup(QCP::msLeft | QCP::msRight, group);
    m_metricRect->setMarginGroup(QCP::msLeft | QCP::msRight, group);
    m_plot->yAxis2->setVisible(true);
    m_plot->yAxis2->setTickLabels(false);
    m_plot->yAxis2->setTicks(false);
    m_plot->setMouseTracking(true);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(wrapWithEmptyState(m_plot), 1);

    connect(m_mode, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { markDirty(); });
    connect(m_layer, qOverload<int>(&QSpinBox::valueChanged), this, [this] { markDirty(); });
    connect(m_head, qOverload<int>(&QSpinBox::valueChanged), this, [this] { markDirty(); });
    connect(m_attention, &QCheckBox::toggled, this, [this] { markDirty(); });
    connect(m_rows, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { markDirty(); });
    // Zoom and drag the positions (the wheel and the mouse on the image); the steps stay whole.
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->axisRect(0)->setRangeDrag(Qt::Vertical);
    m_plot->axisRect(0)->setRangeZoom(Qt::Vertical);
    m_metricRect->setRangeDrag(Qt::Orientations());
    m_metricRect->setRangeZoom(Qt::Orientations());
    connect(m_plot, &QCustomPlot::mouseMove, this, &TimelineView::onMouseMove);
    connect(m_plot, &QCustomPlot::mousePress, this, &TimelineView::onClick);
    for (auto sig : {&AnalysisState::comparisonChanged, &AnalysisState::prefillChanged})
        connect(m_state, sig, this, [this] { markDirty(); });
    // The focused layer follows the other views' focus (the head too where the cache heads match).
    connect(m_state, &AnalysisState::focusChanged, this, [this](int layer, int head) { setFocusHead(layer, head); });
}

void TimelineView::setFocusHead(int layer, int head) {
    m_layer->setValue(layer);
    m_head->setValue(head);
    markDirty();
}

void TimelineView::setShareMode(bool share) { m_mode->setCurrentIndex(share ? 1 : 0); }
void TimelineView::setCompactRows(bool compact) { m_rows->setCurrentIndex(compact ? 0 : 1); }

TimelineView::Cell TimelineView::cellState(int step, int position) const {
    if (step < 0 || step >= m_steps || position < 0 || position >= m_positions || m_cells.empty()) return Future;
    return static_cast<Cell>(m_cells[static_cast<size_t>(position) * m_steps + step]);
}

void TimelineView::refresh() {
    const snapkv::CompareResult* r = m_state->comparison();
    if (!r || r->start_kept.empty() || r->steps.empty()) {
        m_steps = m_positions = m_neededGone = 0;
        m_cells.clear();
        if (!m_state->hasPrefill())
            setEmptyState("Nothing to show yet",
                          "Press Run (F5) to prefill the document first; then Generate & compare (Ctrl+G) "
                          "records, step by step, what the compressed cache holds.",
                          true);
        else
            setEmptyState("No timeline yet",
                          "Run Generate & compare in the Compare view (Ctrl+G). Set a decoding budget in the "
                          "Parameters panel to compress while generating: this view then shows, step by step, "
                          "which positions each head keeps and whether the next token needed one that was gone.");
        return;
    }
    setEmptyState(QString());
    rebuild();
}

void TimelineView::rebuild() {
    const snapkv::CompareResult& r = *m_state->comparison();
    const int nLayer = static_cast<int>(r.start_kept.size());
    const int nCacheHeads = nLayer > 0 ? static_cast<int>(r.start_kept.front().size()) : 0;
    m_layer->setRange(0, std::max(0, nLayer - 1));
    m_head->setRange(0, std::max(0, nCacheHeads - 1));
    const int l = m_layer->value(), h = m_head->value();
    const bool share = m_mode->currentIndex() == 1;
    m_layer->setEnabled(!share);
    m_head->setEnabled(!share);
    const int64_t L = r.prompt_tokens;
    const int N = static_cast<int>(r.steps.size());
    const int P = static_cast<int>(L) + N;
    m_steps = N;
    m_positions = P;
    m_cells.assign(static_cast<size_t>(P) * N, Future);
    m_share.assign(static_cast<size_t>(P) * N, 0.0f);
    const int64_t nKvHeads = m_state->hasModel() ? m_state->model().config.n_head_kv : nCacheHeads;
    const int kv = nCacheHeads > 0 ? static_cast<int>(h * nKvHeads / nCacheHeads) : 0;
    const int thetaLevel = static_cast<int>(std::lround(255.0 * std::sqrt(m_state->params().hitThreshold)));
    m_neededGone = 0;

    // The full run's attention of token i + 1 (what the cache after step i is read for) on
    // position p, this layer's KV head: 0..255, or -1 where it was not recorded.
    auto nextAttention = [&](int i, int p) -> int {
        if (static_cast<size_t>(i + 1) >= r.step_attention.size()) return -1;
        const std::vector<uint8_t>& att = r.step_attention[static_cast<size_t>(i + 1)];
        const int64_t nPos = L + i + 2;  // positions step_attention[i + 1] covers
        const auto at = static_cast<size_t>((l * nKvHeads + kv) * nPos + p);
        return p < nPos && at < att.size() ? att[at] : -1;
    };
    std::vector<uint8_t> mask;
    for (int i = 0; i < N; ++i) {
        const int present = static_cast<int>(std::min<int64_t>(L + i + 1, P - 1));  // positions in the cache
        if (share) {
            std::vector<int> count(static_cast<size_t>(P), 0);
            int heads = 0;
            for (int ll = 0; ll < nLayer; ++ll)
                for (int hh = 0; hh < static_cast<int>(r.start_kept[static_cast<size_t>(ll)].size()); ++hh) {
                    keptAfter(r, ll, hh, i, P, mask);
                    for (int p = 0; p < present; ++p) count[static_cast<size_t>(p)] += mask[static_cast<size_t>(p)];
                    ++heads;
                }
            for (int p = 0; p < present; ++p)
                m_share[static_cast<size_t>(p) * N + i] = heads > 0
                                                              ? static_cast<float>(count[static_cast<size_t>(p)]) /
                                                                    static_cast<float>(heads)
                                                              : 0.0f;
        }
        keptAfter(r, share ? 0 : l, share ? 0 : h, i, P, mask);
        for (int p = 0; p < present; ++p) {
            Cell c = mask[static_cast<size_t>(p)] ? Kept : Evicted;
            if (!share && c == Evicted && nextAttention(i, p) > thetaLevel) {
                c = NeededGone;
                ++m_neededGone;
            }
            m_cells[static_cast<size_t>(p) * N + i] = static_cast<uint8_t>(c);
        }
    }

    // The rows: every position, or those some step keeps and the generated ones.
    m_rowPositions.clear();
    const bool compact = m_rows->currentIndex() == 0;
    for (int p = 0; p < P; ++p) {
        bool show = !compact || p >= L;
        for (int i = 0; i < N && !show; ++i) {
            const size_t at = static_cast<size_t>(p) * N + i;
            show = share ? m_share[at] > 0.0f : m_cells[at] == Kept;
        }
        if (show) m_rowPositions.push_back(p);
    }
    const int R = static_cast<int>(m_rowPositions.size());
    // The image: row 0 at the top is the last row.
    const bool overlay = m_attention->isChecked();
    m_image = QImage(std::max(N, 1), std::max(R, 1), QImage::Format_RGB32);
    m_image.fill(kFuture);
    for (int i = 0; i < N; ++i) {
        for (int row = 0; row < R; ++row) {
            const int p = m_rowPositions[static_cast<size_t>(row)];
            const Cell c = static_cast<Cell>(m_cells[static_cast<size_t>(p) * N + i]);
            if (c == Future) continue;
            QColor color;
            if (share) {
                color = mix(kEvictedColor, kKeptColor, m_share[static_cast<size_t>(p) * N + i]);
            } else if (c == NeededGone && overlay) {
                color = kNeededGone;
            } else {
                color = c == Kept ? kKeptColor : kEvictedColor;
                if (const int a = overlay ? nextAttention(i, p) : -1; a >= 0)
                    color = mix(color, kAttention, std::min(1.0, 1.6 * a / 255.0));
            }
            m_image.setPixel(i, R - 1 - row, color.rgb());
        }
    }
    m_plot->xAxis->setRange(-0.5, N - 0.5);
    m_plot->yAxis->setRange(-0.5, R - 0.5);
    // Row labels: the positions, about a dozen of them.
    QSharedPointer<QCPAxisTickerText> ticks(new QCPAxisTickerText);
    const int every = std::max(1, R / 12);
    for (int row = 0; row < R; row += every)
        ticks->addTick(row, QString::number(m_rowPositions[static_cast<size_t>(row)]));
    m_plot->yAxis->setTicker(ticks);
    m_plot->yAxis->setLabel(compact ? "cache position (rows: positions ever kept, then generated)"
                                    : "cache position (prompt, then generated)");

    // Events (vertical, from the first column after them) and the prompt's end (horizontal).
    m_plot->clearItems();
    auto* pixmap = new QCPItemPixmap(m_plot);  // clearItems() took the last one
    pixmap->setScaled(true, Qt::IgnoreAspectRatio, Qt::FastTransformation);
    pixmap->setPixmap(QPixmap::fromImage(m_image));
    pixmap->topLeft->setCoords(-0.5, R - 0.5);
    pixmap->bottomRight->setCoords(N - 0.5, -0.5);
    for (const snapkv::DecodeCompressionEvent& e : r.decode_events) {
        auto* line = new QCPItemStraightLine(m_plot);
        line->setPen(QPen(kEventColor, 1.2, Qt::DashLine));
        line->point1->setCoords(e.step - 1.5, 0);
        line->point2->setCoords(e.step - 1.5, 1);
    }
    auto* prompt = new QCPItemStraightLine(m_plot);
    prompt->setPen(QPen(QColor("#222222"), 1.0, Qt::DotLine));
    const int firstGenerated = static_cast<int>(std::lower_bound(m_rowPositions.begin(), m_rowPositions.end(), L) -
                                                m_rowPositions.begin());
    prompt->point1->setCoords(0, firstGenerated - 0.5);
    prompt->point2->setCoords(1, firstGenerated - 0.5);

    // KL and top-1 below.
    m_plot->clearPlottables();
    QCPAxis* mx = m_metricRect->axis(QCPAxis::atBottom);
    QCPAxis* my = m_metricRect->axis(QCPAxis::atLeft);
    QCPAxis* my2 = m_metricRect->axis(QCPAxis::atRight);
    auto* differs = new QCPBars(mx, my2);
    differs->setWidth(1.0);
    differs->setPen(Qt::NoPen);
    differs->setBrush(QColor("#f28b82"));
    differs->setName("top-1 differs");
    auto* kl = m_plot->addGraph(mx, my);
    kl->setPen(QPen(QColor("#3b6fd8"), 1.5));
    kl->setName("KL(full || compressed)");
    double klMax = 1e-6;
    for (int i = 0; i < N; ++i) {
        kl->addData(i, r.steps[static_cast<size_t>(i)].kl);
        klMax = std::max(klMax, r.steps[static_cast<size_t>(i)].kl);
        if (!r.steps[static_cast<size_t>(i)].top1_agree) differs->addData(i, 0.12);  // a strip along the bottom
    }
    mx->setRange(-0.5, N - 0.5);
    my->setRange(0, klMax * 1.1);

    const QString mode = r.decode.enabled() ? QString("decoding budget %1 every %2 tokens, %3 events")
                                                  .arg(r.decode.budget)
                                                  .arg(r.decode.interval)
                                                  .arg(r.decode_events.size())
                                            : QString("no decoding compression (prefill selection only)");
    m_summary->setText(QString("%1 prompt + %2 generated tokens; %3%4")
                           .arg(L)
                           .arg(N)
                           .arg(mode)
                           .arg(share ? QString()
                                      : QString("; layer %1 head %2: %3 cells where the next token needed an evicted "
                                                "position (θ %4)")
                                            .arg(l)
                                            .arg(h)
                                            .arg(m_neededGone)
                                            .arg(m_state->params().hitThreshold)));
    m_plot->replot();
}

bool TimelineView::cellAt(const QPointF& pixel, int* step, int* position) const {
    if (m_steps <= 0 || !m_plot->axisRect(0)->rect().contains(pixel.toPoint())) return false;
    *step = static_cast<int>(std::lround(m_plot->xAxis->pixelToCoord(pixel.x())));
    const int row = static_cast<int>(std::lround(m_plot->yAxis->pixelToCoord(pixel.y())));
    if (row < 0 || row >= rows()) return false;
    *position = m_rowPositions[static_cast<size_t>(row)];
    return *step >= 0 && *step < m_steps && *position >= 0 && *position < m_positions;
}

QString TimelineView::tooltipFor(int step, int position) const {
    const snapkv::CompareResult* r = m_state->comparison();
    if (!r) return {};
    const int64_t L = r->prompt_tokens;
    QString token;
    if (position < L) {
        const auto& pieces = m_state->hasPrefill() ? m_state->prefill().pieces : std::vector<std::string>{};
        token = static_cast<size_t>(position) < pieces.size()
                    ? "prompt token " + QString::number(position) + " '" +
                          pieceText(pieces[static_cast<size_t>(position)]) + "'"
                    : "prompt token " + QString::number(position);
    } else {
        const auto i = static_cast<size_t>(position - L);
        token = "generated token " + QString::number(i) +
                (i < r->compressed.pieces.size() ? " '" + pieceText(r->compressed.pieces[i]) + "'" : QString());
    }
    static const char* names[] = {"not generated yet", "kept", "evicted", "evicted, and the next token needed it"};
    return QString("step %1, position %2: %3\n%4").arg(step).arg(position).arg(token, names[cellState(step, position)]);
}

void TimelineView::onMouseMove(QMouseEvent* e) {
    int step = 0, position = 0;
    if (!cellAt(e->position(), &step, &position)) {
        QToolTip::hideText();
        return;
    }
    QToolTip::showText(e->globalPosition().toPoint(), tooltipFor(step, position), m_plot);
}

void TimelineView::onClick(QMouseEvent* e) {
    int step = 0, position = 0;
    const snapkv::CompareResult* r = m_state->comparison();
    if (!r || !cellAt(e->position(), &step, &position)) return;
    if (position < r->prompt_tokens) Q_EMIT promptTokenClicked(position);
    else Q_EMIT generatedTokenClicked(position - r->prompt_tokens);
}

}  // namespace studio
