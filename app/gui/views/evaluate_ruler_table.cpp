// RulerPanel: the length / axis / size choices and the task x configuration table (see
// evaluate_ruler_table.h).
#include "app/gui/views/evaluate_ruler_table.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QPixmap>
#include <QSignalBlocker>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "app/gui/views/evaluate_plots.h"

namespace studio {

using json = nlohmann::json;

namespace {

constexpr int kCellRole = Qt::UserRole;        // the worst sample's cell
constexpr int kConfigRole = Qt::UserRole + 1;  // and configuration

// A legend swatch for a column header: the series colour, or a dashed black line for the full cache.
QIcon swatch(int series) {
    QPixmap pm(14, 14);
    pm.fill(Qt::transparent);
    QPainter p(&pm);
    if (series < 0) {
        p.setPen(QPen(Qt::black, 2, Qt::DashLine));
        p.drawLine(0, 7, 14, 7);
    } else {
        p.setPen(Qt::NoPen);
        p.setBrush(seriesColor(series));
        p.drawRoundedRect(1, 1, 12, 12, 2, 2);
    }
    return QIcon(pm);
}

// Keeps the entry whose data equals `keep` current (by value), else the first.
void restore(QComboBox* box, const QVariant& keep) {
    const int i = keep.isValid() ? box->findData(keep) : -1;
    box->setCurrentIndex(i >= 0 ? i : 0);
}

QString sizeLabel(const QString& axis, double v) {
    return axis == "ratio" ? QString::number(v, 'g', 6) : QString("C%1").arg(v, 0, 'g', 10);
}

}  // namespace

QColor RulerPanel::cellColor(double value) {
    // A light-to-dark blue ramp (the stops of ColorBrewer's sequential "Blues"), linear between
    // stops: light enough at 0 for black text, dark at 100 for white text, readable in grey print.
    static const QColor stops[] = {QColor("#f7fbff"), QColor("#c6dbef"), QColor("#6baed6"), QColor("#2171b5"),
                                   QColor("#08306b")};
    const double t = std::clamp(value / 100.0, 0.0, 1.0) * 4.0;
    const int i = std::min(3, static_cast<int>(std::floor(t)));
    const double f = t - i;
    const QColor& a = stops[i];
    const QColor& b = stops[i + 1];
    return QColor::fromRgbF(static_cast<float>(a.redF() + f * (b.redF() - a.redF())),
                            static_cast<float>(a.greenF() + f * (b.greenF() - a.greenF())),
                            static_cast<float>(a.blueF() + f * (b.blueF() - a.blueF())));
}

RulerPanel::RulerPanel(QWidget* parent) : QWidget(parent) {
    setObjectName("rulerPanel");
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(0, 0, 0, 0);
    auto* bar = new QHBoxLayout;
    m_length = new QComboBox;
    m_length->setObjectName("rulerLength");
    m_axis = new QComboBox;
    m_axis->setObjectName("rulerAxis");
    m_size = new QComboBox;
    m_size->setObjectName("rulerSize");
    m_size->setToolTip("The size the table shows: a compression ratio (fraction of the cache removed) or a budget");
    bar->addWidget(new QLabel("Length"));
    bar->addWidget(m_length);
    m_axisLabel = new QLabel("x axis");
    bar->addWidget(m_axisLabel);
    bar->addWidget(m_axis);
    bar->addWidget(new QLabel("Table at"));
    bar->addWidget(m_size);
    bar->addStretch(1);
    v->addLayout(bar);
    m_caption = new QLabel;
    m_caption->setWordWrap(true);
    m_caption->setStyleSheet("color:#555");
    v->addWidget(m_caption);
    m_table = new QTableWidget;
    m_table->setObjectName("rulerTable");
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    // Columns as wide as their names and numbers: a stretched column would clip its header.
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setDefaultAlignment(Qt::AlignCenter);
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->setIconSize(QSize(14, 14));
    v->addWidget(m_table, 1);

    connect(m_length, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { Q_EMIT choiceChanged(); });
    connect(m_axis, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { Q_EMIT choiceChanged(); });
    connect(m_size, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { Q_EMIT choiceChanged(); });
    connect(m_table, &QTableWidget::cellClicked, this, [this](int row, int col) {
        const QTableWidgetItem* item = m_table->item(row, col);
        if (!item || item->data(kCellRole).toLongLong() < 0) return;
        Q_EMIT rowRequested(item->data(kCellRole).toLongLong(), item->data(kConfigRole).toLongLong());
    });
}

int64_t RulerPanel::length() const { return m_length->currentData().toLongLong(); }
QString RulerPanel::axis() const { return m_axis->currentData().toString(); }
double RulerPanel::size() const { return m_size->currentData().toDouble(); }

void RulerPanel::setLength(int64_t length) { restore(m_length, QVariant::fromValue<qlonglong>(length)); }
void RulerPanel::setAxis(const QString& axis) { restore(m_axis, axis); }
void RulerPanel::setSize(double size) { restore(m_size, size); }

void RulerPanel::showResults(const EvalResults& results, const QString& metric) {
    {
        const QSignalBlocker b1(m_length), b2(m_axis), b3(m_size);
        const QVariant length = m_length->currentData(), axis = m_axis->currentData();
        m_length->clear();
        for (int64_t l : rulerLengths(results))
            m_length->addItem(QString::number(l), QVariant::fromValue<qlonglong>(l));
        restore(m_length, length);
        m_axis->clear();
        for (const QString& a : rulerAxes(results)) m_axis->addItem(a == "ratio" ? "compression ratio" : "budget", a);
        restore(m_axis, axis);
        // A choice only when the run has both ratios and budgets.
        m_axis->setVisible(m_axis->count() > 1);
        m_axisLabel->setVisible(m_axis->count() > 1);
        const QVariant size = m_size->currentData();
        m_size->clear();
        const std::vector<double> sizes = rulerSizes(results, this->axis());
        for (double s : sizes) m_size->addItem(sizeLabel(this->axis(), s), s);
        // By default the middle size: kvpress's headline numbers are at ratio 0.5.
        if (size.isValid() && m_size->findData(size) >= 0) restore(m_size, size);
        else if (!sizes.empty()) m_size->setCurrentIndex(static_cast<int>(sizes.size() - 1) / 2);
    }
    fillTable(results, metric);
}

void RulerPanel::fillTable(const EvalResults& results, const QString& metric) {
    m_data = rulerTable(results, length(), axis(), size(), metric);
    const int nTasks = static_cast<int>(m_data.tasks.size());
    const int nCols = static_cast<int>(m_data.columns.size());
    m_table->clear();
    m_table->setRowCount(nTasks + 1);
    m_table->setColumnCount(nCols);
    for (int c = 0; c < nCols; ++c) {
        // The header names the series (the size is the panel's choice); the tooltip the configuration.
        auto* h = new QTableWidgetItem(swatch(m_data.seriesIndex[static_cast<size_t>(c)]), m_data.headers[c]);
        h->setToolTip(m_data.columns[c]);
        m_table->setHorizontalHeaderItem(c, h);
    }
    QStringList rowNames = m_data.tasks;
    rowNames << "mean over tasks";
    m_table->setVerticalHeaderLabels(rowNames);
    int samples = 0;
    for (int t = 0; t <= nTasks; ++t)
        for (int c = 0; c < nCols; ++c) {
            const bool average = t == nTasks;
            const auto col = static_cast<size_t>(c);
            const RulerStat& s = average ? m_data.average[col] : m_data.cells[static_cast<size_t>(t)][col];
            auto* item = new QTableWidgetItem;
            item->setTextAlignment(Qt::AlignCenter);
            item->setData(kCellRole, QVariant::fromValue<qlonglong>(s.n > 0 ? s.worstCell : -1));
            item->setData(kConfigRole, QVariant::fromValue<qlonglong>(s.worstConfig));
            if (s.n == 0) {
                item->setText(QString::fromUtf8("–"));
                item->setForeground(QColor(150, 150, 150));
                item->setToolTip("not run yet");
            } else {
                samples = std::max(samples, s.n);
                item->setText(QString::number(s.mean, 'f', 1));
                const QColor bg = cellColor(s.mean);
                item->setBackground(bg);
                item->setForeground(bg.lightnessF() < 0.5 ? Qt::white : Qt::black);
                QString worst;
                if (const json* w = results.row(s.worstCell, s.worstConfig))
                    worst = QString("%1 #%2, %3")
                                .arg(QString::fromStdString(w->value("ruler_task", std::string())))
                                .arg(w->value("sample", int64_t(0)))
                                .arg(100.0 * metricValue(*w, metric).value_or(0.0), 0, 'f', 0);
                item->setToolTip(QString("%1 · %2: %3 ± %4 (s.d. over %5 samples)\n"
                                         "worst sample: %6. Click to open it.")
                                     .arg(rowNames[t], m_data.columns[c])
                                     .arg(s.mean, 0, 'f', 1)
                                     .arg(s.sd, 0, 'f', 1)
                                     .arg(s.n)
                                     .arg(worst));
            }
            if (average) {
                QFont f = item->font();
                f.setBold(true);
                item->setFont(f);
            }
            m_table->setItem(t, c, item);
        }
    m_caption->setText(nCols == 0 ? QString("No configuration of this size.")
                                  : QString("%1 at %2 tokens, %3 %4: mean over %5 sample%6 (0-100). Click a cell to "
                                            "open its worst sample.")
                                        .arg(metric == "score" ? QString("RULER score") : metric)
                                        .arg(length())
                                        .arg(axis() == "ratio" ? "compression ratio" : "budget")
                                        .arg(sizeLabel(axis(), size()))
                                        .arg(samples)
                                        .arg(samples == 1 ? "" : "s"));
}

}  // namespace studio
