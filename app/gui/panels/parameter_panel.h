// The live-tuning panel: policy, window, kernel, pooling, budget (tokens or ratio), GQA mode, tie
// break, query-aware vs query-agnostic, hit-rate threshold, sink count; presets; the KV cache the
// selection keeps (and why, when it grows); undo/redo through a
// QUndoStack (one drag of one control is one step). Edits are throttled (the newest state every
// 120 ms during a drag) and announced with paramsChanged; the panel never talks to the session.
#pragma once

#include <QElapsedTimer>
#include <QTimer>
#include <QWidget>

#include "app/gui/state/param_state.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSlider;
class QSpinBox;
class QUndoStack;
class QAction;
class QFormLayout;

namespace studio {

class ParameterPanel : public QWidget {
    Q_OBJECT
public:
    // Which control an edit came from: consecutive edits of the same one merge in the undo stack.
    enum Field {
        FPolicy = 1,
        FWindow,
        FKernel,
        FPooling,
        FBudgetMode,
        FBudget,
        FRatio,
        FGqa,
        FQuery,
        FHit,
        FSink,
        FPreset,
        FTieBreak,
        FDecodeBudget,
        FDecodeInterval,
        FPrefill
    };

    explicit ParameterPanel(QWidget* parent = nullptr);

    const ParamState& state() const { return m_state; }
    // Replace the state without an undo step (session load, settings restore).
    void setState(const ParamState& s, bool announce = true);
    // Bounds from the prefill: windows up to the captured maximum, budgets up to the prompt length.
    void setLimits(int64_t maxWindow, int64_t nTokens);
    QUndoStack* undoStack() const { return m_undo; }
    int debounceMs() const { return m_debounce.interval(); }
    void setDebounceMs(int ms) { m_debounce.setInterval(ms); }
    // Milliseconds since the first edit not yet announced (for the slider-to-repaint timing).
    double msSinceFirstEdit() const;
    // Flush a pending debounced change right away (tests, headless).
    void flush();

    // Programmatic edits as if the user moved a control (tests, walkthrough); one undo step each.
    void edit(Field field, double value);

    // Pushed by the undo command; applies a state to the widgets and schedules an announcement.
    void applyState(const ParamState& s);

    // The KV cache the current selection keeps, next to the parameters that decide it: full and
    // kept bytes, and when the kept cache is the larger one, the reason (core's cache_growth_note).
    // bytesFull <= 0 clears it (nothing selected yet).
    void setCacheReport(qint64 bytesFull, qint64 bytesKept, const QString& growthNote);
    QString cacheReport() const;

Q_SIGNALS:
    void paramsChanged(const studio::ParamState& state);

private:
    void buildUi();
    void onWidgetEdited(Field field);
    ParamState readWidgets() const;
    void writeWidgets(const ParamState& s);
    void updateEnabled();
    void showMatchingPreset();
    void onPreset(int index);

    ParamState m_state;
    QUndoStack* m_undo;
    QTimer m_debounce;
    QElapsedTimer m_firstEdit;
    bool m_writing = false;

    QComboBox* m_preset;
    QComboBox* m_policy;
    QSlider* m_windowSlider;
    QSpinBox* m_window;
    QSpinBox* m_kernel;
    QComboBox* m_pooling;
    QComboBox* m_budgetMode;
    QSlider* m_budgetSlider;
    QSpinBox* m_budget;
    QSlider* m_ratioSlider;
    QDoubleSpinBox* m_ratio;
    QComboBox* m_gqa;
    QComboBox* m_tieBreak;
    QComboBox* m_query;
    QDoubleSpinBox* m_hit;
    QSpinBox* m_sink;
    QSpinBox* m_decodeBudget;  // 0 shows "off"
    QSpinBox* m_decodeInterval;
    QCheckBox* m_prefill;  // compress the prompt at prefill
    QLabel* m_summary;
    QLabel* m_cache;
    QFormLayout* m_form;
    QWidget* m_budgetRow;
    QWidget* m_ratioRow;
};

}  // namespace studio
