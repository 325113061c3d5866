// View 2: one head in detail. Top: the observation-window x keys attention heatmap (rows = window
// queries, columns = key positions) with a colour legend; columns are max-downsampled to the
// pixels on screen and re-rendered for the visible range on zoom/scroll, so a single strong key
// never disappears even at 8K+ tokens. Bottom, on the same x axis: raw votes and pooled scores,
// kept positions, kept clusters shaded, the budget threshold and the always-kept window.
#pragma once

#include <vector>

#include "app/gui/views/lazy_view.h"

class QLabel;
class QPoint;
class QSpinBox;
class QWheelEvent;
class QCustomPlot;
class QCPAxisRect;
class QCPColorMap;
class QCPColorScale;
class QCPGraph;
class QCPItemRect;
class QCPItemStraightLine;
class QCPItemText;
class QCPRange;

namespace studio {

class AnalysisState;

enum class HeadHighlight { None, Window, Votes, Pooling, TopK };

class HeadView : public LazyView {
    Q_OBJECT
public:
    explicit HeadView(AnalysisState* state, QWidget* parent = nullptr);

    QCustomPlot* plot() const { return m_plot; }
    void setHighlight(HeadHighlight h);
    void resetZoom();

    // What is drawn, for tests and exports.
    int64_t heatmapRows() const { return m_W; }                         // W
    int64_t heatmapKeys() const { return m_L; }                         // L
    int heatmapColumnsDrawn() const { return m_columnsDrawn; }          // after downsampling
    const std::vector<float>& displayedRows() const { return m_rows; }  // [W, L] after transforms
    std::vector<int64_t> keptPositions() const;
    double threshold() const { return m_threshold; }
    int clusterCount() const { return m_clusterCount; }

protected:
    void refresh() override;

private:
    void buildPlot();
    void rebuildScores();
    void rebuildHeatmap();
    void renderVisibleColumns();  // downsample the visible range into the colour map
    void renderKeptMask(const QCPRange& range);
    void setClusterAlpha(int alpha);
    void onXRangeChanged(const QCPRange& range);
    void onWheel(QWheelEvent* e);  // zoom the key axis about the cursor
    void applyHighlight();
    void syncFocusControls();
    void showTip(const QPoint& pos, const QPoint& global);
    QString describePosition(int64_t position, int64_t row) const;

    AnalysisState* m_state;
    QSpinBox* m_layer;
    QSpinBox* m_head;
    QLabel* m_headLabel;
    QLabel* m_stats;
    QCustomPlot* m_plot;
    QCPAxisRect* m_heatRect;
    QCPAxisRect* m_scoreRect;
    QCPColorMap* m_heat;
    QCPColorScale* m_scale;
    QCPColorMap* m_clusters;
    QCPGraph* m_votes;
    QCPGraph* m_pooled;
    QCPGraph* m_kept;
    QCPItemStraightLine* m_thresholdLine;
    QCPGraph* m_thresholdKey;  // no data: the threshold's legend entry, named with its value
    QCPItemRect* m_windowHeat;
    QCPItemRect* m_windowScores;
    QCPItemText* m_windowText;
    QCPItemRect* m_markHeat;  // the marked span (an evaluation's needle)
    QCPItemRect* m_markScores;
    QCPItemText* m_markText;
    struct SpanItems {
        QCPItemRect* heat;
        QCPItemRect* scores;
        QCPItemText* text;
    };
    std::vector<SpanItems> m_moreMarks;  // the further marked spans (RULER's needles and answers), made on demand
    QCPItemRect* m_reachHeat;            // sliding-window layers: the prefix the next token cannot see
    QCPItemRect* m_reachScores;
    QCPItemText* m_reachText;
    QCPItemText* m_emptyText;

    std::vector<float> m_rows;      // [W, L] transformed rows
    std::vector<float> m_keptMask;  // [L] 1 where the focused head keeps the position
    int64_t m_W = 0;
    int64_t m_L = 0;
    int64_t m_P = 0;  // prefix length L - W
    int m_columnsDrawn = 0;
    int m_renderedWidth = -1;  // the heat rect's width in pixels the columns were aggregated for
    double m_threshold = 0;
    int m_clusterCount = 0;
    double m_colorLo = 0;
    double m_colorHi = 1;
    HeadHighlight m_highlight = HeadHighlight::None;
    int64_t m_zoomL = -1;  // key count and sink hiding the current zoom was made for
    int m_zoomHide = -1;
    bool m_syncing = false;
    bool m_replotting = false;  // between QCustomPlot's beforeReplot and afterReplot
};

}  // namespace studio
