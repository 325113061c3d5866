// EvaluateView: wires the form, the plot and the worker together; loads, exports and opens rows
// (see evaluate_view.h). The run itself is in evaluate_run.cpp, the drawing in evaluate_*_plot.cpp.
#include "app/gui/views/evaluate_view.h"

#include <QFileInfo>
#include <QMouseEvent>
#include <QSplitter>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <tuple>

#include "app/gui/files/data_export.h"
#include "app/gui/files/eval_export.h"
#include "app/gui/plot/plot_style.h"
#include "app/gui/views/evaluate_form.h"
#include "app/gui/views/evaluate_plots.h"
#include "app/gui/views/evaluate_ruler_table.h"
#include "core/eval/results_file.h"

namespace studio {

using json = nlohmann::json;

namespace {
constexpr int kRedrawMs = 250;
}  // namespace

EvaluateView::EvaluateView(QWidget* parent) : LazyView(parent) {
    m_controller = new EvalController(this);
    m_form = new EvaluateForm(this);

    m_plot = new QCustomPlot;
    m_plot->setObjectName("evaluatePlot");
    stylePlot(m_plot);
    m_plot->setMouseTracking(true);
    connect(m_plot, &QCustomPlot::mouseMove, this, &EvaluateView::onMouseMove);
    connect(m_plot, &QCustomPlot::mouseRelease, this, &EvaluateView::onMouseRelease);
    connect(m_plot, &QCustomPlot::legendClick, this, [this](QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) {
        auto* pi = qobject_cast<QCPPlottableLegendItem*>(item);
        if (!pi) return;
        QCPAbstractPlottable* p = pi->plottable();
        const bool on = !p->visible();
        p->setVisible(on);
        for (QCPAbstractPlottable* band : m_hits.bands[p]) band->setVisible(on);
        pi->setTextColor(on ? Qt::black : QColor(160, 160, 160));
        m_plot->replot();
    });

    m_rulerPanel = new RulerPanel;
    m_rulerPanel->hide();
    connect(m_rulerPanel, &RulerPanel::choiceChanged, this, [this] { markDirty(); });
    connect(m_rulerPanel, &RulerPanel::rowRequested, this, [this](qint64 cell, qint64 config) {
        if (const json* row = m_results.row(cell, config)) openRow(*row);
    });
    auto* split = new QSplitter(Qt::Horizontal);
    split->setChildrenCollapsible(false);
    split->addWidget(m_plot);
    split->addWidget(m_rulerPanel);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    split->setSizes({560, 440});

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_form);
    layout->addWidget(split, 1);

    m_redraw.setSingleShot(true);
    m_redraw.setInterval(kRedrawMs);
    connect(&m_redraw, &QTimer::timeout, this, [this] { markDirty(); });

    connect(m_form, &EvaluateForm::taskChanged, this, [this] {
        fillMetricCombo();
        if (m_results.empty()) markDirty();
    });
    connect(m_form, &EvaluateForm::metricChosen, this, [this] { markDirty(); });
    connect(m_form, &EvaluateForm::runRequested, this, [this] {
        QString error;
        if (!startRun(&error)) Q_EMIT errorOccurred("Cannot start the evaluation", error);
    });
    connect(m_form, &EvaluateForm::cancelRequested, this, &EvaluateView::cancel);
    connect(m_form, &EvaluateForm::openRequested, this, [this](const QString& path) {
        QString error;
        if (!loadResults(path, &error)) Q_EMIT errorOccurred("Cannot open the results", error);
    });
    connect(m_form, &EvaluateForm::exportPlotRequested, this, [this](const QString& path) {
        QString error;
        if (!exportPlot(path, &error)) Q_EMIT errorOccurred("Export failed", error);
    });
    connect(m_form, &EvaluateForm::exportDataRequested, this, [this](const QString& path) {
        QString error;
        if (!exportData(path, &error)) Q_EMIT errorOccurred("Export failed", error);
    });
    connectController();
    fillMetricCombo();
}

EvaluateView::~EvaluateView() { m_controller->shutdown(); }

void EvaluateView::fillMetricCombo() { m_form->fillMetricCombo(m_results.empty() ? task() : m_results.task()); }

void EvaluateView::setTask(const QString& t) { m_form->setTask(t); }
QString EvaluateView::task() const { return m_form->task(); }
void EvaluateView::setField(const QString& name, const QString& value) { m_form->setField(name, value); }
QString EvaluateView::field(const QString& name) const { return m_form->field(name); }

void EvaluateView::setMetric(const QString& key) {
    m_form->setMetric(key);
    markDirty();
}

QString EvaluateView::metric() const { return m_form->metric(); }
QString EvaluateView::statusText() const { return m_form->status(); }

bool EvaluateView::loadResults(const QString& path, QString* error) {
    try {
        m_results.load(path);
    } catch (const snapkv::Error& e) {
        if (error) *error = QString::fromUtf8(e.what());
        return false;
    }
    m_sources.clear();
    if (m_results.empty()) {
        if (error) *error = QString("'%1' holds no rows").arg(path);
        return false;
    }
    try {
        setTask(m_results.task());
        m_form->fillFromSettings(m_results.settings(), path);
        fillMetricCombo();
    } catch (const nlohmann::json::exception& e) {
        // Valid JSON Lines whose settings hold a field of another type than the runner writes.
        m_results.clear();
        if (error) *error = QString("'%1': its run settings do not read as a results file's: %2").arg(path, e.what());
        return false;
    }
    m_form->setStatus(QString("%1: %2 of %3 rows.")
                          .arg(QFileInfo(path).fileName())
                          .arg(m_results.size())
                          .arg(m_results.expectedRows()));
    markDirty();
    return true;
}

bool EvaluateView::exportPlot(const QString& path, QString* error) {
    refreshNow();
    return studio::exportPlot(m_plot, path, error);
}

bool EvaluateView::exportData(const QString& path, QString* error) {
    if (m_results.empty()) {
        if (error) *error = "there are no rows to export";
        return false;
    }
    return exportEvalRows(m_results.rows(), path, error);
}

void EvaluateView::scheduleRedraw() {
    if (!m_redraw.isActive()) m_redraw.start();
}

void EvaluateView::refresh() {
    fillMetricCombo();
    m_hits.clear();
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_plot->plotLayout()->clear();
    QString hint;
    if (m_results.empty()) {
        hint = drawEmptyPlot(m_plot, m_controller->busy()
                                         ? "Running: the first rows appear when the first document is done."
                                         : "No results yet: press Run grid, or Open results….");
    } else if (m_results.task() == "needle") {
        hint = drawNeedleHeatmaps(m_plot, m_results, metric(), &m_hits);
    } else if (m_results.task() == "ruler") {
        m_rulerPanel->showResults(m_results, metric());
        hint = drawRulerLeaderboard(m_plot, m_results, m_rulerPanel->length(), m_rulerPanel->axis(), metric(), &m_hits);
    } else {
        hint = drawSweepCurves(m_plot, m_results, metric(), &m_hits);
    }
    m_rulerPanel->setVisible(!m_results.empty() && m_results.task() == "ruler");
    m_form->setHint(hint);
    m_plot->replot();
}

const json* EvaluateView::rowAt(const QPointF& pos) const { return m_hits.rowAt(pos, m_results); }

void EvaluateView::onMouseMove(QMouseEvent* event) {
    const QPointF pos = event->position();
    if (m_results.task() != "needle") {  // curves: the point's own tip
        if (const PlotHits::CurvePoint* cp = m_hits.pointAt(pos))
            QToolTip::showText(event->globalPosition().toPoint(), cp->tip, m_plot);
        else QToolTip::hideText();
        return;
    }
    const json* row = rowAt(pos);
    if (row) QToolTip::showText(event->globalPosition().toPoint(), m_results.describe(*row), m_plot);
    else QToolTip::hideText();
}

void EvaluateView::onMouseRelease(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton) return;
    if (const json* row = rowAt(event->position())) openRow(*row);
}

void EvaluateView::openRow(const json& row) {
    const int64_t cell = row.value("cell", int64_t(-1));
    try {
        if (auto it = m_sources.find(cell); it != m_sources.end()) {
            Q_EMIT openCellRequested(makeCellPrompt(*it->second, m_results.settings(), row));
            return;
        }
    } catch (const snapkv::Error& e) {
        Q_EMIT errorOccurred("Cannot open the cell", QString::fromUtf8(e.what()));
        return;
    }
    EvalCellJob job;
    if (m_modelProvider) std::tie(job.modelPath, job.load) = m_modelProvider();
    job.settings = m_results.settings();
    job.row = row;
    job.haystack = m_form->haystack();
    job.setPath = m_form->setPath();
    m_form->setStatus(m_controller->busy() ? "The cell opens when the running grid finishes or is cancelled."
                                           : "Rebuilding the cell's document…");
    m_controller->openCell(job);
}

}  // namespace studio
