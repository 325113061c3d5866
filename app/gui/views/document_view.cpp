// DocumentView: a read-only QTextEdit filled token by token with character formats.
#include "app/gui/views/document_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextEdit>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>

#include "app/gui/plot/colormaps.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/state/head_stats.h"

namespace studio {

namespace {

// Light backgrounds so the text stays readable; evicted tokens are greyed instead of shaded.
const QColor kCategoryBg[] = {QColor(Qt::white), QColor("#b7e4c7"), QColor("#bcd4f6"),
                              QColor("#dcc6f2"), QColor("#fff1b8"), QColor("#e4e4e4")};
const QColor kGreyText("#8a8a8a");
// Marked tokens (an evaluation's needle): dark red, bold, underlined, on top of any shading.
const QColor kMarkColor("#b3001b");
const char* kCategoryName[] = {"evicted",
                               "kept",
                               "observation window",
                               "attention sink (kept)",
                               "question (outside the query-agnostic cache)",
                               "beyond the sliding window"};

// Heat backgrounds are the colour map lightened halfway to white: the order of the colours is
// kept, and text stays dark and readable on every token.
QColor heatColor(ColorMapKind kind, double t) {
    const QColor c = colorAt(kind, t);
    constexpr double kLighten = 0.45;
    return QColor::fromRgbF(c.redF() + (1 - c.redF()) * kLighten, c.greenF() + (1 - c.greenF()) * kLighten,
                            c.blueF() + (1 - c.blueF()) * kLighten);
}

QString visible(const std::string& piece) {
    QString s = QString::fromUtf8(piece.data(), static_cast<int>(piece.size()));
    s.replace('\n', QString::fromUtf8("\u21b5"));
    s.replace('\t', QString::fromUtf8("\u2192"));
    return s;
}

}  // namespace

DocumentView::DocumentView(AnalysisState* state, QWidget* parent) : LazyView(parent), m_state(state) {
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel("Shade by:"));
    m_mode = new QComboBox;
    m_mode->addItems(documentModeNames());
    top->addWidget(m_mode);
    m_summary = new QLabel;
    m_summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // never widens the window:
    m_summary->setWordWrap(true);                                            // a long line wraps instead
    top->addWidget(m_summary, 1);
    m_legend = new QLabel;
    m_legend->setTextFormat(Qt::RichText);

    m_text = new QTextEdit;
    m_text->setObjectName("documentText");
    m_text->setReadOnly(true);
    m_text->setUndoRedoEnabled(false);
    m_text->viewport()->installEventFilter(this);
    QFont f = m_text->font();
    f.setPointSizeF(11);
    m_text->setFont(f);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(m_legend);
    layout->addWidget(wrapWithEmptyState(m_text), 1);

    connect(m_mode, qOverload<int>(&QComboBox::activated), this, [this](int i) {
        DisplaySettings d = m_state->display();
        d.documentMode = static_cast<DocumentMode>(i);
        m_state->setDisplay(d);
    });
    for (auto sig : {&AnalysisState::prefillChanged, &AnalysisState::selectionChanged, &AnalysisState::displayChanged})
        connect(m_state, sig, this, [this] { markDirty(); });
    connect(m_state, &AnalysisState::focusChanged, this, [this] { markDirty(); });
    connect(m_state, &AnalysisState::markChanged, this, [this] {
        markDirty();
        m_scrollToMark = true;
    });
}

void DocumentView::computeShading() {
    m_categories.clear();
    m_heat.clear();
    m_ranks.clear();
    if (!m_state->hasPrefill()) return;
    const auto& pre = m_state->prefill();
    const int64_t n = static_cast<int64_t>(pre.pieces.size());
    const auto* sel = m_state->selection();
    const auto* hs = m_state->focusedHead();
    const auto* ls = m_state->focusedLayer();
    m_categories.assign(static_cast<size_t>(n), Evicted);
    m_heat.assign(static_cast<size_t>(n), 0.f);
    if (!sel) return;
    const int64_t L = sel->n_tokens;  // selection sequence (context only when query-agnostic)
    const int64_t P = std::max<int64_t>(0, L - sel->window);
    const bool compressed = ls && ls->compressed;
    // A sliding-window layer keeps nothing older than the next token's window, compressed or not.
    const int64_t reach = ls ? std::clamp<int64_t>(ls->first_reachable, 0, std::min(P, n)) : 0;
    for (int64_t p = 0; p < reach; ++p) m_categories[p] = Unreachable;
    if (hs) {
        for (int64_t p : hs->kept)
            if (p >= reach && p < n) m_categories[p] = Kept;
        if (!compressed)
            for (int64_t p = reach; p < std::min(P, n); ++p) m_categories[p] = Kept;
        for (int64_t p = 0; p < std::min<int64_t>(sel->params.n_sink, std::min(P, n)); ++p)
            if (m_categories[p] == Kept) m_categories[p] = Sink;
        if (!hs->pooled.empty()) m_ranks = ranks(hs->pooled);
    }
    for (int64_t p = P; p < std::min(L, n); ++p) m_categories[p] = Window;
    for (int64_t p = L; p < n; ++p) m_categories[p] = Question;

    switch (m_state->display().documentMode) {
    case DocumentMode::HeadSelection: break;
    case DocumentMode::HeadVotes:
        if (hs && !hs->votes.empty()) {
            const int k = m_state->display().hideSinks;
            float mx = 0;
            for (size_t i = static_cast<size_t>(std::max(k, 0)); i < hs->votes.size(); ++i)
                mx = std::max(mx, hs->votes[i]);
            for (size_t i = 0; i < hs->votes.size() && i < m_heat.size(); ++i)
                m_heat[i] = mx > 0 ? std::min(1.f, hs->votes[i] / mx) : 0.f;
        }
        break;
    case DocumentMode::LayerKeptShare:
    case DocumentMode::AllKeptShare: {
        const auto share = keptShare(
            *sel, m_state->display().documentMode == DocumentMode::LayerKeptShare ? m_state->layer() : -1);
        for (size_t i = 0; i < share.size() && i < m_heat.size(); ++i) m_heat[i] = share[i];
        break;
    }
    }
}

void DocumentView::render() {
    const auto scroll = m_text->verticalScrollBar()->value();
    m_text->clear();
    m_charStart.clear();
    if (!m_state->hasPrefill()) {
        setEmptyState("No prompt yet",
                      "Press Run (F5): the prompt appears here token by token, each token shaded by whether the "
                      "focused head's cache keeps it (or, per the choice above, by its votes or by how many heads "
                      "keep it).",
                      true);
        return;
    }
    setEmptyState(QString());
    const auto& pre = m_state->prefill();
    const auto& d = m_state->display();
    const bool heatMode = d.documentMode != DocumentMode::HeadSelection;
    QTextCursor c(m_text->document());
    c.beginEditBlock();
    QTextCharFormat base;
    int pos = 0;
    for (size_t i = 0; i < pre.pieces.size(); ++i) {
        QTextCharFormat fmt = base;
        const int cat = i < m_categories.size() ? m_categories[i] : Evicted;
        if (heatMode && cat != Question) {
            const QColor bg = heatColor(d.colorMap, i < m_heat.size() ? m_heat[i] : 0.f);
            fmt.setBackground(bg);
            fmt.setForeground(Qt::black);  // every lightened background is light enough
        } else {
            fmt.setBackground(kCategoryBg[cat]);
            if (cat == Evicted || cat == Unreachable) fmt.setForeground(kGreyText);
            if (cat == Window && m_highlightWindow) {
                fmt.setBackground(QColor("#7aa6f0"));
                fmt.setFontWeight(QFont::Bold);
            }
        }
        if (const auto* mark = m_state->markAt(static_cast<int64_t>(i))) {
            // An answer inside a needle sentence stands out from the rest of the sentence (dotted).
            const bool answer = mark->label == "answer";
            const bool sentence = !answer && m_state->markedSpans().size() > 1;
            fmt.setFontUnderline(true);
            fmt.setUnderlineStyle(sentence ? QTextCharFormat::DotLine : QTextCharFormat::SingleUnderline);
            fmt.setUnderlineColor(kMarkColor);
            fmt.setFontWeight(sentence ? QFont::Normal : QFont::Bold);
            fmt.setForeground(kMarkColor);
        }
        QString piece = QString::fromUtf8(pre.pieces[i].data(), static_cast<int>(pre.pieces[i].size()));
        if (piece.isEmpty()) piece = QString::fromUtf8("\u00b7");  // keep every token hoverable
        m_charStart.push_back(pos);
        c.insertText(piece, fmt);
        pos += piece.size();
    }
    c.endEditBlock();
    if (m_highlightWindow) {
        m_text->moveCursor(QTextCursor::End);
        m_text->ensureCursorVisible();
    } else if (m_scrollToMark && m_state->markedFirst() >= 0 &&
               m_state->markedFirst() < static_cast<int64_t>(m_charStart.size())) {
        QTextCursor at(m_text->document());
        at.setPosition(m_charStart[static_cast<size_t>(m_state->markedFirst())]);
        m_text->setTextCursor(at);
        m_text->ensureCursorVisible();
        m_scrollToMark = false;
    } else {
        m_text->verticalScrollBar()->setValue(scroll);
    }
}

void DocumentView::refresh() {
    const auto& d = m_state->display();
    m_mode->setCurrentIndex(static_cast<int>(d.documentMode));
    computeShading();
    render();
    QStringList legend;
    if (d.documentMode == DocumentMode::HeadSelection) {
        const bool sliding = std::count(m_categories.begin(), m_categories.end(), Unreachable) > 0;
        for (int cat : {Kept, Sink, Window, Evicted, Unreachable, Question}) {
            if (cat == Unreachable && !sliding) continue;
            legend << QString("<span style='background:%1;color:%2'>&nbsp;%3&nbsp;</span>")
                          .arg(kCategoryBg[cat].name(),
                               cat == Evicted || cat == Unreachable ? kGreyText.name() : "black", kCategoryName[cat]);
        }
    } else {
        QString bar;
        for (int i = 0; i <= 10; ++i) {
            const QColor bg = heatColor(d.colorMap, i / 10.0);
            bar += QString("<span style='background:%1;color:black'>&nbsp;%2&nbsp;</span>")
                       .arg(bg.name(), i == 0    ? "0"
                                       : i == 10 ? "1"
                                                 : "&nbsp;");
        }
        legend << (d.documentMode == DocumentMode::HeadVotes ? "votes / max vote:"
                                                             : "share of heads keeping the token:") +
                      bar;
    }
    QStringList markLabels;
    for (const auto& m : m_state->markedSpans())
        if (!markLabels.contains(m.label)) markLabels << m.label;
    for (const QString& label : markLabels) {
        const int n = static_cast<int>(std::count_if(m_state->markedSpans().begin(), m_state->markedSpans().end(),
                                                     [&](const auto& m) { return m.label == label; }));
        const QString text = (label.isEmpty() ? QString("marked") : label) +
                             (n > 1 ? QString(" (%1)").arg(n) : QString());
        legend << QString("<b><u style='color:%1'>%2</u></b>").arg(kMarkColor.name(), text.toHtmlEscaped());
    }
    m_legend->setText(legend.join("&nbsp;&nbsp;"));
    if (const auto* sel = m_state->selection(); sel && m_state->hasPrefill()) {
        const auto counts = [&](int cat) { return std::count(m_categories.begin(), m_categories.end(), cat); };
        // In kv-head mode on a grouped-query model the focused head is a KV head.
        const bool kvHead = sel->params.gqa == snapkv::GqaMode::KvHead && m_state->hasModel() &&
                            m_state->model().config.n_head_kv < m_state->model().config.n_head;
        QString summary = QString("%1 prompt tokens · layer %2, %3 %4 keeps %5 prefix tokens + %6 window")
                              .arg(m_state->prefill().pieces.size())
                              .arg(m_state->layer())
                              .arg(kvHead ? "KV head" : "head")
                              .arg(m_state->head())
                              .arg(counts(Kept) + counts(Sink))
                              .arg(counts(Window));
        const auto* ls = m_state->focusedLayer();
        if (ls && counts(Unreachable) > 0)
            summary += QString(" · sliding window %1: the %2 tokens before position %3 are out of its reach")
                           .arg(ls->sliding_window)
                           .arg(counts(Unreachable))
                           .arg(ls->first_reachable);
        m_summary->setText(summary);
    } else {
        m_summary->clear();
    }
}

void DocumentView::setHighlightWindow(bool on) {
    if (m_highlightWindow == on) return;
    m_highlightWindow = on;
    markDirty();
}

int DocumentView::tokenAt(int charPos) const {
    if (m_charStart.empty()) return -1;
    auto it = std::upper_bound(m_charStart.begin(), m_charStart.end(), charPos);
    return static_cast<int>(it - m_charStart.begin()) - 1;
}

void DocumentView::revealToken(int token) {
    refreshNow();
    if (token < 0 || static_cast<size_t>(token) >= m_charStart.size()) return;
    const int from = m_charStart[static_cast<size_t>(token)];
    const int to = static_cast<size_t>(token) + 1 < m_charStart.size() ? m_charStart[static_cast<size_t>(token) + 1]
                                                                       : m_text->document()->characterCount() - 1;
    QTextCursor c(m_text->document());
    c.setPosition(from);
    c.setPosition(std::max(from, to), QTextCursor::KeepAnchor);
    m_text->setTextCursor(c);
    m_text->ensureCursorVisible();
    m_text->setFocus();
}

QString DocumentView::tooltipFor(int i) const {
    if (!m_state->hasPrefill() || i < 0 || i >= static_cast<int>(m_state->prefill().pieces.size())) return {};
    const auto& pre = m_state->prefill();
    QString tip = QString("position %1 · token id %2 · \"%3\"")
                      .arg(i)
                      .arg(i < static_cast<int>(pre.ids.size()) ? pre.ids[i] : -1)
                      .arg(visible(pre.pieces[i]));
    const int cat = i < static_cast<int>(m_categories.size()) ? m_categories[i] : Evicted;
    tip += QString("\n%1").arg(kCategoryName[cat]);
    if (const auto* mark = m_state->markAt(i)) tip += " · " + (mark->label.isEmpty() ? QString("marked") : mark->label);
    if (const auto* hs = m_state->focusedHead()) {
        if (i < static_cast<int>(hs->votes.size())) tip += QString("\nvote %1").arg(hs->votes[i], 0, 'g', 4);
        if (i < static_cast<int>(hs->pooled.size())) tip += QString(" · pooled %1").arg(hs->pooled[i], 0, 'g', 4);
        if (i < static_cast<int>(m_ranks.size()))
            tip += QString(" · rank %1 of %2").arg(m_ranks[i] + 1).arg(m_ranks.size());
    }
    if (m_state->display().documentMode != DocumentMode::HeadSelection && i < static_cast<int>(m_heat.size()))
        tip += QString("\nheat %1").arg(m_heat[i], 0, 'f', 3);
    return tip;
}

bool DocumentView::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_text->viewport() && event->type() == QEvent::ToolTip) {
        auto* he = static_cast<QHelpEvent*>(event);
        const int token = tokenAt(m_text->cursorForPosition(he->pos()).position());
        const QString tip = tooltipFor(token);
        if (tip.isEmpty()) {
            QToolTip::hideText();
        } else {
            QToolTip::showText(he->globalPos(), tip, m_text);
        }
        return true;
    }
    return LazyView::eventFilter(watched, event);
}

}  // namespace studio
