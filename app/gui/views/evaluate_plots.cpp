// What the Evaluate tab's plots share: the series colours and the empty plot (see evaluate_plots.h).
#include "app/gui/views/evaluate_plots.h"

#include "app/gui/plot/plot_style.h"
#include "app/gui/views/evaluate_hits.h"

namespace studio {

QColor seriesColor(int i) {
    static const QColor kSeries[] = {QColor("#0072B2"), QColor("#E69F00"), QColor("#009E73"), QColor("#CC79A7"),
                                     QColor("#56B4E9"), QColor("#D55E00"), QColor("#F0E442"), QColor("#000000")};
    return kSeries[((i % 8) + 8) % 8];
}

void addBandLine(QCustomPlot* plot, QCPAxis* x, QCPAxis* y, const QVector<double>& px, const QVector<double>& lo,
                 const QVector<double>& hi, const QVector<double>& mean, const QColor& c, const QString& label,
                 int fill_alpha, double width, double marker, PlotHits* hits) {
    // The band: translucent, with thin dotted edges so that overlapping bands stay readable.
    QColor edge = c;
    edge.setAlpha(150);
    QCPGraph* lower = plot->addGraph(x, y);
    lower->setData(px, lo, true);
    lower->setPen(QPen(edge, 1, Qt::DotLine));
    lower->removeFromLegend();
    QCPGraph* upper = plot->addGraph(x, y);
    upper->setData(px, hi, true);
    upper->setPen(QPen(edge, 1, Qt::DotLine));
    QColor fill = c;
    fill.setAlpha(fill_alpha);
    upper->setBrush(fill);
    upper->setChannelFillGraph(lower);
    upper->removeFromLegend();
    QCPGraph* line = plot->addGraph(x, y);
    line->setData(px, mean, true);
    line->setName(label);
    line->setPen(QPen(c, width));
    line->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, c, Qt::white, marker));
    hits->bands[line] = {lower, upper};
}

QString drawEmptyPlot(QCustomPlot* plot, const QString& text) {
    auto* rect = new QCPAxisRect(plot);
    plot->plotLayout()->addElement(0, 0, rect);
    for (QCPAxis* a : rect->axes()) a->setVisible(false);
    auto* t = new QCPItemText(plot);
    t->setClipToAxisRect(false);
    t->position->setType(QCPItemPosition::ptAxisRectRatio);
    t->position->setAxisRect(rect);
    t->position->setCoords(0.5, 0.5);
    t->setText(text);
    t->setColor(QColor(90, 90, 90));
    return QString();
}

QCPAxisRect* addLegendLayout(QCustomPlot* plot, std::initializer_list<QCPLayoutElement*> headers) {
    auto* rect = new QCPAxisRect(plot);
    auto* legend = new QCPLegend;
    int row = 0;
    for (QCPLayoutElement* e : headers) plot->plotLayout()->addElement(row++, 0, e);
    plot->plotLayout()->addElement(row, 0, legend);
    plot->plotLayout()->addElement(row + 1, 0, rect);
    for (int r = 0; r <= row; ++r) plot->plotLayout()->setRowStretchFactor(r, 0.01);
    plot->legend = legend;
    legend->setLayer("legend");
    legend->setFillOrder(QCPLegend::foColumnsFirst);
    legend->setBorderPen(Qt::NoPen);
    legend->setSelectableParts(QCPLegend::spItems);
    for (QCPAxis* a : rect->axes()) styleAxis(a);
    return rect;
}

}  // namespace studio
