// The Evaluate tab's form: which evaluation (needle grid, budget sweep or RULER), its grid fields,
// the configurations, the results file, the plotted metric, the Run / Cancel / Open / Export buttons,
// the progress bar and the status line. It turns its fields into an EvalJob (naming the bad field)
// and fills them back from a results file's settings. It runs nothing and draws no plot: the view
// (evaluate_view.h) listens to its signals.
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>

#include <nlohmann/json.hpp>

#include "app/gui/workers/eval_worker.h"

class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace studio {

class EvaluateForm : public QWidget {
    Q_OBJECT
public:
    explicit EvaluateForm(QWidget* parent = nullptr);

    // "needle" | "sweep" | "ruler"
    void setTask(const QString& task);
    QString task() const;
    // lengths, depths, needle, set, policies, budgets, window, kernel, pooling, gqa, max_tokens,
    // haystack, out; RULER: tasks, ruler_lengths, samples, ratios, ruler_budgets (the budgets of a
    // RULER run: none by default, its sizes are ratios)
    void setField(const QString& name, const QString& value);
    QString field(const QString& name) const;
    void setMetric(const QString& key);
    QString metric() const;
    // The metrics of `shownTask` in the combo, keeping the current one when it is among them.
    void fillMetricCombo(const QString& shownTask);

    // The job the fields describe; throws snapkv::Error naming the field (no model included).
    EvalJob job(const QString& modelPath, const snapkv::LoadOptions& load) const;
    QString defaultOutPath() const;  // a new file under the app's data folder
    // The fields of a loaded results file's grid; Run then resumes `path`.
    void fillFromSettings(const nlohmann::json& settings, const QString& path);

    QStringList haystack() const;  // as typed, trimmed; empty = the bundled essays
    QString setPath() const;
    QString outPath() const;
    void setOutPath(const QString& path);

    void setBusy(bool busy);  // Run off, Cancel on, the progress bar shown (indeterminate)
    void setProgress(qint64 done, qint64 total);
    void setStatus(const QString& text);
    QString status() const;
    void setHint(const QString& text);

Q_SIGNALS:
    void runRequested();
    void cancelRequested();
    void openRequested(const QString& path);
    void exportPlotRequested(const QString& path);
    void exportDataRequested(const QString& path);
    void taskChanged();
    void metricChosen();

private:
    QLineEdit* fieldEdit(const QString& name) const;  // the line edit called name, or null
    // The grid's fields into job, checked (se::ParamError naming core's parameters).
    void readGrid(EvalJob& job) const;
    void updateVisibility();

    QComboBox* m_task;
    QGroupBox* m_needleBox;
    QGroupBox* m_sweepBox;
    QGroupBox* m_rulerBox;
    QLineEdit* m_rulerTasks;
    QLineEdit* m_rulerLengths;
    QSpinBox* m_samples;
    QLineEdit* m_ratios;
    QLineEdit* m_rulerBudgets;
    QWidget* m_budgetsLabel;
    QWidget* m_tokensLabel;
    QLineEdit* m_lengths;
    QLineEdit* m_depths;
    QComboBox* m_needle;
    QLineEdit* m_haystack;
    QLineEdit* m_set;
    QLineEdit* m_policies;
    QLineEdit* m_budgets;
    QLineEdit* m_windows;
    QLineEdit* m_kernels;
    QLineEdit* m_poolings;
    QLineEdit* m_gqa;
    QLineEdit* m_decodeBudgets;  // decoding budgets (0: off)
    QLineEdit* m_decodeIntervals;
    QSpinBox* m_maxTokens;
    QLineEdit* m_out;
    QPushButton* m_run;
    QPushButton* m_cancel;
    QProgressBar* m_progress;
    QLabel* m_status;
    QComboBox* m_metric;
    QLabel* m_hint;
};

}  // namespace studio
