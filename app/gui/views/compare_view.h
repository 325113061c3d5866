// View 4: full-cache vs compressed-cache generation. Outputs side by side with differing tokens
// highlighted and the first divergence marked; per-step KL and top-1 agreement plotted; a table
// of KV bytes, compression ratio, prefill time and decode speed; hit rates per layer and head.
// Generation runs only when the user asks (generateRequested).
#pragma once

#include <QStringList>

#include "app/gui/views/lazy_view.h"

class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QTextBrowser;
class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QCPItemStraightLine;

namespace studio {

class AnalysisState;

class CompareView : public LazyView {
    Q_OBJECT
public:
    explicit CompareView(AnalysisState* state, QWidget* parent = nullptr);

    int maxTokens() const;
    void setMaxTokens(int n);
    QCustomPlot* plot() const { return m_plot; }
    QCustomPlot* hitPlot() const { return m_hitPlot; }
    QTableWidget* table() const { return m_table; }
    QString fullHtml() const;
    QString compressedHtml() const;
    void setBusy(bool busy);

Q_SIGNALS:
    void generateRequested(int maxTokens);

protected:
    void refresh() override;

private:
    void fillOutputs();
    void fillPlot();
    void fillTable();
    void fillHitRates();

    AnalysisState* m_state;
    QSpinBox* m_maxTokens;
    QPushButton* m_generate;
    QLabel* m_note;
    QTextBrowser* m_full;
    QTextBrowser* m_compressed;
    QLabel* m_fullTitle;
    QLabel* m_compressedTitle;
    QCustomPlot* m_plot;
    QCPItemStraightLine* m_divergence;
    QCustomPlot* m_hitPlot;
    QCPColorMap* m_hitMap;
    QCPColorScale* m_hitScale;
    QStringList m_hitRows;     // [n_layer] layer labels of the hit-rate map
    QStringList m_hitColumns;  // [n_head]
    QTableWidget* m_table;
};

}  // namespace studio
