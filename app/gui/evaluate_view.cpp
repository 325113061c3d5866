// EvaluateView: the form, the worker's signals, the heatmaps and curves (see evaluate_view.h).
#include "app/gui/evaluate_view.h"

#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMouseEvent>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "app/gui/data_export.h"
#include "app/gui/plot_style.h"
#include "core/eval/results_file.h"
#include "core/snapkv/snapkv_params.h"

namespace studio {

namespace se = snapkv::eval;
using json = nlohmann::json;

namespace {

// Okabe & Ito's colour-blind-safe qualitative palette (Color Universal Design, 2008).
const QColor kSeries[] = {QColor("#0072B2"), QColor("#E69F00"), QColor("#009E73"), QColor("#CC79A7"),
                          QColor("#56B4E9"), QColor("#D55E00"), QColor("#F0E442"), QColor("#000000")};
constexpr int kRedrawMs = 250;

QString fmtDuration(double ms) {
    const qint64 s = static_cast<qint64>(ms / 1000.0 + 0.5);
    if (s < 60) return QString("%1 s").arg(s);
    if (s < 3600) return QString("%1 min %2 s").arg(s / 60).arg(s % 60);
    return QString("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}

QString fmtNumber(double v) { return QString::number(v, 'g', 6); }

QLineEdit* lineEdit(const QString& text, const QString& tip) {
    auto* e = new QLineEdit(text);
    e->setToolTip(tip);
    return e;
}

}  // namespace

EvaluateView::EvaluateView(QWidget* parent) : LazyView(parent) {
    m_controller = new EvalController(this);
    buildForm();

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
        for (QCPAbstractPlottable* band : m_bands[p]) band->setVisible(on);
        pi->setTextColor(on ? Qt::black : QColor(160, 160, 160));
        m_plot->replot();
    });

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(findChild<QWidget*>("evaluateForm"));
    layout->addWidget(m_plot, 1);

    m_redraw.setSingleShot(true);
    m_redraw.setInterval(kRedrawMs);
    connect(&m_redraw, &QTimer::timeout, this, [this] { markDirty(); });

    connect(m_controller, &EvalController::started, this, &EvaluateView::onStarted);
    connect(m_controller, &EvalController::rowFinished, this, &EvaluateView::onRow);
    connect(m_controller, &EvalController::cellsProgressed, this, &EvaluateView::onCellsProgressed);
    connect(m_controller, &EvalController::busyChanged, this, &EvaluateView::onBusyChanged);
    connect(m_controller, &EvalController::progressed, this, [this](const QString& stage, qint64 d, qint64 t) {
        m_stage = QString("%1 %2/%3").arg(stage).arg(d).arg(t);
        onCellsProgressed(m_cellsDone, m_cellsTotal);
    });
    connect(m_controller, &EvalController::finished, this, [this](const EvalStatsValue& v) {
        QString s = QString("Done: %1 rows written to %2 (%3 cells run, %4 already there) in %5.")
                        .arg(v.rowsWritten)
                        .arg(QFileInfo(m_out->text()).fileName())
                        .arg(v.cellsRun)
                        .arg(v.cellsSkipped)
                        .arg(fmtDuration(v.wallMs));
        if (v.cellsRun > 0)
            s += QString(" Prefill %1, full decode %2, compressed %3; one prefill per document saved ~%4.")
                     .arg(fmtDuration(v.prefillMs), fmtDuration(v.referenceMs), fmtDuration(v.compressedMs),
                          fmtDuration(v.savedMs));
        m_status->setText(s);
        markDirty();
        Q_EMIT runFinished();
    });
    connect(m_controller, &EvalController::failed, this, [this](const QString& task, const QString& msg) {
        m_status->setText(QString("%1 failed: %2").arg(task, msg));
        Q_EMIT errorOccurred(task == "open cell" ? "Cannot open the cell" : "Evaluation failed", msg);
        if (task == "evaluation") Q_EMIT runFinished();
    });
    connect(m_controller, &EvalController::cancelled, this, [this](const QString& task) {
        m_status->setText(QString("Cancelled: %1 rows are kept in %2; Run again with the same file resumes.")
                              .arg(m_results.size())
                              .arg(QFileInfo(m_out->text()).fileName()));
        markDirty();
        if (task == "evaluation") Q_EMIT runFinished();
    });
    connect(m_controller, &EvalController::cellPrepared, this,
            [this](const EvalCellPtr& cell) { Q_EMIT openCellRequested(*cell); });
    updateFormVisibility();
}

EvaluateView::~EvaluateView() { m_controller->shutdown(); }

void EvaluateView::buildForm() {
    auto* form = new QWidget;
    form->setObjectName("evaluateForm");
    auto* v = new QVBoxLayout(form);
    v->setContentsMargins(0, 0, 0, 0);

    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel("Evaluate:"));
    m_task = new QComboBox;
    m_task->addItem("Needle in a haystack (length x depth)", "needle");
    m_task->addItem("Budget sweep over a question set", "sweep");
    top->addWidget(m_task);
    m_run = new QPushButton(style()->standardIcon(QStyle::SP_MediaPlay), "Run grid");
    m_run->setObjectName("evalRunButton");
    m_run->setToolTip("One prefill per document; the full cache and every configuration answer from it. "
                      "Rows are written to the results file as they finish.");
    m_cancel = new QPushButton(style()->standardIcon(QStyle::SP_MediaStop), "Cancel");
    m_cancel->setObjectName("evalCancelButton");
    m_cancel->setEnabled(false);
    auto* open = new QPushButton(style()->standardIcon(QStyle::SP_DialogOpenButton), "Open results…");
    auto* exportPlotButton = new QPushButton(style()->standardIcon(QStyle::SP_DriveFDIcon), "Export plot…");
    auto* exportDataButton = new QPushButton(style()->standardIcon(QStyle::SP_FileDialogDetailedView), "Export rows…");
    for (QPushButton* b : {m_run, m_cancel, open, exportPlotButton, exportDataButton}) top->addWidget(b);
    m_progress = new QProgressBar;
    m_progress->setFixedWidth(180);
    m_progress->hide();
    top->addWidget(m_progress);
    top->addStretch(1);
    v->addLayout(top);

    auto* grid = new QHBoxLayout;
    m_needleBox = new QGroupBox("Needle grid");
    auto* nf = new QFormLayout(m_needleBox);
    m_lengths = lineEdit("", "Prompt lengths in tokens, comma separated; empty: 5 lengths doubling up to the context");
    m_lengths->setPlaceholderText("5 up to the context");
    m_depths = lineEdit("0,10,20,30,40,50,60,70,80,90,100", "Needle depths, percent of the document");
    m_needle = new QComboBox;
    m_needle->addItem("pass key (5 digits)", "passkey");
    m_needle->addItem("fact sentence", "fact");
    m_haystack = lineEdit("", "Haystack files or folders, comma separated; empty: the bundled essays");
    m_haystack->setPlaceholderText("bundled essays");
    nf->addRow("Lengths", m_lengths);
    nf->addRow("Depths %", m_depths);
    nf->addRow("Needle", m_needle);
    nf->addRow("Haystack", m_haystack);
    m_sweepBox = new QGroupBox("Question set");
    auto* sf = new QFormLayout(m_sweepBox);
    m_set = lineEdit("", "JSON Lines of {document, question, answer?}; empty: the bundled 20 questions");
    m_set->setPlaceholderText("datasets/qa/qa.jsonl (bundled)");
    auto* browseSet = new QPushButton("…");
    browseSet->setFixedWidth(28);
    auto* setRow = new QHBoxLayout;
    setRow->addWidget(m_set, 1);
    setRow->addWidget(browseSet);
    sf->addRow("Set", setRow);
    auto* cfg = new QGroupBox("Configurations (comma lists)");
    auto* cf = new QFormLayout(cfg);
    // The grid starts at core's defaults (those of the parameter panel and the CLI), with a
    // baseline policy and a small budget beside them to compare against.
    const snapkv::SelectionParams d = snapkv::default_params();
    m_policies = lineEdit(QString::fromStdString(snapkv::policy_name(d.policy)) + ",streaming",
                          QString::fromStdString(snapkv::policy_list_text()));
    m_budgets = lineEdit(QString("256,%1").arg(d.budget), "Budgets C: tokens kept per head, window included");
    m_windows = lineEdit(QString::number(d.window), "Observation windows W");
    m_kernels = lineEdit(QString::number(d.kernel), "Pooling kernels K (odd)");
    m_poolings = lineEdit(QString::fromStdString(snapkv::pooling_name(d.pooling)), "max, avg, none");
    m_gqa = lineEdit(QString::fromStdString(snapkv::gqa_mode_name(d.gqa)),
                     "kv-head (default: the cache shrinks), query-head (official)");
    auto* row1 = new QHBoxLayout;
    row1->addWidget(m_policies, 2);
    row1->addWidget(new QLabel("budgets"));
    row1->addWidget(m_budgets, 2);
    auto* row2 = new QHBoxLayout;
    for (auto [label, edit, width] : {std::tuple{"W", m_windows, 34}, std::tuple{"K", m_kernels, 28},
                                      std::tuple{"pool", m_poolings, 40}, std::tuple{"GQA", m_gqa, 80}}) {
        row2->addWidget(new QLabel(label));
        edit->setMinimumWidth(width);
        row2->addWidget(edit, 1);
    }
    m_maxTokens = new QSpinBox;
    m_maxTokens->setRange(1, 512);
    m_maxTokens->setValue(32);
    m_maxTokens->setToolTip("Answer tokens per run (greedy)");
    row2->addWidget(new QLabel("tokens"));
    row2->addWidget(m_maxTokens);
    cf->addRow("Policies", row1);
    cf->addRow("Options", row2);
    auto* outBox = new QGroupBox("Results file");
    auto* of = new QFormLayout(outBox);
    m_out = lineEdit("", "JSON Lines results; an existing file of the same grid is resumed. Empty: a new file "
                         "under the app's data folder");
    m_out->setPlaceholderText("new file");
    auto* browseOut = new QPushButton("…");
    browseOut->setFixedWidth(28);
    auto* outRow = new QHBoxLayout;
    outRow->addWidget(m_out, 1);
    outRow->addWidget(browseOut);
    of->addRow(outRow);
    m_metric = new QComboBox;
    m_metric->setObjectName("evalMetric");
    of->addRow("Colour / y:", m_metric);
    grid->addWidget(m_needleBox, 3);
    grid->addWidget(m_sweepBox, 3);
    grid->addWidget(cfg, 4);
    grid->addWidget(outBox, 3);
    v->addLayout(grid);

    auto* statusRow = new QHBoxLayout;
    m_status = new QLabel("Choose a grid and press Run grid, or open a results file.");
    m_status->setObjectName("evalStatus");
    m_status->setWordWrap(true);
    m_hint = new QLabel;
    m_hint->setStyleSheet("color:#555");
    m_hint->setWordWrap(true);
    statusRow->addWidget(m_status, 3);
    statusRow->addWidget(m_hint, 2);
    v->addLayout(statusRow);

    connect(m_task, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        updateFormVisibility();
        if (m_results.empty()) markDirty();
    });
    connect(m_metric, qOverload<int>(&QComboBox::activated), this, [this] { markDirty(); });
    connect(m_run, &QPushButton::clicked, this, [this] {
        QString error;
        if (!startRun(&error)) Q_EMIT errorOccurred("Cannot start the evaluation", error);
    });
    connect(m_cancel, &QPushButton::clicked, this, &EvaluateView::cancel);
    connect(open, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, "Open evaluation results", QFileInfo(defaultOutPath()).path(),
                                                          "Results (*.jsonl);;All files (*)");
        QString error;
        if (!path.isEmpty() && !loadResults(path, &error)) Q_EMIT errorOccurred("Cannot open the results", error);
    });
    connect(exportPlotButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, "Export plot", "evaluation.png",
                                                          "PNG (*.png);;SVG (*.svg);;PDF (*.pdf)");
        QString error;
        if (!path.isEmpty() && !exportPlot(path, &error)) Q_EMIT errorOccurred("Export failed", error);
    });
    connect(exportDataButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, "Export rows", "evaluation.csv",
                                                          "CSV (*.csv);;JSON Lines (*.jsonl)");
        QString error;
        if (!path.isEmpty() && !exportData(path, &error)) Q_EMIT errorOccurred("Export failed", error);
    });
    connect(browseSet, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, "Question set", QString(), "JSON Lines (*.jsonl)");
        if (!path.isEmpty()) m_set->setText(path);
    });
    connect(browseOut, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, "Results file", defaultOutPath(), "JSON Lines (*.jsonl)",
                                                          nullptr, QFileDialog::DontConfirmOverwrite);
        if (!path.isEmpty()) m_out->setText(path);
    });
    form->setParent(this);
}

void EvaluateView::updateFormVisibility() {
    const bool needle = task() == "needle";
    m_needleBox->setVisible(needle);
    m_sweepBox->setVisible(!needle);
    fillMetricCombo();
}

void EvaluateView::fillMetricCombo() {
    const QString shownTask = m_results.empty() ? task() : m_results.task();
    const QString current = m_metric->currentData().toString();
    m_metric->clear();
    for (const auto& m : shownTask == "sweep" ? sweepMetrics() : needleMetrics()) m_metric->addItem(m.label, m.key);
    const int i = m_metric->findData(current);
    if (i >= 0) m_metric->setCurrentIndex(i);
}

void EvaluateView::setTask(const QString& t) { m_task->setCurrentIndex(t == "sweep" ? 1 : 0); }
QString EvaluateView::task() const { return m_task->currentData().toString(); }

QLineEdit* EvaluateView::fieldEdit(const QString& name) const {
    const std::map<QString, QLineEdit*> edits = {
        {"lengths", m_lengths}, {"depths", m_depths},   {"set", m_set},         {"policies", m_policies},
        {"budgets", m_budgets}, {"window", m_windows},  {"kernel", m_kernels},  {"pooling", m_poolings},
        {"gqa", m_gqa},         {"haystack", m_haystack}, {"out", m_out}};
    const auto it = edits.find(name);
    return it != edits.end() ? it->second : nullptr;
}

void EvaluateView::setField(const QString& name, const QString& value) {
    if (QLineEdit* e = fieldEdit(name)) e->setText(value);
    else if (name == "max_tokens") m_maxTokens->setValue(value.toInt());
    else if (name == "needle") m_needle->setCurrentIndex(std::max(0, m_needle->findData(value)));
}

QString EvaluateView::field(const QString& name) const {
    if (QLineEdit* e = fieldEdit(name)) return e->text();
    if (name == "max_tokens") return QString::number(m_maxTokens->value());
    return QString();
}

void EvaluateView::setMetric(const QString& key) {
    const int i = m_metric->findData(key);
    if (i >= 0) m_metric->setCurrentIndex(i);
    markDirty();
}

QString EvaluateView::metric() const { return m_metric->currentData().toString(); }

QString EvaluateView::defaultOutPath() const {
    QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    if (dir.isEmpty()) dir = QDir::homePath() + "/.snapkv-studio";
    return dir + "/evaluations/" + task() + "-" + QDateTime::currentDateTime().toString("yyyyMMdd-HHmmss") + ".jsonl";
}

EvalJob EvaluateView::jobFromForm() const {
    EvalJob job;
    job.task = task();
    if (m_modelProvider) std::tie(job.modelPath, job.load) = m_modelProvider();
    if (job.modelPath.isEmpty()) throw snapkv::InputError("no model: open a model first (File > Open Model)");
    if (!m_lengths->text().trimmed().isEmpty())
        job.lengths = se::parse_int_list(m_lengths->text().toStdString(), "Lengths");
    job.depths = se::parse_number_list(m_depths->text().toStdString(), "Depths");
    job.needle = m_needle->currentData().toString();
    for (const QString& h : m_haystack->text().split(',', Qt::SkipEmptyParts)) job.haystack << h.trimmed();
    job.setPath = m_set->text().trimmed();
    job.axes.policies = se::parse_name_list(m_policies->text().toStdString(), "Policies");
    job.axes.budgets = se::parse_int_list(m_budgets->text().toStdString(), "Budgets");
    job.axes.windows = se::parse_int_list(m_windows->text().toStdString(), "W");
    job.axes.kernels = se::parse_int_list(m_kernels->text().toStdString(), "K");
    job.axes.poolings = se::parse_name_list(m_poolings->text().toStdString(), "pool");
    job.axes.gqa = se::parse_name_list(m_gqa->text().toStdString(), "GQA");
    se::expand_configs(job.axes);   // validate now, with the field names
    job.maxTokens = m_maxTokens->value();
    job.klSteps = job.maxTokens;
    job.outPath = m_out->text().trimmed();
    return job;
}

bool EvaluateView::startRun(QString* error) {
    if (m_controller->busy()) {
        if (error) *error = "an evaluation is already running";
        return false;
    }
    EvalJob job;
    try {
        job = jobFromForm();
    } catch (const snapkv::Error& e) {
        if (error) *error = QString::fromUtf8(e.what());
        m_status->setText(QString::fromUtf8(e.what()));
        return false;
    }
    if (job.outPath.isEmpty()) {
        job.outPath = defaultOutPath();
        m_out->setText(job.outPath);
    }
    // Rows already in the file show at once; a file of another grid fails in the worker.
    m_results.clear();
    m_sources.clear();
    if (QFileInfo::exists(job.outPath)) {
        try {
            m_results.load(job.outPath);
        } catch (const snapkv::Error&) {
            m_results.clear();
        }
    }
    m_runTask = job.task;
    m_cellsDone = m_cellsTotal = m_cellsRun = 0;
    m_cellHadRows = false;
    m_stage = "loading model";
    m_status->setText("Starting…");
    m_controller->run(job);
    fillMetricCombo();
    markDirty();
    return true;
}

void EvaluateView::cancel() { m_controller->cancel(); }

void EvaluateView::onStarted(const QString& outPath, qint64 cells, qint64 present) {
    m_runClock.start();
    m_cellsTotal = cells;
    m_status->setText(QString("Running %1 cells into %2%3.")
                          .arg(cells)
                          .arg(QFileInfo(outPath).fileName())
                          .arg(present ? QString(" (%1 rows already there are kept)").arg(present) : QString()));
}

void EvaluateView::onRow(const EvalRowPtr& row, const EvalSourcePtr& source) {
    if (!m_results.add(*row)) {   // the file held another run: show this run's rows only
        m_results.clear();
        m_results.add(*row);
    }
    if (source) m_sources[(*row)["cell"].get<int64_t>()] = source;
    m_cellHadRows = true;
    scheduleRedraw();
}

void EvaluateView::onCellsProgressed(qint64 done, qint64 total) {
    if (done > m_cellsDone && m_cellHadRows) ++m_cellsRun, m_cellHadRows = false;
    m_cellsDone = done;
    m_cellsTotal = total;
    if (!m_controller->busy()) return;
    QString s = QString("%1 / %2 cells").arg(done).arg(total);
    if (m_cellsRun > 0 && m_runClock.isValid() && done < total)
        s += " · about " + fmtDuration(m_runClock.elapsed() / double(m_cellsRun) * double(total - done)) + " left";
    if (!m_stage.isEmpty()) s += " · " + m_stage;
    m_status->setText(s);
    m_progress->setRange(0, static_cast<int>(std::max<qint64>(total, 1)));
    m_progress->setValue(static_cast<int>(done));
    m_progress->setFormat(QString("%1/%2 cells").arg(done).arg(total));
}

void EvaluateView::onBusyChanged(bool busy) {
    m_run->setEnabled(!busy);
    m_cancel->setEnabled(busy);
    m_progress->setVisible(busy);
    if (busy) m_progress->setRange(0, 0);
}

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
    setTask(m_results.task());
    fillFormFromSettings(path);
    fillMetricCombo();
    m_status->setText(QString("%1: %2 of %3 rows.")
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
    std::vector<json> rows = m_results.rows();
    std::stable_sort(rows.begin(), rows.end(), se::row_less);
    const QString suffix = QFileInfo(path).suffix().toLower();
    try {
        if (suffix == "csv") {
            se::write_file_atomic(path.toStdString(), se::rows_to_csv(rows));
        } else if (suffix == "jsonl") {
            std::string content;
            for (const auto& r : rows) content += se::row_line(r);
            se::write_file_atomic(path.toStdString(), content);
        } else {
            if (error) *error = QString("unknown format \".%1\": use .csv or .jsonl").arg(suffix);
            return false;
        }
    } catch (const snapkv::Error& e) {
        if (error) *error = QString::fromUtf8(e.what());
        return false;
    }
    return true;
}

void EvaluateView::fillFormFromSettings(const QString& path) {
    const json& st = m_results.settings();
    auto joined = [](const std::vector<QString>& v) {
        QStringList l;
        for (const QString& s : v)
            if (!l.contains(s)) l << s;
        return l.join(',');
    };
    std::vector<QString> policies, budgets, windows, kernels, poolings, gqa;
    for (const auto& c : st["configs"]) {
        if (c.value("policy", std::string()) == "full") continue;
        policies.push_back(QString::fromStdString(c["policy"].get<std::string>()));
        budgets.push_back(QString::number(c["budget"].get<int64_t>()));
        windows.push_back(QString::number(c["window"].get<int64_t>()));
        if (c["kernel"].is_number()) kernels.push_back(QString::number(c["kernel"].get<int64_t>()));
        if (c["pooling"].is_string()) poolings.push_back(QString::fromStdString(c["pooling"].get<std::string>()));
        gqa.push_back(QString::fromStdString(c["gqa"].get<std::string>()));
    }
    if (!policies.empty()) {
        m_policies->setText(joined(policies));
        m_budgets->setText(joined(budgets));
        m_windows->setText(joined(windows));
        if (!kernels.empty()) m_kernels->setText(joined(kernels));
        if (!poolings.empty()) m_poolings->setText(joined(poolings));
        m_gqa->setText(joined(gqa));
    }
    m_maxTokens->setValue(st["generation"].value("max_tokens", 32));
    if (st.contains("needle")) {
        std::vector<QString> l, d;
        for (const auto& v : st["needle"]["lengths"]) l.push_back(QString::number(v.get<int64_t>()));
        for (const auto& v : st["needle"]["depths"]) d.push_back(fmtNumber(v.get<double>()));
        m_lengths->setText(joined(l));
        m_depths->setText(joined(d));
        const int i = m_needle->findData(QString::fromStdString(st["needle"]["needle"].value("name", std::string())));
        if (i >= 0) m_needle->setCurrentIndex(i);
    }
    m_out->setText(path);   // Run resumes this file
}

void EvaluateView::scheduleRedraw() {
    if (!m_redraw.isActive()) m_redraw.start();
}

QString EvaluateView::statusText() const { return m_status->text(); }

void EvaluateView::refresh() {
    fillMetricCombo();
    m_panels.clear();
    m_points.clear();
    m_bands.clear();
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_plot->plotLayout()->clear();
    if (m_results.empty()) {
        drawEmpty(m_controller->busy() ? "Running: the first rows appear when the first document is done."
                                       : "No results yet: press Run grid, or Open results….");
    } else if (m_results.task() == "needle") {
        drawNeedle();
    } else {
        drawSweep();
    }
    m_plot->replot();
}

void EvaluateView::drawEmpty(const QString& text) {
    auto* rect = new QCPAxisRect(m_plot);
    m_plot->plotLayout()->addElement(0, 0, rect);
    for (QCPAxis* a : rect->axes()) a->setVisible(false);
    auto* t = new QCPItemText(m_plot);
    t->setClipToAxisRect(false);
    t->position->setType(QCPItemPosition::ptAxisRectRatio);
    t->position->setAxisRect(rect);
    t->position->setCoords(0.5, 0.5);
    t->setText(text);
    t->setColor(QColor(90, 90, 90));
    m_hint->clear();
}

void EvaluateView::drawNeedle() {
    const std::vector<int64_t> lengths = m_results.lengths();
    const std::vector<double> depths = m_results.depths();
    const QStringList labels = m_results.configLabels();
    const QString key = metric();
    EvalMetric info{key, key, true};
    for (const auto& m : needleMetrics())
        if (m.key == key) info = m;
    const auto nl = static_cast<int>(lengths.size()), nd = static_cast<int>(depths.size());

    auto* title = new QCPTextElement(m_plot, QString("Needle in a haystack · %1 · model %2")
                                                 .arg(info.label)
                                                 .arg(QString::fromStdString(
                                                     m_results.settings()["model"].value("file", std::string()))),
                                     QFont(font().family(), 11, QFont::Bold));
    m_plot->plotLayout()->addElement(0, 0, title);
    auto* panels = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(1, 0, panels);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.01);
    auto* scale = new QCPColorScale(m_plot);
    scale->setBarWidth(14);
    scale->axis()->setLabel(info.label);
    QCPColorGradient g = makeGradient(ColorMapKind::Viridis);
    g.setNanHandling(QCPColorGradient::nhNanColor);
    g.setNanColor(QColor(232, 232, 232));   // not run yet
    scale->setGradient(g);
    auto* group = new QCPMarginGroup(m_plot);
    double lo = 0, hi = 1;
    if (!info.bounded01) {
        hi = 0;
        for (const auto& r : m_results.rows())
            if (auto v = metricValue(r, key)) hi = std::max(hi, *v);
        if (hi <= 0) hi = 1;
    }
    QSharedPointer<QCPAxisTickerText> xt(new QCPAxisTickerText), yt(new QCPAxisTickerText);
    for (int d = 0; d < nd; ++d) xt->addTick(d, fmtNumber(depths[static_cast<size_t>(d)]));
    for (int l = 0; l < nl; ++l) yt->addTick(l, QString::number(lengths[static_cast<size_t>(l)]));
    for (int k = 0; k < labels.size(); ++k) {
        auto* head = new QCPTextElement(m_plot);
        const auto [found, n] = m_results.foundCount(k);
        head->setText(QString("%1\nfound %2 / %3").arg(labels[k]).arg(found).arg(n));
        head->setFont(QFont(font().family(), 10, k == 0 ? QFont::Bold : QFont::Normal));
        panels->addElement(0, k, head);
        auto* rect = new QCPAxisRect(m_plot);
        panels->addElement(1, k, rect);
        rect->setMarginGroup(QCP::msTop | QCP::msBottom, group);
        for (QCPAxis* a : rect->axes()) styleAxis(a);
        QCPAxis* x = rect->axis(QCPAxis::atBottom);
        QCPAxis* y = rect->axis(QCPAxis::atLeft);
        x->setTicker(xt);
        y->setTicker(yt);
        x->setLabel("needle depth (%)");
        if (k == 0) y->setLabel("prompt length (tokens)");
        x->setTickLabelRotation(nd > 6 ? 60 : 0);
        x->grid()->setVisible(false);
        y->grid()->setVisible(false);
        auto* map = new QCPColorMap(x, y);
        map->setInterpolate(false);
        setUnitCells(map, nd, nl);   // whole cells also for a single depth or length
        for (int l = 0; l < nl; ++l)
            for (int d = 0; d < nd; ++d) {
                const auto v = m_results.value(int64_t(l) * nd + d, k, key);
                map->data()->setCell(d, l, v ? *v : std::numeric_limits<double>::quiet_NaN());
            }
        map->setGradient(g);
        map->setDataRange(QCPRange(lo, hi));
        map->setColorScale(scale);
        x->setRange(-0.5, nd - 0.5);
        y->setRange(-0.5, nl - 0.5);
        m_panels.push_back({k, rect});
    }
    panels->addElement(1, static_cast<int>(labels.size()), scale);
    scale->setDataRange(QCPRange(lo, hi));
    scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    styleAxis(scale->axis());
    panels->setRowStretchFactor(0, 0.01);
    m_hint->setText("Hover a cell for its answer; click it to open the document with the needle marked.");
}

void EvaluateView::drawSweep() {
    const QString key = metric();
    EvalMetric info{key, key, true};
    for (const auto& m : sweepMetrics())
        if (m.key == key) info = m;
    std::optional<double> full;
    const std::vector<SweepSeries> series = m_results.curves(key, &full);

    auto* rect = new QCPAxisRect(m_plot);
    auto* legend = new QCPLegend;
    auto* title = new QCPTextElement(m_plot, QString("Budget sweep · %1 items · model %2")
                                                 .arg(m_results.settings()["sweep"]["set"].value("items", 0))
                                                 .arg(QString::fromStdString(
                                                     m_results.settings()["model"].value("file", std::string()))),
                                     QFont(font().family(), 11, QFont::Bold));
    m_plot->plotLayout()->addElement(0, 0, title);
    m_plot->plotLayout()->addElement(1, 0, legend);
    m_plot->plotLayout()->addElement(2, 0, rect);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.01);
    m_plot->plotLayout()->setRowStretchFactor(1, 0.01);
    m_plot->legend = legend;
    legend->setLayer("legend");
    legend->setFillOrder(QCPLegend::foColumnsFirst);
    legend->setBorderPen(Qt::NoPen);
    legend->setSelectableParts(QCPLegend::spItems);
    for (QCPAxis* a : rect->axes()) styleAxis(a);
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    x->setScaleType(QCPAxis::stLogarithmic);
    // Ticks at the budgets that were run (a log ticker would label only the powers of two).
    QSharedPointer<QCPAxisTickerText> bt(new QCPAxisTickerText);
    for (const auto& s : series)
        for (const auto& p : s.points) bt->addTick(p.budget, QString::number(p.budget));
    x->setTicker(bt);
    x->setLabel("budget C: tokens kept per head (log scale)");
    y->setLabel(info.label + "  (line: mean; band: ±1 s.d. over items)");

    double xmin = std::numeric_limits<double>::max(), xmax = 0, ymax = info.bounded01 ? 1.0 : 0.0;
    // The full cache first, in the legend and as a dashed reference across the plot.
    if (full) {
        QCPGraph* ref = m_plot->addGraph(x, y);
        ref->setName(QString("full cache (%1)").arg(*full, 0, 'f', 3));
        ref->setPen(QPen(Qt::black, 1.6, Qt::DashLine));
        ymax = std::max(ymax, *full);
    }
    int ci = 0;
    for (const auto& s : series) {
        const QColor c = kSeries[ci++ % 8];
        QVector<double> bx, mean, lo, hi;
        for (const auto& p : s.points) {
            bx << p.budget;
            mean << p.mean;
            lo << p.lo;
            hi << p.hi;
            xmin = std::min(xmin, p.budget);
            xmax = std::max(xmax, p.budget);
            ymax = std::max(ymax, p.hi);
            m_points.push_back({p.budget, p.mean, p.worstCell, p.worstConfig,
                                QString("%1 C%2: %3 = %4 ± %5 over %6 items\nworst: %7. Click to open it.")
                                    .arg(s.label)
                                    .arg(p.budget)
                                    .arg(key)
                                    .arg(p.mean, 0, 'f', 3)
                                    .arg(p.sd, 0, 'f', 3)
                                    .arg(p.n)
                                    .arg(p.worstId)});
        }
        // The band: translucent, with thin dotted edges so that overlapping bands stay readable.
        QColor edge = c;
        edge.setAlpha(150);
        QCPGraph* lower = m_plot->addGraph(x, y);
        lower->setData(bx, lo, true);
        lower->setPen(QPen(edge, 1, Qt::DotLine));
        lower->removeFromLegend();
        QCPGraph* upper = m_plot->addGraph(x, y);
        upper->setData(bx, hi, true);
        upper->setPen(QPen(edge, 1, Qt::DotLine));
        QColor fill = c;
        fill.setAlpha(28);
        upper->setBrush(fill);
        upper->setChannelFillGraph(lower);
        upper->removeFromLegend();
        QCPGraph* line = m_plot->addGraph(x, y);
        line->setData(bx, mean, true);
        line->setName(s.label);
        line->setPen(QPen(c, 2.2));
        line->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, c, Qt::white, 7));
        m_bands[line] = {lower, upper};
    }
    if (xmax <= 0) xmin = 1, xmax = 2;
    x->setRange(xmin / 1.4, xmax * 1.4);
    y->setRange(0, ymax > 0 ? ymax * 1.08 : 1);
    if (full) {
        auto* line = new QCPItemStraightLine(m_plot);
        line->setClipAxisRect(rect);
        line->point1->setAxes(x, y);
        line->point2->setAxes(x, y);
        line->point1->setCoords(xmin / 1.4, *full);
        line->point2->setCoords(xmax * 1.4, *full);
        line->setPen(QPen(Qt::black, 1.6, Qt::DashLine));
    }
    m_panels.push_back({-1, rect});
    m_hint->setText("Click a legend entry to hide a policy; hover a point for its values; click it to open the "
                    "item that scored worst there.");
}

const json* EvaluateView::rowAt(const QPointF& pos) const {
    if (m_results.task() == "needle") {
        const auto nd = static_cast<int64_t>(m_results.depths().size());
        const auto nl = static_cast<int64_t>(m_results.lengths().size());
        for (const auto& p : m_panels) {
            auto* rect = static_cast<QCPAxisRect*>(p.rect);
            if (!rect->rect().contains(pos.toPoint())) continue;
            const auto d = static_cast<int64_t>(std::lround(rect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x())));
            const auto l = static_cast<int64_t>(std::lround(rect->axis(QCPAxis::atLeft)->pixelToCoord(pos.y())));
            if (d < 0 || d >= nd || l < 0 || l >= nl) return nullptr;
            return m_results.row(l * nd + d, p.config);
        }
        return nullptr;
    }
    if (m_panels.empty()) return nullptr;
    auto* rect = static_cast<QCPAxisRect*>(m_panels.front().rect);
    double best = 14.0;   // pixels
    const CurvePoint* hit = nullptr;
    for (const auto& cp : m_points) {
        const double px = rect->axis(QCPAxis::atBottom)->coordToPixel(cp.x);
        const double py = rect->axis(QCPAxis::atLeft)->coordToPixel(cp.y);
        const double dist = std::hypot(px - pos.x(), py - pos.y());
        if (dist < best) best = dist, hit = &cp;
    }
    return hit ? m_results.row(hit->cell, hit->config) : nullptr;
}

void EvaluateView::onMouseMove(QMouseEvent* event) {
    const QPointF pos = event->position();
    if (m_results.task() == "sweep") {
        auto* rect = m_panels.empty() ? nullptr : static_cast<QCPAxisRect*>(m_panels.front().rect);
        for (const auto& cp : m_points) {
            if (!rect) break;
            const double px = rect->axis(QCPAxis::atBottom)->coordToPixel(cp.x);
            const double py = rect->axis(QCPAxis::atLeft)->coordToPixel(cp.y);
            if (std::hypot(px - pos.x(), py - pos.y()) < 14.0) {
                QToolTip::showText(event->globalPosition().toPoint(), cp.tip, m_plot);
                return;
            }
        }
        QToolTip::hideText();
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
    for (const QString& h : m_haystack->text().split(',', Qt::SkipEmptyParts)) job.haystack << h.trimmed();
    job.setPath = m_set->text().trimmed();
    m_status->setText(m_controller->busy() ? "The cell opens when the running grid finishes or is cancelled."
                                           : "Rebuilding the cell's document…");
    m_controller->openCell(job);
}

}  // namespace studio
