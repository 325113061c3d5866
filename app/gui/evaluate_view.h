// The Evaluate tab: runs a needle-in-a-haystack grid or a budget sweep in its own worker thread
// (EvalController) with progress, time left and Cancel, and draws the rows as they arrive: needle
// heatmaps (length x depth, one per configuration, full cache first; colour = the chosen metric,
// hover = the answer) or sweep curves (metric against a log budget axis, one line per policy with a
// +-1 s.d. band, the full cache as a dashed reference, legend toggles, hover values). Clicking a
// cell or a point asks the main window to open that document (the worst item of a point) with the
// configuration applied and the needle marked. Also shows results files and exports plot and rows.
#pragma once

#include <QElapsedTimer>
#include <QTimer>

#include <functional>
#include <map>
#include <utility>

#include "app/gui/eval_results.h"
#include "app/gui/eval_worker.h"
#include "app/gui/lazy_view.h"

class QComboBox;
class QCustomPlot;
class QCPAbstractPlottable;
class QGroupBox;
class QLabel;
class QLineEdit;
class QMouseEvent;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QStackedWidget;

namespace studio {

class EvaluateView : public LazyView {
    Q_OBJECT
public:
    explicit EvaluateView(QWidget* parent = nullptr);
    ~EvaluateView() override;

    using ModelProvider = std::function<std::pair<QString, snapkv::LoadOptions>()>;
    void setModelProvider(ModelProvider provider) { m_modelProvider = std::move(provider); }

    EvalController* controller() const { return m_controller; }
    const EvalResults& results() const { return m_results; }
    QCustomPlot* plot() const { return m_plot; }

    // The form, for scripts and tests: "needle" | "sweep", and the grid fields as typed.
    void setTask(const QString& task);
    QString task() const;
    void setField(const QString& name, const QString& value);   // lengths, depths, needle, set, policies,
                                                                 // budgets, window, kernel, pooling, gqa,
                                                                 // max_tokens, haystack, out
    QString field(const QString& name) const;                   // the same fields, as shown
    void setMetric(const QString& key);
    QString metric() const;

    // Starts a run from the form (false and *error when the form is invalid or a run is going).
    bool startRun(QString* error = nullptr);
    void cancel();
    bool loadResults(const QString& path, QString* error);
    bool exportPlot(const QString& path, QString* error);
    bool exportData(const QString& path, QString* error);       // .jsonl or .csv

    // Opens a row in the main views (through openCellRequested); the heatmap and curve clicks land here.
    void openRow(const nlohmann::json& row);
    // The row under a point of the plot (heatmap cell, or the worst item of the nearest curve point).
    const nlohmann::json* rowAt(const QPointF& pos) const;
    QString statusText() const;

Q_SIGNALS:
    void openCellRequested(const studio::EvalCellPrompt& cell);
    void errorOccurred(const QString& title, const QString& message);
    void runFinished();        // finished, failed or cancelled

protected:
    void refresh() override;

private:
    void buildForm();
    QLineEdit* fieldEdit(const QString& name) const;   // the form's line edit called name, or null
    void updateFormVisibility();
    void drawNeedle();
    void drawSweep();
    void drawEmpty(const QString& text);
    void onStarted(const QString& outPath, qint64 cells, qint64 present);
    void onRow(const EvalRowPtr& row, const EvalSourcePtr& source);
    void onCellsProgressed(qint64 done, qint64 total);
    void onBusyChanged(bool busy);
    void onMouseMove(QMouseEvent* event);
    void onMouseRelease(QMouseEvent* event);
    void scheduleRedraw();
    void fillMetricCombo();
    void fillFormFromSettings(const QString& path);   // the grid of a loaded results file
    EvalJob jobFromForm() const;    // throws snapkv::Error naming the field
    QString defaultOutPath() const;

    EvalController* m_controller;
    ModelProvider m_modelProvider;
    EvalResults m_results;
    std::map<int64_t, EvalSourcePtr> m_sources;   // prompts of the cells run in this session

    QComboBox* m_task;
    QGroupBox* m_needleBox;
    QGroupBox* m_sweepBox;
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
    QSpinBox* m_maxTokens;
    QLineEdit* m_out;
    QPushButton* m_run;
    QPushButton* m_cancel;
    QProgressBar* m_progress;
    QLabel* m_status;
    QComboBox* m_metric;
    QLabel* m_hint;
    QCustomPlot* m_plot;

    // What the plot shows, for hit tests.
    struct HeatPanel {
        int64_t config = 0;
        void* rect = nullptr;       // QCPAxisRect*
    };
    std::vector<HeatPanel> m_panels;
    struct CurvePoint {
        double x, y;
        int64_t cell, config;
        QString tip;
    };
    std::vector<CurvePoint> m_points;
    std::map<QCPAbstractPlottable*, std::vector<QCPAbstractPlottable*>> m_bands;   // mean -> its band graphs

    QElapsedTimer m_runClock;
    qint64 m_cellsTotal = 0;
    qint64 m_cellsDone = 0;
    qint64 m_cellsRun = 0;
    bool m_cellHadRows = false;
    QString m_runTask;
    QString m_stage;
    QTimer m_redraw;
};

}  // namespace studio
