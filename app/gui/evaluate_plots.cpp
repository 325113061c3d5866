// What the Evaluate tab's plots share: the series colours and the empty plot (see evaluate_plots.h).
#include "app/gui/evaluate_plots.h"

#include "app/gui/plot_style.h"

namespace studio {

QColor seriesColor(int i) {
    static const QColor kSeries[] = {QColor("#0072B2"), QColor("#E69F00"), QColor("#009E73"), QColor("#CC79A7"),
                                     QColor("#56B4E9"), QColor("#D55E00"), QColor("#F0E442"), QColor("#000000")};
    return kSeries[((i % 8) + 8) % 8];
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

}  // namespace studio
