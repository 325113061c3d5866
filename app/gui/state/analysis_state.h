// The values the views show, held on the GUI thread: model info, prefill summary, the current
// selection (and the one of the overlap policy), the focused head's attention rows, the last
// comparison, the focused (layer, head), the display settings, and while a prefill runs the layers
// it has finished (a partial selection, so the overview fills in layer by layer). Views read it
// through the small accessors below and listen to its change signals; it computes nothing and
// calls no session.
#pragma once

#include <QObject>

#include <optional>
#include <vector>

#include "app/gui/state/display_settings.h"
#include "app/gui/state/gui_types.h"
#include "app/gui/state/param_state.h"

namespace studio {

// One layer of a running prefill as the worker hands it over: Session's PrefillLayerPreview and the
// parameters its selections were made with.
struct LayerPreview {
    snapkv::SelectionParams params;                // of step.selections[0]
    std::optional<snapkv::SelectionParams> other;  // of step.selections[1]: the overlap policy's
    snapkv::PrefillLayerPreview step;
};
using LayerPreviewPtr = std::shared_ptr<const LayerPreview>;

class AnalysisState : public QObject {
    Q_OBJECT
public:
    explicit AnalysisState(QObject* parent = nullptr);

    bool hasModel() const { return m_model.has_value(); }
    const snapkv::ModelInfo& model() const { return *m_model; }
    void setModel(const snapkv::ModelInfo& info);  // clears everything computed from the old model
    void clearModel();

    bool hasPrefill() const { return m_prefill.has_value(); }
    const snapkv::PrefillSummary& prefill() const { return *m_prefill; }
    void setPrefill(const snapkv::PrefillSummary& summary);  // clears selection and comparison

    // The selection and everything that came with it (retune result).
    const snapkv::Selection* selection() const { return m_retune ? m_retune->selection.get() : nullptr; }
    const snapkv::Selection* otherSelection() const { return m_retune ? m_retune->other.get() : nullptr; }
    const ParamState& params() const { return m_params; }  // the parameters of selection()
    RetunePtr retune() const { return m_retune; }
    void setRetune(const RetunePtr& result, const ParamState& params);

    // While a prefill runs: the layers it has finished, as a selection of layers [0, previewDone())
    // of previewTotal() with its params, n_tokens and layers only (null while its parameters
    // cannot be selected, e.g. a window wider than the capture). Before the prefill commits,
    // selection() still holds the previous prefill's result, which a cancelled or failed prefill
    // leaves in place.
    bool hasPreview() const { return m_previewTotal > 0; }
    const snapkv::Selection* previewSelection() const { return m_previewValid ? &m_preview : nullptr; }
    const snapkv::Selection* previewOther() const { return m_previewOther ? &*m_previewOther : nullptr; }
    int previewDone() const { return m_previewDone; }
    int previewTotal() const { return m_previewTotal; }
    double previewElapsedMs() const { return m_previewMs; }
    // A layer as it finishes (layer 0 starts a new preview); null: the prefill has ended, committed
    // or not, and the preview goes. setRetune and a new model end it too.
    void setLayerPreview(const LayerPreviewPtr& layer);

    const AttentionRows* attention() const { return m_attention.get(); }
    void setAttention(const AttentionPtr& rows);

    const snapkv::CompareResult* comparison() const { return m_compare.get(); }
    void setComparison(const ComparePtr& result);

    int layer() const { return m_layer; }
    int head() const { return m_head; }
    void setFocus(int layer, int head);  // clamped to the selection's shape
    int nLayers() const;
    int nHeads() const;  // selection heads per layer
    // The focused head's selection, or null.
    const snapkv::HeadSelection* focusedHead() const;
    const snapkv::LayerSelection* focusedLayer() const;

    const DisplaySettings& display() const { return m_display; }
    void setDisplay(const DisplaySettings& d);

    // Prompt tokens [first, last) to point out (an evaluation cell's needle; a RULER sample's
    // needles and the answers inside them). A new prefill or model clears them.
    struct MarkedSpan {
        int64_t first = -1;
        int64_t last = -1;
        QString label;  // "needle", "answer", ...
    };
    const std::vector<MarkedSpan>& markedSpans() const { return m_marks; }
    // The span holding token i (the last one given wins: answers are given after their needles), or null.
    const MarkedSpan* markAt(int64_t i) const;
    // The first span; -1 when none.
    int64_t markedFirst() const { return m_marks.empty() ? -1 : m_marks.front().first; }
    int64_t markedLast() const { return m_marks.empty() ? -1 : m_marks.front().last; }
    QString markedLabel() const { return m_marks.empty() ? QString() : m_marks.front().label; }
    void setMarkedSpan(int64_t first, int64_t last, const QString& label);
    void setMarkedSpans(std::vector<MarkedSpan> spans);  // empty spans are dropped

Q_SIGNALS:
    void modelChanged();
    void prefillChanged();
    void selectionChanged();
    void attentionChanged();
    void comparisonChanged();
    void focusChanged(int layer, int head);
    void displayChanged();
    void markChanged();
    void previewChanged();

private:
    void replaceModel(std::optional<snapkv::ModelInfo> info);  // set or clear, then announce all
    void clearPreview();                                       // announces previewChanged if one was held

    std::optional<snapkv::ModelInfo> m_model;
    std::optional<snapkv::PrefillSummary> m_prefill;
    RetunePtr m_retune;
    ParamState m_params;
    AttentionPtr m_attention;
    ComparePtr m_compare;
    int m_layer = 0;
    int m_head = 0;
    DisplaySettings m_display;
    std::vector<MarkedSpan> m_marks;
    snapkv::Selection m_preview;  // layers [0, m_previewDone) of a running prefill
    bool m_previewValid = false;
    std::optional<snapkv::Selection> m_previewOther;
    int m_previewDone = 0;
    int m_previewTotal = 0;
    double m_previewMs = 0;
};

}  // namespace studio

Q_DECLARE_METATYPE(studio::LayerPreviewPtr)
