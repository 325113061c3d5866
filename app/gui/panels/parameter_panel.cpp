// ParameterPanel: form widgets <-> ParamState, undo commands, debounce.
#include "app/gui/panels/parameter_panel.h"

#include "core/common/units.h"
#include "core/snapkv/policy_table.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QSpinBox>
#include <QToolButton>
#include <QUndoCommand>
#include <QUndoStack>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace studio {

namespace {

// Throttle, not a pure debounce: during a drag the newest state goes out every 120 ms, so the views
// follow the hand, rather than one retune per pixel or none until the hand stops.
constexpr int kDebounceMs = 120;
constexpr qint64 kMergeMs = 1000;

class ParamCommand : public QUndoCommand {
public:
    ParamCommand(ParameterPanel* panel, const ParamState& before, const ParamState& after, int field)
        : m_panel(panel), m_before(before), m_after(after), m_field(field),
          m_time(QDateTime::currentMSecsSinceEpoch()) {
        setText(after.summary());
    }
    void undo() override { m_panel->applyState(m_before); }
    void redo() override { m_panel->applyState(m_after); }
    int id() const override { return m_field == ParameterPanel::FPreset ? -1 : m_field; }
    // One drag of one control is one undo step: edits of the same control less than a second
    // apart merge; a later edit of it starts a new step.
    bool mergeWith(const QUndoCommand* other) override {
        const auto* o = static_cast<const ParamCommand*>(other);
        if (other->id() != id() || o->m_time - m_time > kMergeMs) return false;
        m_after = o->m_after;
        m_time = o->m_time;
        setText(m_after.summary());
        return true;
    }

private:
    ParameterPanel* m_panel;
    ParamState m_before;
    ParamState m_after;
    int m_field;
    qint64 m_time;
};

QWidget* sliderRow(QSlider* slider, QWidget* box) {
    auto* w = new QWidget;
    auto* l = new QHBoxLayout(w);
    l->setContentsMargins(0, 0, 0, 0);
    l->addWidget(slider, 1);
    l->addWidget(box);
    return w;
}

}  // namespace

ParameterPanel::ParameterPanel(QWidget* parent) : QWidget(parent) {
    m_undo = new QUndoStack(this);
    m_debounce.setSingleShot(true);
    m_debounce.setInterval(kDebounceMs);
    connect(&m_debounce, &QTimer::timeout, this, [this] { Q_EMIT paramsChanged(m_state); });
    buildUi();
    writeWidgets(m_state);
    updateEnabled();
}

void ParameterPanel::buildUi() {
    auto* form = new QFormLayout;
    m_form = form;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setLabelAlignment(Qt::AlignRight);

    m_preset = new QComboBox;
    m_preset->setObjectName("presetCombo");
    m_preset->addItem("Custom");
    for (const auto& p : presets()) {
        m_preset->addItem(p.name);
        m_preset->setItemData(m_preset->count() - 1, p.tip, Qt::ToolTipRole);
    }
    form->addRow("Preset", m_preset);

    m_policy = new QComboBox;
    m_policy->setObjectName("policyCombo");
    m_policy->addItems(policyNames());
    // One line per row of core's policy table, on the list and on each entry.
    QStringList tips;
    for (const auto& row : snapkv::kPolicyTable) {
        tips << QString("%1: %2").arg(QString::fromLatin1(row.name), QString::fromLatin1(row.summary));
        m_policy->setItemData(static_cast<int>(row.id), QString::fromLatin1(row.summary), Qt::ToolTipRole);
    }
    m_policy->setToolTip(tips.join("\n"));
    form->addRow("Policy", m_policy);

    m_windowSlider = new QSlider(Qt::Horizontal);
    m_window = new QSpinBox;
    m_window->setObjectName("windowSpin");
    m_window->setToolTip("W: the last W prompt tokens vote and are always kept");
    form->addRow("Window W", sliderRow(m_windowSlider, m_window));

    m_kernel = new QSpinBox;
    m_kernel->setObjectName("kernelSpin");
    m_kernel->setRange(1, 63);
    m_kernel->setSingleStep(2);
    m_kernel->setToolTip("K: pooling kernel (odd); neighbours of a strong key are kept with it");
    form->addRow("Kernel K", m_kernel);

    m_pooling = new QComboBox;
    m_pooling->setObjectName("poolingCombo");
    m_pooling->addItems(poolingNames());
    form->addRow("Pooling", m_pooling);

    m_budgetMode = new QComboBox;
    m_budgetMode->setObjectName("budgetModeCombo");
    m_budgetMode->addItems({"tokens per head (C)", "compression ratio"});
    form->addRow("Budget as", m_budgetMode);

    m_budgetSlider = new QSlider(Qt::Horizontal);
    m_budget = new QSpinBox;
    m_budget->setObjectName("budgetSpin");
    m_budget->setToolTip("C: tokens kept per head, window included");
    m_budgetRow = sliderRow(m_budgetSlider, m_budget);
    form->addRow("Budget C", m_budgetRow);

    m_ratioSlider = new QSlider(Qt::Horizontal);
    m_ratioSlider->setRange(0, 99);
    m_ratio = new QDoubleSpinBox;
    m_ratio->setObjectName("ratioSpin");
    m_ratio->setRange(0.0, 0.99);
    m_ratio->setSingleStep(0.05);
    m_ratio->setDecimals(2);
    m_ratio->setToolTip("kvpress form: share of the prompt's tokens evicted");
    m_ratioRow = sliderRow(m_ratioSlider, m_ratio);
    form->addRow("Ratio", m_ratioRow);

    m_gqa = new QComboBox;
    m_gqa->setObjectName("gqaCombo");
    m_gqa->addItem("per query head (official)");
    m_gqa->addItem("per KV head (kvpress)");
    m_gqa->setToolTip(
        "Grouped-query attention: select per query head (keys repeated; on a GQA model each query "
        "head stores its own kept tokens, so the cache can grow) or once per KV group (the cache "
        "shrinks)");
    form->addRow("GQA", m_gqa);

    m_tieBreak = new QComboBox;
    m_tieBreak->setObjectName("tieBreakCombo");
    m_tieBreak->addItem("later position first (official)");
    m_tieBreak->addItem("earlier position first");
    m_tieBreak->setToolTip(
        "Max pooling gives runs of up to K positions the same score; at the budget's edge the "
        "top-k keeps the later (as torch.topk did in the official code) or the earlier ones");
    form->addRow("Ties", m_tieBreak);

    m_query = new QComboBox;
    m_query->setObjectName("queryCombo");
    m_query->addItem("query-aware (question in window)");
    m_query->addItem("query-agnostic (context only)");
    form->addRow("Selection", m_query);

    m_hit = new QDoubleSpinBox;
    m_hit->setObjectName("hitSpin");
    m_hit->setRange(0.001, 1.0);
    m_hit->setDecimals(3);
    m_hit->setSingleStep(0.01);
    m_hit->setToolTip("θ: a position is important for a generated token if its attention exceeds θ (paper §4)");
    form->addRow("Hit threshold θ", m_hit);

    m_sink = new QSpinBox;
    m_sink->setObjectName("sinkSpin");
    m_sink->setRange(0, 64);
    m_sink->setToolTip("Sink tokens at the start (StreamingLLM keeps them; the sink-mass statistic counts them)");
    form->addRow("Sink tokens", m_sink);

    // Compression while generating: used by the next Compare (no new prefill needed).
    m_decodeBudget = new QSpinBox;
    m_decodeBudget->setObjectName("decodeBudgetSpin");
    m_decodeBudget->setRange(0, 1 << 20);
    m_decodeBudget->setSpecialValueText("off");
    m_decodeBudget->setToolTip(
        "Compress while generating: every interval, the policy chooses again over the whole cache (prompt "
        "positions still kept and generated tokens) down to this many tokens per head, the last W generated "
        "tokens as its window (kvpress DecodingPress). Used by the next Compare; 0 = off");
    form->addRow("Decoding budget", m_decodeBudget);
    m_decodeInterval = new QSpinBox;
    m_decodeInterval->setObjectName("decodeIntervalSpin");
    m_decodeInterval->setRange(1, 1 << 20);
    m_decodeInterval->setToolTip("Generated tokens between decoding compression events (at least the window W)");
    form->addRow("Decoding interval", m_decodeInterval);
    m_prefill = new QCheckBox("Compress the prompt at prefill");
    m_prefill->setObjectName("prefillCheck");
    m_prefill->setToolTip("Off: the compressed run starts from the full cache and only decoding compression applies");
    form->addRow("", m_prefill);

    auto* undoRow = new QHBoxLayout;
    auto* undoBtn = new QToolButton;
    undoBtn->setDefaultAction(m_undo->createUndoAction(this, "Undo"));
    undoBtn->defaultAction()->setIcon(style()->standardIcon(QStyle::SP_ArrowBack));
    auto* redoBtn = new QToolButton;
    redoBtn->setDefaultAction(m_undo->createRedoAction(this, "Redo"));
    redoBtn->defaultAction()->setIcon(style()->standardIcon(QStyle::SP_ArrowForward));
    // The window's Edit menu owns the Ctrl+Z / Ctrl+Shift+Z shortcuts; two actions with the same
    // shortcut would make both ambiguous.
    for (QToolButton* b : {undoBtn, redoBtn}) {
        b->defaultAction()->setShortcuts({});
        b->defaultAction()->setIconText(b == undoBtn ? "Undo" : "Redo");
        b->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    }
    undoRow->addWidget(undoBtn);
    undoRow->addWidget(redoBtn);
    undoRow->addStretch(1);

    m_summary = new QLabel;
    m_summary->setWordWrap(true);
    m_summary->setStyleSheet("color:#555");
    m_cache = new QLabel;
    m_cache->setObjectName("cacheReport");
    m_cache->setWordWrap(true);
    m_cache->setTextFormat(Qt::RichText);
    m_cache->hide();

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addLayout(form);
    layout->addLayout(undoRow);
    layout->addWidget(m_summary);
    layout->addWidget(m_cache);
    layout->addStretch(1);

    setLimits(128, 8192);

    connect(m_preset, qOverload<int>(&QComboBox::activated), this, &ParameterPanel::onPreset);
    auto onCombo = [this](QComboBox* c, Field f) {
        connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, [this, f] { onWidgetEdited(f); });
    };
    onCombo(m_policy, FPolicy);
    onCombo(m_pooling, FPooling);
    onCombo(m_budgetMode, FBudgetMode);
    onCombo(m_gqa, FGqa);
    onCombo(m_tieBreak, FTieBreak);
    onCombo(m_query, FQuery);
    // Slider and spin box mirror each other; the spin box is the source of truth.
    connect(m_windowSlider, &QSlider::valueChanged, m_window, &QSpinBox::setValue);
    connect(m_window, qOverload<int>(&QSpinBox::valueChanged), m_windowSlider, &QSlider::setValue);
    connect(m_budgetSlider, &QSlider::valueChanged, m_budget, &QSpinBox::setValue);
    connect(m_budget, qOverload<int>(&QSpinBox::valueChanged), m_budgetSlider, &QSlider::setValue);
    connect(m_ratioSlider, &QSlider::valueChanged, this, [this](int v) { m_ratio->setValue(v / 100.0); });
    connect(m_ratio, qOverload<double>(&QDoubleSpinBox::valueChanged), this,
            [this](double v) { m_ratioSlider->setValue(static_cast<int>(std::lround(v * 100))); });
    connect(m_window, qOverload<int>(&QSpinBox::valueChanged), this, [this] { onWidgetEdited(FWindow); });
    connect(m_budget, qOverload<int>(&QSpinBox::valueChanged), this, [this] { onWidgetEdited(FBudget); });
    connect(m_ratio, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this] { onWidgetEdited(FRatio); });
    connect(m_kernel, qOverload<int>(&QSpinBox::valueChanged), this, [this] { onWidgetEdited(FKernel); });
    connect(m_hit, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this] { onWidgetEdited(FHit); });
    connect(m_sink, qOverload<int>(&QSpinBox::valueChanged), this, [this] { onWidgetEdited(FSink); });
    connect(m_decodeBudget, qOverload<int>(&QSpinBox::valueChanged), this, [this] { onWidgetEdited(FDecodeBudget); });
    connect(m_decodeInterval, qOverload<int>(&QSpinBox::valueChanged), this,
            [this] { onWidgetEdited(FDecodeInterval); });
    connect(m_prefill, &QCheckBox::toggled, this, [this] { onWidgetEdited(FPrefill); });
}

void ParameterPanel::setLimits(int64_t maxWindow, int64_t nTokens) {
    m_writing = true;
    const int w = static_cast<int>(std::max<int64_t>(1, maxWindow));
    const int c = static_cast<int>(std::max<int64_t>(2, std::max<int64_t>(nTokens, m_state.sel.budget)));
    m_windowSlider->setRange(1, w);
    m_window->setRange(1, w);
    m_budgetSlider->setRange(2, c);
    m_budget->setRange(2, std::max(c, 65536));
    m_budgetSlider->setPageStep(std::max(1, c / 20));
    m_writing = false;
    writeWidgets(m_state);
}

ParamState ParameterPanel::readWidgets() const {
    ParamState s = m_state;
    s.sel.policy = static_cast<snapkv::Policy>(m_policy->currentIndex());
    s.sel.window = m_window->value();
    // Pooling kernels are odd (same padding); an even entry rounds up.
    s.sel.kernel = m_kernel->value() | 1;
    s.sel.pooling = static_cast<snapkv::Pooling>(m_pooling->currentIndex());
    s.useRatio = m_budgetMode->currentIndex() == 1;
    s.sel.budget = m_budget->value();
    s.ratio = m_ratio->value();
    s.sel.gqa = m_gqa->currentIndex() == 1 ? snapkv::GqaMode::KvHead : snapkv::GqaMode::QueryHead;
    s.sel.tie_break = m_tieBreak->currentIndex() == 1 ? snapkv::TieBreak::Earlier : snapkv::TieBreak::Later;
    s.queryAgnostic = m_query->currentIndex() == 1;
    s.hitThreshold = m_hit->value();
    s.sel.n_sink = m_sink->value();
    s.decodeBudget = m_decodeBudget->value();
    s.decodeInterval = m_decodeInterval->value();
    s.compressPrefill = m_prefill->isChecked();
    return s;
}

void ParameterPanel::writeWidgets(const ParamState& s) {
    m_writing = true;
    const QList<QWidget*> all = {m_policy,       m_windowSlider,   m_window, m_kernel,      m_pooling,
                                 m_budgetMode,   m_budgetSlider,   m_budget, m_ratioSlider, m_ratio,
                                 m_gqa,          m_tieBreak,       m_query,  m_hit,         m_sink,
                                 m_decodeBudget, m_decodeInterval, m_prefill};
    for (QWidget* w : all) w->blockSignals(true);
    m_policy->setCurrentIndex(static_cast<int>(s.sel.policy));
    m_window->setValue(static_cast<int>(s.sel.window));
    m_windowSlider->setValue(static_cast<int>(s.sel.window));
    m_kernel->setValue(static_cast<int>(s.sel.kernel));
    m_pooling->setCurrentIndex(static_cast<int>(s.sel.pooling));
    m_budgetMode->setCurrentIndex(s.useRatio ? 1 : 0);
    m_budget->setValue(static_cast<int>(s.sel.budget));
    m_budgetSlider->setValue(static_cast<int>(s.sel.budget));
    m_ratio->setValue(s.ratio);
    m_ratioSlider->setValue(static_cast<int>(std::lround(s.ratio * 100)));
    m_gqa->setCurrentIndex(s.sel.gqa == snapkv::GqaMode::KvHead ? 1 : 0);
    m_tieBreak->setCurrentIndex(s.sel.tie_break == snapkv::TieBreak::Earlier ? 1 : 0);
    m_query->setCurrentIndex(s.queryAgnostic ? 1 : 0);
    m_hit->setValue(s.hitThreshold);
    m_sink->setValue(static_cast<int>(s.sel.n_sink));
    m_decodeBudget->setValue(static_cast<int>(s.decodeBudget));
    m_decodeInterval->setValue(static_cast<int>(s.decodeInterval));
    m_prefill->setChecked(s.compressPrefill);
    for (QWidget* w : all) w->blockSignals(false);
    m_writing = false;
}

void ParameterPanel::showMatchingPreset() {
    // "Custom" unless the state equals a preset (the choices presets leave alone aside).
    int match = 0;
    const auto ps = presets();
    for (int i = 0; i < ps.size(); ++i) {
        ParamState p = ps[i].state;
        p.queryAgnostic = m_state.queryAgnostic;
        p.hitThreshold = m_state.hitThreshold;
        p.sel.n_sink = m_state.sel.n_sink;
        p.sel.policy = m_state.sel.policy;
        p.decodeBudget = m_state.decodeBudget;
        p.decodeInterval = m_state.decodeInterval;
        p.compressPrefill = m_state.compressPrefill;
        if (p == m_state && m_state.sel.policy == snapkv::Policy::SnapKV) match = i + 1;
    }
    m_preset->setCurrentIndex(match);
}

void ParameterPanel::updateEnabled() {
    // Controls the policy does not read are disabled (core's policy table says which).
    const snapkv::PolicyInfo& info = snapkv::policy_info(m_state.sel.policy);
    m_kernel->setEnabled(info.pools() && m_state.sel.pooling != snapkv::Pooling::None);
    m_pooling->setEnabled(info.pools());
    m_tieBreak->setEnabled(info.uses_ties());
    m_window->setEnabled(info.reads_param(snapkv::kReadsWindow));
    m_windowSlider->setEnabled(info.reads_param(snapkv::kReadsWindow));
    m_form->setRowVisible(m_budgetRow, !m_state.useRatio);
    m_form->setRowVisible(m_ratioRow, m_state.useRatio);
    m_decodeInterval->setEnabled(m_state.decodeBudget > 0);
    m_summary->setText(m_state.summary());
    showMatchingPreset();
}

void ParameterPanel::onWidgetEdited(Field field) {
    if (m_writing) return;
    const ParamState next = readWidgets();
    if (next == m_state) return;
    m_undo->push(new ParamCommand(this, m_state, next, field));
}

void ParameterPanel::onPreset(int index) {
    if (index <= 0) return;
    ParamState next = presets().at(index - 1).state;
    next.queryAgnostic = m_state.queryAgnostic;
    next.hitThreshold = m_state.hitThreshold;
    next.sel.n_sink = m_state.sel.n_sink;
    next.decodeBudget = m_state.decodeBudget;
    next.decodeInterval = m_state.decodeInterval;
    next.compressPrefill = m_state.compressPrefill;
    if (next == m_state) return;
    m_undo->push(new ParamCommand(this, m_state, next, FPreset));
}

void ParameterPanel::applyState(const ParamState& s) {
    m_state = s;
    if (readWidgets() != s) writeWidgets(s);
    updateEnabled();
    if (!m_debounce.isActive()) {
        m_firstEdit.start();
        m_debounce.start();
    }
}

void ParameterPanel::setState(const ParamState& s, bool announce) {
    m_state = s;
    writeWidgets(s);
    updateEnabled();
    m_undo->clear();
    if (announce) {
        m_firstEdit.start();
        m_debounce.start();
    }
}

double ParameterPanel::msSinceFirstEdit() const {
    return m_firstEdit.isValid() ? m_firstEdit.nsecsElapsed() / 1e6 : 0.0;
}

void ParameterPanel::flush() {
    if (!m_debounce.isActive()) return;
    m_debounce.stop();
    Q_EMIT paramsChanged(m_state);
}

void ParameterPanel::edit(Field field, double value) {
    const int v = static_cast<int>(std::lround(value));
    switch (field) {
    case FPolicy: m_policy->setCurrentIndex(v); break;
    case FWindow: m_window->setValue(v); break;
    case FKernel: m_kernel->setValue(v); break;
    case FPooling: m_pooling->setCurrentIndex(v); break;
    case FBudgetMode: m_budgetMode->setCurrentIndex(v); break;
    case FBudget: m_budget->setValue(v); break;
    case FRatio: m_ratio->setValue(value); break;
    case FGqa: m_gqa->setCurrentIndex(v); break;
    case FTieBreak: m_tieBreak->setCurrentIndex(v); break;
    case FQuery: m_query->setCurrentIndex(v); break;
    case FHit: m_hit->setValue(value); break;
    case FSink: m_sink->setValue(v); break;
    case FPreset:
        m_preset->setCurrentIndex(v);
        onPreset(v);
        break;
    }
}

void ParameterPanel::setCacheReport(qint64 bytesFull, qint64 bytesKept, const QString& growthNote) {
    if (bytesFull <= 0) {
        m_cache->clear();
        m_cache->hide();
        return;
    }
    // The unit follows the size, so tiny models do not read "0.0 MiB kept".
    auto mib = [](qint64 b) { return QString::fromStdString(snapkv::format_bytes(b)); };
    const double ratio = bytesKept > 0 ? double(bytesFull) / double(bytesKept) : 0.0;
    QString text = QString("<b>KV cache</b> %1 full &rarr; %2 kept").arg(mib(bytesFull), mib(bytesKept));
    if (bytesKept > bytesFull) {
        text +=
            QString(" <b style='color:#b3261e'>(%1x larger)</b>").arg(double(bytesKept) / double(bytesFull), 0, 'f', 2);
        if (!growthNote.isEmpty()) {
            QString why = growthNote.toHtmlEscaped();
            why[0] = why[0].toUpper();
            text += "<br><span style='color:#b3261e'>" + why + ".</span>";
        }
    } else if (bytesKept == bytesFull) {
        text += " (nothing evicted)";
    } else {
        text += QString(" (%1x smaller)").arg(ratio, 0, 'f', 2);
    }
    m_cache->setText(text);
    m_cache->show();
}

QString ParameterPanel::cacheReport() const { return m_cache->text(); }

}  // namespace studio
