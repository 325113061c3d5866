// The Display dock's widget: colour map, linear/log scale, per-row normalisation, fixed or auto
// colour range, and "hide the first k sink tokens and renormalise". It edits AnalysisState's
// DisplaySettings (the plain value, state/display_settings.h) directly; display changes never
// touch the session.
#pragma once

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QSpinBox;

namespace studio {

class AnalysisState;

class DisplayPanel : public QWidget {
    Q_OBJECT
public:
    explicit DisplayPanel(AnalysisState* state, QWidget* parent = nullptr);

private:
    void sync();
    void commit();

    AnalysisState* m_state;
    QComboBox* m_colorMap;
    QComboBox* m_scale;
    QCheckBox* m_rowNorm;
    QComboBox* m_range;
    QDoubleSpinBox* m_min;
    QDoubleSpinBox* m_max;
    QSpinBox* m_sinks;
    bool m_syncing = false;
};

}  // namespace studio
