// The RULER panel of the Evaluate tab, beside the leaderboard: which length, size axis (ratio or
// budget) and size to show, and the task x configuration table of mean scores (0-100) at that size,
// the full cache first, the mean over tasks last; a cell's tooltip gives the spread and its worst
// sample, a click asks to open that sample. The numbers come from eval_ruler.h; nothing is run here.
#pragma once

#include <QWidget>

#include <cstdint>

#include "app/gui/state/eval_ruler.h"

class QComboBox;
class QLabel;
class QTableWidget;

namespace studio {

class RulerPanel : public QWidget {
    Q_OBJECT
public:
    explicit RulerPanel(QWidget* parent = nullptr);

    // Refills the choices from the results (keeping the current ones where they still exist) and
    // the table for the metric.
    void showResults(const EvalResults& results, const QString& metric);
    int64_t length() const;
    QString axis() const;  // "ratio" | "budget"
    double size() const;
    // Chooses a length, axis or size (one the results have); emits choiceChanged.
    void setLength(int64_t length);
    void setAxis(const QString& axis);
    void setSize(double size);

    QTableWidget* table() const { return m_table; }
    const RulerTable& data() const { return m_data; }
    // The background of a table cell with this value (0-100): white to dark blue.
    static QColor cellColor(double value);

Q_SIGNALS:
    void choiceChanged();  // length, axis or size: the plot and table redraw
    void rowRequested(qint64 cell, qint64 config);

private:
    void fillTable(const EvalResults& results, const QString& metric);

    QComboBox* m_length;
    QComboBox* m_axis;
    QLabel* m_axisLabel;
    QComboBox* m_size;
    QLabel* m_caption;
    QTableWidget* m_table;
    RulerTable m_data;
};

}  // namespace studio
