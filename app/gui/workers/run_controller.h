// The GUI side of the worker thread: starts the thread, queues jobs, decides what a Run needs
// (load? prefill? or only a retune), coalesces bursts of retunes and head changes so that only the
// newest request is computed, tracks long jobs for the progress bar and Cancel, and writes the
// results into AnalysisState. It owns no widgets and never blocks the GUI thread (except in
// shutdown(), which cancels first and then waits for the worker to return).
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QThread>

#include <deque>
#include <map>
#include <optional>

#include "app/gui/state/analysis_state.h"
#include "app/gui/workers/session_worker.h"
#include "core/session/run_plan.h"

namespace studio {

struct RunRequest {
    QString modelPath;
    snapkv::LoadOptions load;
    snapkv::PromptSpec prompt;
    // The app retunes every policy live: its prefill records what any policy of the table needs.
    snapkv::PrefillSettings prefill = snapkv::plan_all_policies();
    ParamState params;
    bool truncateToFit = false;
    int64_t reserveTokens = 0;  // generation room to keep in the context
    int64_t maxTokens = 0;      // > 0: cut the document so the prompt has at most this many tokens
};

class RunController : public QObject {
    Q_OBJECT
public:
    explicit RunController(AnalysisState* state, QObject* parent = nullptr);
    ~RunController() override;

    void loadModel(const QString& path, const snapkv::LoadOptions& opts);
    void run(const RunRequest& request);
    void retune(const ParamState& params);
    // A retune for the user's edit: as retune(), and retuneTimed follows once the views have
    // redrawn its result. msBefore: from the first edit to this call (the panel's debounce).
    void retuneEdit(const ParamState& params, double msBefore);
    // Where the views look once the next run has finished (a session's focus, an evaluation
    // cell's needle): the focused head, or with leastKept the head that kept least of the marks
    // labelled "needle", and the spans to mark.
    struct RunFocus {
        int layer = -1;
        int head = -1;
        std::vector<AnalysisState::MarkedSpan> marks;
        bool leastKept = false;
    };
    void focusAfterRun(RunFocus focus) { m_runFocus = std::move(focus); }
    void compare(const snapkv::GenerationSettings& generation);
    // The last run() again with one of its forecast's cheaper choices: another cache type (the
    // session switches it at the prefill, no reload) or the document cut to the choice's tokens.
    void rerunWith(const snapkv::CheaperChoice& choice);
    void cancel();
    // Cancel everything and wait for the worker thread to finish; idempotent.
    void shutdown();

    bool busy() const { return !m_long.empty(); }
    // A retune is computing or waiting: retuneApplied or retuneFailed will follow.
    bool retunePending() const { return m_retuneInFlight != 0 || m_retunePending.has_value(); }
    // Whether the next run() would prefill again (prompt, model or capture settings changed).
    bool needsPrefill(const RunRequest& request) const;
    QString overlapPolicy() const;  // the overlap policy the overview currently needs, or ""
    double lastSelectMs() const { return m_lastSelectMs; }

Q_SIGNALS:
    void busyChanged(bool busy, const QString& task);
    void progressed(const QString& stage, qint64 done, qint64 total);
    void failed(const QString& task, const QString& message);  // worth a dialog
    void retuneFailed(const QString& message);                 // worth a status line
    void cancelled(const QString& task);
    void contextExceeded(qint64 nTokens, qint64 nCtx, qint64 reserve);
    // Before a run's prefill: what it will take. runDoesNotFit: it would not fit the free memory,
    // so it did not start; the forecast lists the cheaper choices (rerunWith takes one).
    void forecastMade(const snapkv::RunForecast& forecast);
    void runDoesNotFit(const snapkv::RunForecast& forecast);
    void noteIssued(const QString& note);  // e.g. "document truncated"
    void modelLoaded();
    void runFinished();
    void compareFinished();
    // A retune's result has been handed to the state: elapsed ms since it was sent to the worker,
    // and the parameters it was computed for.
    void retuneApplied(double ms, const studio::ParamState& params);
    // The result of the last retuneEdit has been drawn: selectMs in the worker, totalMs from the
    // first edit (debounce included) to the visible view redrawn.
    void retuneTimed(double selectMs, double totalMs);

private:
    enum class LongKind { Load, Run, Compare };
    void startLong(LongKind kind, const QString& task);
    void endLong();
    void sendRetune(const ParamState& params);
    void requestAttention();
    void timeEdit(const ParamState& applied);
    void applyRunFocus();
    RetuneJob makeRetuneJob(const ParamState& params);
    QString promptKey(const RunRequest& r) const;

    void onModelLoaded(const snapkv::ModelInfo& info);
    void onPrefillFinished(const snapkv::PrefillSummary& summary, const QString& note);
    void onRetuned(const RetunePtr& result);
    void onAttentionFetched(quint64 id, const AttentionPtr& rows);
    void onCompared(quint64 id, const ComparePtr& result);
    void onRunFinished(quint64 id);
    void onFailed(const QString& task, const QString& message);
    void onCancelled(const QString& task);
    void onContextExceeded(qint64 nTokens, qint64 nCtx, qint64 reserve);
    void onRunDoesNotFit(const snapkv::RunForecast& forecast);

    AnalysisState* m_state;
    QThread m_thread;
    SessionWorker* m_worker = nullptr;
    bool m_shutDown = false;
    quint64 m_nextId = 1;

    std::deque<LongKind> m_long;       // long jobs queued on the worker, in order
    std::vector<CancelPtr> m_cancels;  // cancel flags of those jobs
    // What the session will hold once every queued job has run: decides whether a new run must
    // load or prefill. A failed or cancelled load/prefill clears them, so the next run redoes it.
    QString m_queuedModel;    // model path + device/dtype
    QString m_queuedPrefill;  // prompt + capture settings

    // Retune coalescing: one in flight, the newest waiting.
    quint64 m_retuneInFlight = 0;
    std::optional<ParamState> m_retunePending;
    std::map<quint64, ParamState> m_retuneParams;
    std::map<quint64, QElapsedTimer> m_retuneClock;
    // Attention coalescing.
    quint64 m_attentionInFlight = 0;
    bool m_attentionPending = false;
    ParamState m_compareParams;
    double m_lastSelectMs = 0;
    // The edit being timed (retuneEdit), until its result is drawn.
    std::optional<ParamState> m_editParams;
    double m_editMsBefore = 0;
    QElapsedTimer m_editClock;
    RunFocus m_runFocus;
    std::optional<RunRequest> m_lastRun;  // for rerunWith
};

}  // namespace studio
