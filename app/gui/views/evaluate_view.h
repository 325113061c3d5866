// The Evaluate tab: runs a needle-in-a-haystack grid, a budget sweep or RULER's synthetic tasks in
// its own worker thread (EvalController) with progress, time left and Cancel, and draws the rows as
// they arrive: needle heatmaps, sweep curves, or RULER's leaderboard beside its task x policy table
// (evaluate_plots.h, evaluate_ruler_table.h). Clicking a cell, a point or a table entry asks the
// main window to open that document (the worst item or sample there) with the configuration
// applied and the needle(s) marked. Also shows results files and exports plot and rows. Its parts
// live in their own files: the form (evaluate_form.h), the runner glue (evaluate_run.cpp), the
// plots and the hit tests (evaluate_hits.h); this file wires them together.
#pragma once

#include <QElapsedTimer>
#include <QTimer>

#include <functional>
#include <map>
#include <utility>

#include "app/gui/state/eval_results.h"
#include "app/gui/views/evaluate_hits.h"
#include "app/gui/views/lazy_view.h"
#include "app/gui/workers/eval_worker.h"

class QCustomPlot;
class QMouseEvent;

namespace studio {

class EvaluateForm;
class RulerPanel;

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
    RulerPanel* rulerPanel() const { return m_rulerPanel; }  // shown for RULER results only

    // The form, for scripts and tests: "needle" | "sweep" | "ruler", and the fields as typed
    // (evaluate_form.h lists them).
    void setTask(const QString& task);
    QString task() const;
    void setField(const QString& name, const QString& value);  // lengths, depths, needle, set, policies,
                                                               // budgets, window, kernel, pooling, gqa,
                                                               // max_tokens, haystack, out
    QString field(const QString& name) const;
    void setMetric(const QString& key);
    QString metric() const;

    // Starts a run from the form (false and *error when the form is invalid or a run is going).
    bool startRun(QString* error = nullptr);
    void cancel();
    bool loadResults(const QString& path, QString* error);
    bool exportPlot(const QString& path, QString* error);
    bool exportData(const QString& path, QString* error);  // .jsonl or .csv

    // Opens a row in the main views (through openCellRequested); heatmap, curve and table clicks land here.
    void openRow(const nlohmann::json& row);
    // The row under a point of the plot (heatmap cell, or the worst item of the nearest curve point).
    const nlohmann::json* rowAt(const QPointF& pos) const;
    QString statusText() const;

Q_SIGNALS:
    void openCellRequested(const studio::EvalCellPrompt& cell);
    void errorOccurred(const QString& title, const QString& message);
    void runFinished();  // finished, failed or cancelled

protected:
    void refresh() override;

private:
    void connectController();  // evaluate_run.cpp
    void onStarted(const QString& outPath, qint64 cells, qint64 present);
    void onRow(const EvalRowPtr& row, const EvalSourcePtr& source);
    void onCellsProgressed(qint64 done, qint64 total);
    void onBusyChanged(bool busy);
    void onMouseMove(QMouseEvent* event);
    void onMouseRelease(QMouseEvent* event);
    void scheduleRedraw();
    void fillMetricCombo();
    EvalJob jobFromForm() const;  // throws snapkv::Error naming the field

    EvalController* m_controller;
    ModelProvider m_modelProvider;
    EvalResults m_results;
    std::map<int64_t, EvalSourcePtr> m_sources;  // prompts of the cells run in this session

    EvaluateForm* m_form;
    QCustomPlot* m_plot;
    RulerPanel* m_rulerPanel;
    PlotHits m_hits;  // what the plot shows, for the mouse

    QElapsedTimer m_runClock;
    qint64 m_cellsTotal = 0;
    qint64 m_cellsDone = 0;
    qint64 m_cellsRun = 0;
    bool m_cellHadRows = false;
    QString m_runTask;
    QString m_stage;
    QString m_plan;  // the worker's plan of the running grid, shown until its first cell finishes
    QTimer m_redraw;
};

}  // namespace studio
