// The worker that owns the snapkv::Session on its own QThread. The GUI queues jobs with
// QMetaObject::invokeMethod and hears back through signals carrying values; every exception is
// caught here and becomes failed(task, message) or cancelled(task). No widgets, no GUI state.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

#include "app/gui/state/analysis_state.h"
#include "app/gui/state/gui_types.h"
#include "app/gui/state/param_state.h"
#include "core/session/run_forecast.h"

namespace studio {

struct LoadJob {
    QString path;
    snapkv::LoadOptions options;
};

struct PrefillJob {
    snapkv::PromptSpec prompt;
    snapkv::PrefillSettings settings;
    bool truncateToFit = false;  // cut the document so the prompt fits the model's context
    int64_t reserveTokens = 0;   // room left in the context for generation afterwards
    int64_t maxTokens = 0;       // > 0: with truncateToFit, cut to at most this many tokens (memory)
};

struct RetuneJob {
    quint64 id = 0;
    ParamState params;
    int64_t layer = 0;  // focused head, whose attention rows come back too
    int64_t head = 0;
    QString overlapPolicy;  // non-empty: also select with this policy (overview overlap)
};

struct AttentionJob {
    quint64 id = 0;
    int64_t layer = 0;
    int64_t head = 0;  // selection head (KV head in kv-head mode)
    int64_t window = 0;
    bool queryAgnostic = false;
    snapkv::GqaMode gqa = snapkv::GqaMode::QueryHead;
};

// Load (optional) -> prefill (optional) -> retune: the Run button.
struct RunJob {
    quint64 id = 0;
    bool load = false;
    LoadJob loadJob;
    bool prefill = false;
    PrefillJob prefillJob;
    RetuneJob retune;
    CancelPtr cancel;
};

struct CompareJob {
    quint64 id = 0;
    ParamState params;
    snapkv::GenerationSettings generation;
    CancelPtr cancel;
};

class SessionWorker : public QObject {
    Q_OBJECT
public:
    SessionWorker();
    ~SessionWorker() override;

    // Job entry points; call them on the worker's thread (queued).
    void loadModel(const LoadJob& job, const CancelPtr& cancel);
    void run(const RunJob& job);
    void retune(const RetuneJob& job);
    void fetchAttention(const AttentionJob& job);
    void compare(const CompareJob& job);
    // Destroys the session on this thread (LibTorch thread-local state belongs here).
    void shutdown();

Q_SIGNALS:
    void modelLoaded(const snapkv::ModelInfo& info);
    void prefillFinished(const snapkv::PrefillSummary& summary, const QString& note);
    // A run's prefill has finished a layer: its selections with the run's parameters (and the
    // overlap policy's), before the prefill commits. Null once the run is over, whether the prefill
    // committed, failed or was cancelled.
    void layerPreviewed(const studio::LayerPreviewPtr& layer);
    void retuned(const studio::RetunePtr& result);
    void attentionFetched(quint64 id, const studio::AttentionPtr& rows);
    void compared(quint64 id, const studio::ComparePtr& result);
    void runFinished(quint64 id);
    void progressed(const QString& stage, qint64 done, qint64 total);
    void failed(const QString& task, const QString& message);
    void cancelled(const QString& task);
    // The prompt does not fit the model's context; the GUI may offer to truncate.
    void contextExceeded(qint64 nTokens, qint64 nCtx, qint64 reserve);
    // Before a prefill: what it will take (run_forecast.h). A run that does not fit the free memory
    // stops there with runDoesNotFit (its cheaper choices inside) instead of failing in the prefill.
    void forecastMade(const snapkv::RunForecast& forecast);
    void runDoesNotFit(const snapkv::RunForecast& forecast);

private:
    snapkv::Session& session();
    snapkv::ProgressFn progressFn();
    void doLoad(const LoadJob& job, const CancelPtr& cancel);
    bool doPrefill(const PrefillJob& job, const CancelPtr& cancel);  // false: stopped (context)
    // The preview of a run's prefill: each layer's selection with the retune's parameters, emitted
    // as layerPreviewed.
    snapkv::PrefillPreview previewFor(const RetuneJob& retune);
    RetunePtr doRetune(const RetuneJob& job);
    AttentionPtr doAttention(const AttentionJob& job);
    // Runs fn, turning exceptions into failed/cancelled; returns whether fn completed.
    template <typename Fn>
    bool guarded(const QString& task, Fn&& fn);

    std::unique_ptr<snapkv::Session> m_session;
    QElapsedTimer m_progressClock;
};

}  // namespace studio
