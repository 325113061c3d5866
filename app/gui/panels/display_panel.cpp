// DisplayPanel: a form over DisplaySettings.
#include "app/gui/panels/display_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>

#include "app/gui/state/analysis_state.h"

namespace studio {

DisplayPanel::DisplayPanel(AnalysisState* state, QWidget* parent) : QWidget(parent), m_state(state) {
    auto* form = new QFormLayout(this);
    form->setContentsMargins(6, 6, 6, 6);
    form->setLabelAlignment(Qt::AlignRight);
    m_colorMap = new QComboBox;
    m_colorMap->setObjectName("colorMapCombo");
    m_colorMap->addItems({"viridis", "cividis (colour-blind safe)", "greys"});
    form->addRow("Colour map", m_colorMap);
    m_scale = new QComboBox;
    m_scale->setObjectName("scaleCombo");
    m_scale->addItems({"linear", "logarithmic"});
    form->addRow("Scale", m_scale);
    m_rowNorm = new QCheckBox("divide each window row by its maximum");
    m_rowNorm->setObjectName("rowNormCheck");
    form->addRow("Rows", m_rowNorm);
    m_range = new QComboBox;
    m_range->setObjectName("rangeCombo");
    m_range->addItems({"auto (data range)", "fixed"});
    form->addRow("Colour range", m_range);
    auto* minmax = new QWidget;
    auto* mm = new QHBoxLayout(minmax);
    mm->setContentsMargins(0, 0, 0, 0);
    m_min = new QDoubleSpinBox;
    m_max = new QDoubleSpinBox;
    for (QDoubleSpinBox* b : {m_min, m_max}) {
        b->setDecimals(5);
        b->setRange(0.0, 100.0);
        b->setSingleStep(0.01);
    }
    mm->addWidget(m_min);
    mm->addWidget(new QLabel("to"));
    mm->addWidget(m_max);
    form->addRow("Fixed range", minmax);
    m_sinks = new QSpinBox;
    m_sinks->setObjectName("hideSinksSpin");
    m_sinks->setRange(0, 64);
    m_sinks->setToolTip(
        "Attention sinks (the first tokens) take most of the attention in LLMs and wash out the "
        "rest of a heatmap: hide the first k keys and renormalise each row over the others.");
    form->addRow("Hide first k sinks", m_sinks);

    sync();
    connect(m_state, &AnalysisState::displayChanged, this, &DisplayPanel::sync);
    connect(m_colorMap, qOverload<int>(&QComboBox::currentIndexChanged), this, &DisplayPanel::commit);
    connect(m_scale, qOverload<int>(&QComboBox::currentIndexChanged), this, &DisplayPanel::commit);
    connect(m_range, qOverload<int>(&QComboBox::currentIndexChanged), this, &DisplayPanel::commit);
    connect(m_rowNorm, &QCheckBox::toggled, this, &DisplayPanel::commit);
    connect(m_min, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &DisplayPanel::commit);
    connect(m_max, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &DisplayPanel::commit);
    connect(m_sinks, qOverload<int>(&QSpinBox::valueChanged), this, &DisplayPanel::commit);
}

void DisplayPanel::sync() {
    m_syncing = true;
    const auto& d = m_state->display();
    m_colorMap->setCurrentIndex(static_cast<int>(d.colorMap));
    m_scale->setCurrentIndex(d.logScale ? 1 : 0);
    m_rowNorm->setChecked(d.rowNormalise);
    m_range->setCurrentIndex(d.fixedRange ? 1 : 0);
    m_min->setValue(d.rangeMin);
    m_max->setValue(d.rangeMax);
    m_min->setEnabled(d.fixedRange);
    m_max->setEnabled(d.fixedRange);
    m_sinks->setValue(d.hideSinks);
    m_syncing = false;
}

void DisplayPanel::commit() {
    if (m_syncing) return;
    DisplaySettings d = m_state->display();
    d.colorMap = static_cast<ColorMapKind>(m_colorMap->currentIndex());
    d.logScale = m_scale->currentIndex() == 1;
    d.rowNormalise = m_rowNorm->isChecked();
    d.fixedRange = m_range->currentIndex() == 1;
    d.rangeMin = m_min->value();
    d.rangeMax = m_max->value();
    d.hideSinks = m_sinks->value();
    m_state->setDisplay(d);
}

}  // namespace studio
