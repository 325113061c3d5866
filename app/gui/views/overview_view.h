// View 1: the layer x head grid, one cell per head coloured by a chosen statistic (kept attention
// mass, hit rate, vote entropy, sink mass, overlap with another policy). Hover previews the values,
// a click focuses the head in every view, arrow keys move the focus. Reads AnalysisState only.
#pragma once

#include <QStringList>

#include <vector>

#include "app/gui/views/lazy_view.h"

class QComboBox;
class QLabel;
class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QCPItemRect;
class QMouseEvent;

namespace snapkv {
struct Selection;
}

namespace studio {

class AnalysisState;

class OverviewView : public LazyView {
    Q_OBJECT
public:
    explicit OverviewView(AnalysisState* state, QWidget* parent = nullptr);

    QCustomPlot* plot() const { return m_plot; }
    // The values drawn: [layer][head], NaN where undefined.
    const std::vector<std::vector<double>>& grid() const { return m_grid; }
    // While a prefill runs: the rows of layers not finished yet (greyed, NaN in grid()) and the
    // caption over them ("layer 5 running · 5 of 16 layers done", layers counted from 0 as on the axis); 0 and empty otherwise.
    int pendingRows() const { return m_pendingRows; }
    QString pendingText() const { return m_pendingText; }
    // Walkthrough emphasis: outline the focused cell more strongly.
    void setHighlight(bool on);

protected:
    void refresh() override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void onStatChosen(int index);
    void onOtherPolicyChosen(int index);
    bool cellAt(const QPoint& pos, int* layer, int* head) const;
    // The selection drawn: the running prefill's finished layers, else the committed one.
    const snapkv::Selection* shownSelection() const;
    int shownHeads() const;  // selection heads per layer of shownSelection()
    int selectionHeadOf(int gridHead) const;
    int gridHeadOf(int selectionHead) const;
    QString describe(int layer, int head) const;
    void syncControls();
    // Sets the axes' tick labels for the current cell size (setCellLabels); false when unchanged.
    bool updateTickLabels();

    AnalysisState* m_state;
    QComboBox* m_stat;
    QComboBox* m_otherPolicy;
    QLabel* m_info;
    QCustomPlot* m_plot;
    QCPColorMap* m_map;
    QCPColorScale* m_scale;
    QCPItemRect* m_cursor;
    std::vector<std::vector<double>> m_grid;
    QStringList m_rowLabels;     // [n_layer]
    QStringList m_columnLabels;  // [columns]
    bool m_highlight = false;
    int m_pendingRows = 0;
    QString m_pendingText;
};

}  // namespace studio
