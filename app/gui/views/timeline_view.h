// View 5: the compressed cache changing while the model writes. x = generation step, y = cache
// position (the prompt, then the generated tokens); each cell says whether the compressed cache
// holds that position after that step, for the focused layer and cache head or as the share of all
// layers' heads keeping it. Decoding compression events are marked; the full-cache run's attention
// of the next token is drawn over the cells, and where that token attends above the hit threshold θ
// to a position the compressed cache had already evicted, the cell is marked (the moment a needed
// token was gone). Below, aligned step by step, KL(full || compressed) and top-1 agreement. Hover
// names the token; a click opens a prompt token in the document view (generatedTokenClicked for the
// answer). Reads AnalysisState::comparison() (a Compare run records what it draws).
#pragma once

#include <QImage>
#include <vector>

#include "app/gui/views/lazy_view.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;
class QCustomPlot;
class QCPAxisRect;
class QMouseEvent;

namespace studio {

class AnalysisState;

class TimelineView : public LazyView {
    Q_OBJECT
public:
    // What a cell holds (cellState): not generated yet, kept, evicted, evicted while the next token
    // attends to it above θ in the full run.
    enum Cell { Future = 0, Kept = 1, Evicted = 2, NeededGone = 3 };

    explicit TimelineView(AnalysisState* state, QWidget* parent = nullptr);

    QCustomPlot* plot() const { return m_plot; }
    // Cells of the focused head: [position][step], after the last refresh (empty without data).
    int steps() const { return m_steps; }
    int positions() const { return m_positions; }
    Cell cellState(int step, int position) const;
    int neededGoneCount() const { return m_neededGone; }
    QString tooltipFor(int step, int position) const;
    void setFocusHead(int layer, int head);
    void setShareMode(bool share);
    // Rows: every position (false), or only the positions some step keeps plus the generated ones
    // (true, the default: a long prompt's evicted bulk leaves the picture).
    void setCompactRows(bool compact);
    int rows() const { return static_cast<int>(m_rowPositions.size()); }

Q_SIGNALS:
    void promptTokenClicked(qint64 position);
    void generatedTokenClicked(qint64 step);

protected:
    void refresh() override;

private:
    void rebuild();
    void onMouseMove(QMouseEvent* e);
    void onClick(QMouseEvent* e);
    bool cellAt(const QPointF& pixel, int* step, int* position) const;

    AnalysisState* m_state;
    QSpinBox* m_layer;
    QSpinBox* m_head;
    QComboBox* m_mode;
    QCheckBox* m_attention;
    QComboBox* m_rows;
    QLabel* m_summary;
    QCustomPlot* m_plot;
    QCPAxisRect* m_metricRect;
    QImage m_image;
    std::vector<uint8_t> m_cells;     // [position * steps + step]: Cell
    std::vector<float> m_share;       // share mode: [position * steps + step] kept share
    std::vector<int> m_rowPositions;  // image row (from the bottom) -> position
    int m_steps = 0;
    int m_positions = 0;
    int m_neededGone = 0;
};

}  // namespace studio
