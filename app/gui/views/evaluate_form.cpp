// EvaluateForm: the Evaluate tab's controls (see evaluate_form.h).
#include "app/gui/views/evaluate_form.h"

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
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStyle>
#include <QVBoxLayout>

#include <algorithm>
#include <map>
#include <tuple>

#include "app/gui/state/eval_results.h"
#include "app/gui/state/eval_ruler.h"
#include "core/eval/param_error.h"
#include "core/eval/ruler_runner.h"
#include "core/eval/ruler_tasks.h"
#include "core/snapkv/snapkv_params.h"

namespace studio {

namespace se = snapkv::eval;
using json = nlohmann::json;

namespace {

QString fmtNumber(double v) { return QString::number(v, 'g', 6); }

// The form's label of a grid parameter core names (se::ParamError), so that a refused field reads
// as the user sees it: "W: 'x' is not a whole number", "K: 4 must be odd ...".
std::string fieldLabel(const std::string& param) {
    static const std::map<std::string, std::string> labels = {{"lengths", "Lengths"},
                                                              {"depths", "Depths"},
                                                              {"policies", "Policies"},
                                                              {"tasks", "Tasks"},
                                                              {"ratios", "Ratios"},
                                                              {"budgets", "Budgets"},
                                                              {"windows", "W"},
                                                              {"kernels", "K"},
                                                              {"poolings", "pool"},
                                                              {"gqa", "GQA"},
                                                              {"decode_budgets", "decoding budgets"},
                                                              {"decode_intervals", "every"}};
    const auto it = labels.find(param);
    return it != labels.end() ? it->second : param;
}

template <typename T>
QString numberList(const std::vector<T>& v) {
    QStringList l;
    for (T x : v) l << fmtNumber(static_cast<double>(x));
    return l.join(',');
}

QLineEdit* lineEdit(const QString& text, const QString& tip) {
    auto* e = new QLineEdit(text);
    e->setToolTip(tip);
    return e;
}

}  // namespace

EvaluateForm::EvaluateForm(QWidget* parent) : QWidget(parent) {
    setObjectName("evaluateForm");
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(0, 0, 0, 0);

    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel("Evaluate:"));
    m_task = new QComboBox;
    m_task->addItem("Needle in a haystack (length x depth)", "needle");
    m_task->addItem("Budget sweep over a question set", "sweep");
    m_task->addItem("RULER synthetic tasks (score vs compression ratio)", "ruler");
    top->addWidget(m_task);
    m_run = new QPushButton(style()->standardIcon(QStyle::SP_MediaPlay), "Run grid");
    m_run->setObjectName("evalRunButton");
    m_run->setToolTip(
        "One prefill per document; the full cache and every configuration answer from it. "
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
    // The needles of the bundled needles file (datasets/needles.jsonl); a results file made with
    // another needles file adds its own (fillFromSettings).
    m_needle->addItem("pass key (5 digits)", "passkey");
    m_needle->addItem("fact sentence", "fact");
    m_needle->addItem("pass key (base models)", "passkey_base");
    // Sized by a short name, not its longest item: a needle from another file must not widen the
    // form (and with it the window's minimum width).
    m_needle->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_needle->setMinimumContentsLength(10);
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
    m_rulerBox = new QGroupBox("RULER");
    auto* rf = new QFormLayout(m_rulerBox);
    QStringList taskNames;
    for (const auto& t : se::ruler_tasks()) taskNames << QString::fromStdString(t.name);
    const se::RulerDefaults ruler;
    m_rulerTasks = lineEdit(QString::fromStdString(ruler.tasks),
                            "all, or a comma list of " + taskNames.join(", ") +
                                ". The QA tasks are left out: they need SQuAD and HotpotQA.");
    m_rulerLengths = lineEdit(numberList(ruler.lengths),
                              "Lengths in tokens, comma separated: prompt + the task's answer tokens, as "
                              "RULER's max_seq_length; at most the model's context");
    m_samples = new QSpinBox;
    m_samples->setRange(1, 10000);
    m_samples->setValue(static_cast<int>(ruler.samples));
    m_samples->setToolTip("Samples per task and length, each generated from its own seed");
    m_ratios = lineEdit(numberList(ruler.ratios),
                        "kvpress's compression ratios: the fraction of the cache removed, "
                        "0 <= r < 1 (empty for none)");
    m_rulerBudgets = lineEdit(numberList(ruler.budgets),
                              "Fixed budgets C as well (tokens kept per head, window included); empty for none");
    m_rulerBudgets->setPlaceholderText("none");
    auto* rulerRow = new QHBoxLayout;
    rulerRow->addWidget(m_rulerLengths, 2);
    rulerRow->addWidget(new QLabel("samples"));
    rulerRow->addWidget(m_samples, 1);
    auto* sizeRow = new QHBoxLayout;
    sizeRow->addWidget(m_ratios, 3);
    sizeRow->addWidget(new QLabel("budgets"));
    sizeRow->addWidget(m_rulerBudgets, 2);
    rf->addRow("Tasks", m_rulerTasks);
    rf->addRow("Lengths", rulerRow);
    rf->addRow("Ratios", sizeRow);
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
    m_decodeBudgets = lineEdit("0",
                               "Decoding budgets: compress while generating to this many tokens per head (0: off); "
                               "a budget 0 above means decoding compression alone");
    m_decodeIntervals = lineEdit("32", "Generated tokens between decoding compression events");
    auto* row1 = new QHBoxLayout;
    row1->addWidget(m_policies, 2);
    auto* budgetsLabel = new QLabel("budgets");
    m_budgetsLabel = budgetsLabel;
    row1->addWidget(budgetsLabel);
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
    m_tokensLabel = new QLabel("tokens");
    row2->addWidget(m_tokensLabel);
    row2->addWidget(m_maxTokens);
    auto* row3 = new QHBoxLayout;
    row3->addWidget(m_decodeBudgets, 1);
    row3->addWidget(new QLabel("every"));
    row3->addWidget(m_decodeIntervals, 1);
    row3->addWidget(new QLabel("tokens"));
    cf->addRow("Policies", row1);
    cf->addRow("Options", row2);
    cf->addRow("Decoding", row3);
    auto* outBox = new QGroupBox("Results file");
    auto* of = new QFormLayout(outBox);
    m_out = lineEdit("",
                     "JSON Lines results; an existing file of the same grid is resumed. Empty: a new file "
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
    grid->addWidget(m_rulerBox, 3);
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
        updateVisibility();
        Q_EMIT taskChanged();
    });
    connect(m_metric, qOverload<int>(&QComboBox::activated), this, [this] { Q_EMIT metricChosen(); });
    connect(m_run, &QPushButton::clicked, this, [this] { Q_EMIT runRequested(); });
    connect(m_cancel, &QPushButton::clicked, this, [this] { Q_EMIT cancelRequested(); });
    connect(open, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, "Open evaluation results", QFileInfo(defaultOutPath()).path(), "Results (*.jsonl);;All files (*)");
        if (!path.isEmpty()) Q_EMIT openRequested(path);
    });
    connect(exportPlotButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, "Export plot", "evaluation.png",
                                                          "PNG (*.png);;SVG (*.svg);;PDF (*.pdf)");
        if (!path.isEmpty()) Q_EMIT exportPlotRequested(path);
    });
    connect(exportDataButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, "Export rows", "evaluation.csv",
                                                          "CSV (*.csv);;JSON Lines (*.jsonl)");
        if (!path.isEmpty()) Q_EMIT exportDataRequested(path);
    });
    connect(browseSet, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, "Question set", QString(), "JSON Lines (*.jsonl)");
        if (!path.isEmpty()) m_set->setText(path);
    });
    connect(browseOut, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(
            this, "Results file", defaultOutPath(), "JSON Lines (*.jsonl)", nullptr, QFileDialog::DontConfirmOverwrite);
        if (!path.isEmpty()) m_out->setText(path);
    });
    updateVisibility();
}

void EvaluateForm::updateVisibility() {
    const QString t = task();
    m_needleBox->setVisible(t == "needle");
    m_sweepBox->setVisible(t == "sweep");
    m_rulerBox->setVisible(t == "ruler");
    // RULER sizes are in its own box, and each task answers in its own number of tokens.
    for (QWidget* w : std::initializer_list<QWidget*>{m_budgetsLabel, m_budgets, m_tokensLabel, m_maxTokens})
        w->setVisible(t != "ruler");
}

void EvaluateForm::fillMetricCombo(const QString& shownTask) {
    const QString current = m_metric->currentData().toString();
    m_metric->clear();
    for (const auto& m : shownTask == "sweep"   ? sweepMetrics()
                         : shownTask == "ruler" ? rulerMetrics()
                                                : needleMetrics())
        m_metric->addItem(m.label, m.key);
    const int i = m_metric->findData(current);
    if (i >= 0) m_metric->setCurrentIndex(i);
}

void EvaluateForm::setTask(const QString& t) { m_task->setCurrentIndex(std::max(0, m_task->findData(t))); }
QString EvaluateForm::task() const { return m_task->currentData().toString(); }

QLineEdit* EvaluateForm::fieldEdit(const QString& name) const {
    const std::map<QString, QLineEdit*> edits = {{"lengths", m_lengths},
                                                 {"depths", m_depths},
                                                 {"set", m_set},
                                                 {"policies", m_policies},
                                                 {"budgets", m_budgets},
                                                 {"window", m_windows},
                                                 {"kernel", m_kernels},
                                                 {"pooling", m_poolings},
                                                 {"gqa", m_gqa},
                                                 {"decode_budget", m_decodeBudgets},
                                                 {"decode_interval", m_decodeIntervals},
                                                 {"haystack", m_haystack},
                                                 {"out", m_out},
                                                 {"tasks", m_rulerTasks},
                                                 {"ruler_lengths", m_rulerLengths},
                                                 {"ratios", m_ratios},
                                                 {"ruler_budgets", m_rulerBudgets}};
    const auto it = edits.find(name);
    return it != edits.end() ? it->second : nullptr;
}

void EvaluateForm::setField(const QString& name, const QString& value) {
    if (QLineEdit* e = fieldEdit(name)) e->setText(value);
    else if (name == "max_tokens") m_maxTokens->setValue(value.toInt());
    else if (name == "samples") m_samples->setValue(value.toInt());
    else if (name == "needle") m_needle->setCurrentIndex(std::max(0, m_needle->findData(value)));
}

QString EvaluateForm::field(const QString& name) const {
    if (QLineEdit* e = fieldEdit(name)) return e->text();
    if (name == "max_tokens") return QString::number(m_maxTokens->value());
    if (name == "samples") return QString::number(m_samples->value());
    if (name == "needle") return m_needle->currentData().toString();
    return QString();
}

void EvaluateForm::setMetric(const QString& key) {
    const int i = m_metric->findData(key);
    if (i >= 0) m_metric->setCurrentIndex(i);
}

QString EvaluateForm::metric() const { return m_metric->currentData().toString(); }

QString EvaluateForm::defaultOutPath() const {
    QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    if (dir.isEmpty()) dir = QDir::homePath() + "/.snapkv-studio";
    return dir + "/evaluations/" + task() + "-" + QDateTime::currentDateTime().toString("yyyyMMdd-HHmmss") + ".jsonl";
}

QStringList EvaluateForm::haystack() const {
    QStringList out;
    for (const QString& h : m_haystack->text().split(',', Qt::SkipEmptyParts)) out << h.trimmed();
    return out;
}

QString EvaluateForm::setPath() const { return m_set->text().trimmed(); }
QString EvaluateForm::outPath() const { return m_out->text(); }
void EvaluateForm::setOutPath(const QString& path) { m_out->setText(path); }

EvalJob EvaluateForm::job(const QString& modelPath, const snapkv::LoadOptions& load) const {
    EvalJob job;
    job.task = task();
    job.modelPath = modelPath;
    job.load = load;
    if (job.modelPath.isEmpty()) throw snapkv::InputError("no model: open a model first (File > Open Model)");
    try {
        readGrid(job);
    } catch (const se::ParamError& e) {
        throw snapkv::InputError(e.text(fieldLabel));
    }
    job.maxTokens = m_maxTokens->value();
    job.klSteps = job.maxTokens;
    if (job.task == "ruler") job.klSteps = se::RunOptions{}.kl_steps;  // as `snapkv ruler`
    job.outPath = m_out->text().trimmed();
    return job;
}

void EvaluateForm::readGrid(EvalJob& job) const {
    if (!m_lengths->text().trimmed().isEmpty())
        job.lengths = se::parse_int_list(m_lengths->text().toStdString(), "lengths");
    job.depths = se::parse_number_list(m_depths->text().toStdString(), "depths");
    job.needle = m_needle->currentData().toString();
    job.haystack = haystack();
    job.setPath = setPath();
    job.axes.policies = se::parse_name_list(m_policies->text().toStdString(), "policies");
    if (job.task == "ruler") {
        job.rulerTasks = m_rulerTasks->text().trimmed();
        se::parse_ruler_tasks(job.rulerTasks.toStdString());  // names checked now
        job.rulerLengths = se::parse_int_list(m_rulerLengths->text().toStdString(), "lengths");
        job.samples = m_samples->value();
        if (!m_ratios->text().trimmed().isEmpty())
            job.axes.ratios = se::parse_number_list(m_ratios->text().toStdString(), "ratios");
        job.axes.budgets.clear();
        if (!m_rulerBudgets->text().trimmed().isEmpty())
            job.axes.budgets = se::parse_int_list(m_rulerBudgets->text().toStdString(), "budgets");
    } else {
        job.axes.budgets = se::parse_int_list(m_budgets->text().toStdString(), "budgets");
    }
    job.axes.windows = se::parse_int_list(m_windows->text().toStdString(), "windows");
    job.axes.kernels = se::parse_int_list(m_kernels->text().toStdString(), "kernels");
    job.axes.poolings = se::parse_name_list(m_poolings->text().toStdString(), "poolings");
    job.axes.gqa = se::parse_name_list(m_gqa->text().toStdString(), "gqa");
    job.axes.decode_budgets = se::parse_int_list(m_decodeBudgets->text().toStdString(), "decode_budgets");
    job.axes.decode_intervals = se::parse_int_list(m_decodeIntervals->text().toStdString(), "decode_intervals");
    se::expand_configs(job.axes);  // validate now
}

void EvaluateForm::fillFromSettings(const json& st, const QString& path) {
    auto joined = [](const std::vector<QString>& v) {
        QStringList l;
        for (const QString& s : v)
            if (!l.contains(s)) l << s;
        return l.join(',');
    };
    std::vector<QString> policies, budgets, ratios, windows, kernels, poolings, gqa, dbudgets{"0"}, dintervals;
    for (const auto& c : st["configs"]) {
        if (c.value("policy", std::string()) == "full") continue;
        policies.push_back(QString::fromStdString(c["policy"].get<std::string>()));
        // A configuration's size is a budget, or a compression ratio with a null budget.
        if (c["budget"].is_number()) budgets.push_back(QString::number(c["budget"].get<int64_t>()));
        if (c.contains("ratio") && c["ratio"].is_number()) ratios.push_back(fmtNumber(c["ratio"].get<double>()));
        // Presses that score every position (knorm, keydiff, expected_attention) keep no window: null.
        if (c["window"].is_number()) windows.push_back(QString::number(c["window"].get<int64_t>()));
        if (c["kernel"].is_number()) kernels.push_back(QString::number(c["kernel"].get<int64_t>()));
        if (c["pooling"].is_string()) poolings.push_back(QString::fromStdString(c["pooling"].get<std::string>()));
        if (c["gqa"].is_string()) gqa.push_back(QString::fromStdString(c["gqa"].get<std::string>()));
        // Decoding compression: its budget and interval where on; prefill off is a budget 0.
        if (c.contains("decode_budget") && c["decode_budget"].is_number()) {
            dbudgets.push_back(QString::number(c["decode_budget"].get<int64_t>()));
            dintervals.push_back(QString::number(c.value("decode_interval", int64_t(32))));
        }
        if (c.contains("prefill_compression") && c["prefill_compression"] == false) budgets.push_back("0");
    }
    const bool ruler = st.contains("ruler");
    if (!policies.empty()) {
        m_policies->setText(joined(policies));
        if (ruler) {
            m_ratios->setText(joined(ratios));
            m_rulerBudgets->setText(joined(budgets));
        } else if (!budgets.empty()) {
            m_budgets->setText(joined(budgets));
        }
        // Options no configuration reads (null in every one) keep the field's value: an empty
        // field would refuse the Run that resumes the file.
        if (!windows.empty()) m_windows->setText(joined(windows));
        if (!kernels.empty()) m_kernels->setText(joined(kernels));
        if (!poolings.empty()) m_poolings->setText(joined(poolings));
        if (!gqa.empty()) m_gqa->setText(joined(gqa));
        // Only configurations with decoding compression name it: "0" (off) stays first when the
        // grid had configurations without it.
        const bool mixed = std::any_of(st["configs"].begin(), st["configs"].end(), [](const auto& c) {
            return c.value("policy", std::string()) != "full" && !c.contains("decode_budget");
        });
        if (!mixed && dbudgets.size() > 1) dbudgets.erase(dbudgets.begin());
        m_decodeBudgets->setText(joined(dbudgets));
        if (!dintervals.empty()) m_decodeIntervals->setText(joined(dintervals));
    }
    m_maxTokens->setValue(st["generation"].value("max_tokens", 32));
    if (st.contains("needle")) {
        std::vector<QString> l, d;
        for (const auto& v : st["needle"]["lengths"]) l.push_back(QString::number(v.get<int64_t>()));
        for (const auto& v : st["needle"]["depths"]) d.push_back(fmtNumber(v.get<double>()));
        m_lengths->setText(joined(l));
        m_depths->setText(joined(d));
        // The run's needle (settings "needle": {"needle": {"name": ...}}, NeedleTask::settings); one
        // the combo does not list came from another needles file and is added under its name.
        const QString name = QString::fromStdString(st["needle"]["needle"].value("name", std::string()));
        if (!name.isEmpty()) {
            int i = m_needle->findData(name);
            if (i < 0) {
                m_needle->addItem(name, name);
                i = m_needle->count() - 1;
            }
            m_needle->setCurrentIndex(i);
        }
    }
    if (ruler) {
        const json& r = st["ruler"];
        std::vector<QString> tasks, lengths;
        for (const auto& t : r.value("tasks", json::array()))
            tasks.push_back(QString::fromStdString(t.get<std::string>()));
        for (const auto& l : r.value("lengths", json::array())) lengths.push_back(QString::number(l.get<int64_t>()));
        std::vector<QString> all;  // "all" only in RULER's order: the order is part of the settings
        for (const auto& t : se::ruler_tasks()) all.push_back(QString::fromStdString(t.name));
        m_rulerTasks->setText(tasks == all ? QString("all") : joined(tasks));
        m_rulerLengths->setText(joined(lengths));
        m_samples->setValue(static_cast<int>(r.value("samples", se::RulerDefaults{}.samples)));
    }
    m_out->setText(path);  // Run resumes this file
}

void EvaluateForm::setBusy(bool busy) {
    m_run->setEnabled(!busy);
    m_cancel->setEnabled(busy);
    m_progress->setVisible(busy);
    if (busy) m_progress->setRange(0, 0);
}

void EvaluateForm::setProgress(qint64 done, qint64 total) {
    m_progress->setRange(0, static_cast<int>(std::max<qint64>(total, 1)));
    m_progress->setValue(static_cast<int>(done));
    m_progress->setFormat(QString("%1/%2 cells").arg(done).arg(total));
}

void EvaluateForm::setStatus(const QString& text) { m_status->setText(text); }
QString EvaluateForm::status() const { return m_status->text(); }
void EvaluateForm::setHint(const QString& text) { m_hint->setText(text); }

}  // namespace studio
