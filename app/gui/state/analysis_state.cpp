// AnalysisState: setters that keep the held values consistent and announce what changed.
#include "app/gui/state/analysis_state.h"

#include <algorithm>

namespace studio {

AnalysisState::AnalysisState(QObject* parent) : QObject(parent) {}

void AnalysisState::setModel(const snapkv::ModelInfo& info) { replaceModel(info); }

void AnalysisState::clearModel() { replaceModel(std::nullopt); }

void AnalysisState::replaceModel(std::optional<snapkv::ModelInfo> info) {
    m_model = std::move(info);
    m_prefill.reset();
    m_marks.clear();
    m_retune.reset();
    m_attention.reset();
    m_compare.reset();
    clearPreview();
    Q_EMIT modelChanged();
    Q_EMIT prefillChanged();
    Q_EMIT selectionChanged();
    Q_EMIT attentionChanged();
    Q_EMIT comparisonChanged();
}

void AnalysisState::setPrefill(const snapkv::PrefillSummary& summary) {
    m_prefill = summary;
    m_marks.clear();
    m_retune.reset();
    m_attention.reset();
    m_compare.reset();
    Q_EMIT prefillChanged();
    Q_EMIT selectionChanged();
    Q_EMIT attentionChanged();
    Q_EMIT comparisonChanged();
}

void AnalysisState::setRetune(const RetunePtr& result, const ParamState& params) {
    m_retune = result;
    m_params = params;
    clearPreview();  // the committed result replaces the running prefill's layers
    // Keep the focus inside the new shape (kv-head mode has fewer heads).
    const int l = std::clamp(m_layer, 0, std::max(nLayers() - 1, 0));
    const int h = std::clamp(m_head, 0, std::max(nHeads() - 1, 0));
    const bool moved = l != m_layer || h != m_head;
    m_layer = l;
    m_head = h;
    Q_EMIT selectionChanged();
    if (moved) Q_EMIT focusChanged(m_layer, m_head);
    if (result && result->attention) setAttention(result->attention);
}

void AnalysisState::clearPreview() {
    if (!hasPreview()) return;
    m_preview = snapkv::Selection{};
    m_previewValid = false;
    m_previewOther.reset();
    m_previewDone = m_previewTotal = 0;
    m_previewMs = 0;
    Q_EMIT previewChanged();
}

void AnalysisState::setLayerPreview(const LayerPreviewPtr& layer) {
    if (!layer) {
        clearPreview();
        return;
    }
    const snapkv::PrefillLayerPreview& step = layer->step;
    // Layers arrive in order from 0; a layer 0 is a new prefill (a previous one may have been cancelled).
    if (step.layer == 0 || step.layer != m_previewDone) {
        m_preview = snapkv::Selection{};
        m_preview.params = layer->params;
        m_preview.n_tokens = step.n_tokens;
        m_previewValid = true;
        m_previewOther.reset();
        if (layer->other) {
            m_previewOther.emplace();
            m_previewOther->params = *layer->other;
            m_previewOther->n_tokens = step.n_tokens;
        }
        m_previewDone = 0;
        if (step.layer != 0) {  // a layer was missed: nothing of this prefill can be shown
            m_previewValid = false;
            m_previewOther.reset();
        }
    }
    const auto& sels = step.selections;
    if (m_previewValid && !sels.empty() && sels[0]) m_preview.layers.push_back(*sels[0]);
    else m_previewValid = false;
    if (m_previewOther && sels.size() > 1 && sels[1]) m_previewOther->layers.push_back(*sels[1]);
    else m_previewOther.reset();
    m_previewDone = static_cast<int>(step.layer) + 1;
    m_previewTotal = static_cast<int>(step.n_layer);
    m_previewMs = step.elapsed_ms;
    Q_EMIT previewChanged();
}

void AnalysisState::setAttention(const AttentionPtr& rows) {
    m_attention = rows;
    Q_EMIT attentionChanged();
}

void AnalysisState::setComparison(const ComparePtr& result) {
    m_compare = result;
    Q_EMIT comparisonChanged();
}

void AnalysisState::setMarkedSpan(int64_t first, int64_t last, const QString& label) {
    setMarkedSpans({MarkedSpan{first, last, label}});
}

void AnalysisState::setMarkedSpans(std::vector<MarkedSpan> spans) {
    const auto empty = [](const MarkedSpan& s) { return s.first < 0 || s.last <= s.first; };
    spans.erase(std::remove_if(spans.begin(), spans.end(), empty), spans.end());
    m_marks = std::move(spans);
    Q_EMIT markChanged();
}

const AnalysisState::MarkedSpan* AnalysisState::markAt(int64_t i) const {
    const MarkedSpan* hit = nullptr;
    for (const auto& s : m_marks)
        if (i >= s.first && i < s.last) hit = &s;
    return hit;
}

void AnalysisState::setFocus(int layer, int head) {
    layer = std::clamp(layer, 0, std::max(nLayers() - 1, 0));
    head = std::clamp(head, 0, std::max(nHeads() - 1, 0));
    if (layer == m_layer && head == m_head) return;
    m_layer = layer;
    m_head = head;
    Q_EMIT focusChanged(m_layer, m_head);
}

int AnalysisState::nLayers() const {
    if (const auto* s = selection()) return static_cast<int>(s->layers.size());
    return m_model ? static_cast<int>(m_model->config.n_layer) : 0;
}

int AnalysisState::nHeads() const {
    if (const auto* s = selection(); s && !s->layers.empty()) return static_cast<int>(s->layers.front().heads.size());
    return m_model ? static_cast<int>(m_model->config.n_head) : 0;
}

const snapkv::LayerSelection* AnalysisState::focusedLayer() const {
    const auto* s = selection();
    if (!s || m_layer < 0 || m_layer >= static_cast<int>(s->layers.size())) return nullptr;
    return &s->layers[m_layer];
}

const snapkv::HeadSelection* AnalysisState::focusedHead() const {
    const auto* l = focusedLayer();
    if (!l || m_head < 0 || m_head >= static_cast<int>(l->heads.size())) return nullptr;
    return &l->heads[m_head];
}

void AnalysisState::setDisplay(const DisplaySettings& d) {
    if (d == m_display) return;
    m_display = d;
    Q_EMIT displayChanged();
}

}  // namespace studio
