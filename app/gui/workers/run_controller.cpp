// RunController: job bookkeeping between the GUI thread and the SessionWorker.
#include "app/gui/workers/run_controller.h"

#include <QMetaObject>
#include <QTimer>

#include "app/gui/workers/eval_worker.h"

namespace studio {

namespace {

QString optionsKey(const snapkv::LoadOptions& o) {
    return QString::fromStdString(o.device + "/" + o.dtype + "/" + o.weights);
}

}  // namespace

RunController::RunController(AnalysisState* state, QObject* parent) : QObject(parent), m_state(state) {
    registerMetaTypes();
    m_thread.setObjectName("snapkv-session");
    m_worker = new SessionWorker;
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    connect(m_worker, &SessionWorker::modelLoaded, this, &RunController::onModelLoaded);
    connect(m_worker, &SessionWorker::prefillFinished, this, &RunController::onPrefillFinished);
    connect(m_worker, &SessionWorker::layerPreviewed, m_state, &AnalysisState::setLayerPreview);
    connect(m_worker, &SessionWorker::retuned, this, &RunController::onRetuned);
    connect(m_worker, &SessionWorker::attentionFetched, this, &RunController::onAttentionFetched);
    connect(m_worker, &SessionWorker::compared, this, &RunController::onCompared);
    connect(m_worker, &SessionWorker::runFinished, this, &RunController::onRunFinished);
    connect(m_worker, &SessionWorker::progressed, this, &RunController::progressed);
    connect(m_worker, &SessionWorker::failed, this, &RunController::onFailed);
    connect(m_worker, &SessionWorker::cancelled, this, &RunController::onCancelled);
    connect(m_worker, &SessionWorker::contextExceeded, this, &RunController::onContextExceeded);
    connect(m_worker, &SessionWorker::forecastMade, this, &RunController::forecastMade);
    connect(m_worker, &SessionWorker::runDoesNotFit, this, &RunController::onRunDoesNotFit);
    connect(m_state, &AnalysisState::focusChanged, this, [this] { requestAttention(); });
    connect(m_state, &AnalysisState::displayChanged, this, [this] {
        // The overlap statistic needs a second selection: fetch it when the overview asks for it.
        const auto* other = m_state->otherSelection();
        const QString want = overlapPolicy();
        const QString have = other ? QString::fromStdString(snapkv::policy_name(other->params.policy)) : QString();
        if (m_state->selection() && want != have && !want.isEmpty()) retune(m_state->params());
    });
    m_thread.start();
}

RunController::~RunController() { shutdown(); }

void RunController::shutdown() {
    if (m_shutDown) return;
    m_shutDown = true;
    for (const auto& c : m_cancels) c->store(true);
    // Queued after whatever job is running: that job sees its cancel flag and returns soon.
    SessionWorker* w = m_worker;
    QMetaObject::invokeMethod(
        w, [w] { w->shutdown(); }, Qt::QueuedConnection);
    m_thread.quit();
    m_thread.wait();
}

QString RunController::overlapPolicy() const {
    return m_state->display().overviewStat == OverviewStat::Overlap ? m_state->display().overlapPolicy : QString();
}

void RunController::startLong(LongKind kind, const QString& task) {
    const bool wasBusy = busy();
    m_long.push_back(kind);
    if (!wasBusy) Q_EMIT busyChanged(true, task);
}

void RunController::endLong() {
    if (!m_long.empty()) m_long.pop_front();
    if (!m_cancels.empty()) m_cancels.erase(m_cancels.begin());
    if (!busy()) Q_EMIT busyChanged(false, QString());
}

void RunController::cancel() {
    for (const auto& c : m_cancels) c->store(true);
}

QString RunController::promptKey(const RunRequest& r) const {
    return QString("%1\x1f%2\x1f%3\x1f%4\x1f%5\x1f%6\x1f%7\x1f%8\x1f%9")
               .arg(r.modelPath, optionsKey(r.load), QString::fromStdString(r.prompt.text),
                    QString::fromStdString(r.prompt.document), QString::fromStdString(r.prompt.question))
               .arg(r.prompt.chat.enabled)
               .arg(QString::fromStdString(r.prompt.chat.system), QString::fromStdString(r.prompt.answer_prefix))
               .arg(r.prefill.max_window)
           // A cache type or a cut needs a new prefill, not a reload (optionsKey leaves them out).
           + QString("\x1f%1\x1f%2").arg(QString::fromStdString(r.load.cache_type)).arg(r.maxTokens);
}

bool RunController::needsPrefill(const RunRequest& request) const {
    return m_queuedPrefill.isEmpty() || promptKey(request) != m_queuedPrefill;
}

void RunController::loadModel(const QString& path, const snapkv::LoadOptions& opts) {
    if (m_shutDown) return;
    auto cancelFlag = std::make_shared<std::atomic<bool>>(false);
    m_cancels.push_back(cancelFlag);
    startLong(LongKind::Load, "load model");
    m_queuedModel = path + "\x1f" + optionsKey(opts);
    m_queuedPrefill.clear();
    LoadJob job{path, opts};
    SessionWorker* w = m_worker;
    QMetaObject::invokeMethod(
        w, [w, job, cancelFlag] { w->loadModel(job, cancelFlag); }, Qt::QueuedConnection);
}

RetuneJob RunController::makeRetuneJob(const ParamState& params) {
    RetuneJob job;
    job.id = m_nextId++;
    job.params = params;
    job.layer = m_state->layer();
    job.head = m_state->head();
    job.overlapPolicy = overlapPolicy();
    m_retuneParams[job.id] = params;
    m_retuneClock[job.id].start();
    return job;
}

void RunController::run(const RunRequest& request) {
    if (m_shutDown) return;
    RunJob job;
    job.id = m_nextId++;
    job.cancel = std::make_shared<std::atomic<bool>>(false);
    const QString model = request.modelPath + "\x1f" + optionsKey(request.load);
    job.load = model != m_queuedModel;
    job.loadJob = {request.modelPath, request.load};
    job.prefill = job.load || needsPrefill(request);
    job.prefillJob = {request.prompt, request.prefill, request.truncateToFit || request.maxTokens > 0,
                      request.reserveTokens, request.maxTokens};
    m_lastRun = request;
    job.retune = makeRetuneJob(request.params);
    m_queuedModel = model;
    m_queuedPrefill = promptKey(request);
    m_cancels.push_back(job.cancel);
    startLong(LongKind::Run, job.load ? "load model" : job.prefill ? "prefill" : "select");
    SessionWorker* w = m_worker;
    QMetaObject::invokeMethod(
        w, [w, job] { w->run(job); }, Qt::QueuedConnection);
}

void RunController::retune(const ParamState& params) {
    if (m_shutDown || !m_state->hasPrefill()) return;
    if (m_retuneInFlight) {
        m_retunePending = params;  // only the newest waiting request survives
        return;
    }
    sendRetune(params);
}

void RunController::sendRetune(const ParamState& params) {
    RetuneJob job = makeRetuneJob(params);
    m_retuneInFlight = job.id;
    SessionWorker* w = m_worker;
    QMetaObject::invokeMethod(
        w, [w, job] { w->retune(job); }, Qt::QueuedConnection);
}

void RunController::requestAttention() {
    if (m_shutDown || !m_state->selection()) return;
    if (m_attentionInFlight) {
        m_attentionPending = true;
        return;
    }
    const auto* sel = m_state->selection();
    AttentionJob job;
    job.id = m_nextId++;
    job.layer = m_state->layer();
    job.head = m_state->head();
    // A policy without a window of its own (Knorm, KeyDiff, ...) shows the user's window's attention.
    job.window = sel->window > 0 ? sel->window : m_state->params().sel.window;
    job.queryAgnostic = m_state->params().queryAgnostic;
    job.gqa = sel->params.gqa;
    m_attentionInFlight = job.id;
    SessionWorker* w = m_worker;
    QMetaObject::invokeMethod(
        w, [w, job] { w->fetchAttention(job); }, Qt::QueuedConnection);
}

void RunController::compare(const snapkv::GenerationSettings& generation) {
    if (m_shutDown || !m_state->hasPrefill()) return;
    CompareJob job;
    job.id = m_nextId++;
    job.params = m_state->params();
    job.generation = generation;
    job.cancel = std::make_shared<std::atomic<bool>>(false);
    m_compareParams = job.params;
    m_cancels.push_back(job.cancel);
    startLong(LongKind::Compare, "generate");
    SessionWorker* w = m_worker;
    QMetaObject::invokeMethod(
        w, [w, job] { w->compare(job); }, Qt::QueuedConnection);
}

void RunController::onModelLoaded(const snapkv::ModelInfo& info) {
    m_state->setModel(info);
    Q_EMIT modelLoaded();
    if (!m_long.empty() && m_long.front() == LongKind::Load) endLong();
}

void RunController::onPrefillFinished(const snapkv::PrefillSummary& summary, const QString& note) {
    m_state->setPrefill(summary);
    if (!note.isEmpty()) Q_EMIT noteIssued(note);
}

void RunController::onRetuned(const RetunePtr& result) {
    const quint64 id = result ? result->id : 0;
    const auto params = m_retuneParams.count(id) ? m_retuneParams[id] : m_state->params();
    const double ms = m_retuneClock.count(id) ? m_retuneClock[id].nsecsElapsed() / 1e6 : 0.0;
    m_retuneParams.erase(id);
    m_retuneClock.erase(id);
    if (id == m_retuneInFlight) m_retuneInFlight = 0;
    // Applied even when a newer request waits: a slider drag shows intermediate states.
    if (result) {
        m_lastSelectMs = result->selectMs;
        m_state->setRetune(result, params);
        Q_EMIT retuneApplied(ms, params);
        timeEdit(params);
        const auto* a = result->attention.get();
        if (!a || a->layer != m_state->layer() || a->head != m_state->head()) requestAttention();
    }
    if (!m_retuneInFlight && m_retunePending) {
        const ParamState next = *m_retunePending;
        m_retunePending.reset();
        sendRetune(next);
    }
}

void RunController::onAttentionFetched(quint64 id, const AttentionPtr& rows) {
    if (id == m_attentionInFlight) m_attentionInFlight = 0;
    if (rows && rows->layer == m_state->layer() && rows->head == m_state->head() && m_state->selection() &&
        rows->window == m_state->selection()->window)
        m_state->setAttention(rows);
    if (m_attentionPending && !m_attentionInFlight) {
        m_attentionPending = false;
        requestAttention();
    }
}

void RunController::onCompared(quint64, const ComparePtr& result) {
    m_state->setComparison(result);
    endLong();
    Q_EMIT compareFinished();
}

void RunController::onRunFinished(quint64) {
    endLong();
    applyRunFocus();
    Q_EMIT runFinished();
}

void RunController::onFailed(const QString& task, const QString& message) {
    if (task == "retune") {
        m_retuneInFlight = 0;
        m_retunePending.reset();
        Q_EMIT retuneFailed(message);
        return;
    }
    if (task == "attention") {
        m_attentionInFlight = 0;
        Q_EMIT retuneFailed(message);
        return;
    }
    if (task == "prefill" || task == "load model") m_queuedPrefill.clear();
    // A failed load leaves the session without the old model.
    if (task == "load model") m_queuedModel.clear();
    endLong();
    Q_EMIT failed(task, message);
}

void RunController::onCancelled(const QString& task) {
    // A prefill stopped halfway may have discarded the session's capture: prefill again next time.
    if (task == "prefill" || task == "load model") m_queuedPrefill.clear();
    if (task == "load model") m_queuedModel.clear();
    endLong();
    Q_EMIT cancelled(task);
}

void RunController::rerunWith(const snapkv::CheaperChoice& choice) {
    if (!m_lastRun) return;
    RunRequest r = *m_lastRun;
    if (choice.kind == snapkv::CheaperChoice::Kind::CacheType)
        r.load.cache_type = snapkv::kv_type_name(choice.cache_type);
    else r.maxTokens = choice.n_tokens;
    run(r);
}

void RunController::onRunDoesNotFit(const snapkv::RunForecast& forecast) {
    m_queuedPrefill.clear();  // nothing was prefilled
    endLong();
    Q_EMIT runDoesNotFit(forecast);
}

void RunController::onContextExceeded(qint64 nTokens, qint64 nCtx, qint64 reserve) {
    m_queuedPrefill.clear();  // nothing was prefilled
    endLong();
    Q_EMIT contextExceeded(nTokens, nCtx, reserve);
}

void RunController::retuneEdit(const ParamState& params, double msBefore) {
    m_editMsBefore = msBefore;
    m_editClock.start();
    m_editParams = params;
    retune(params);
}

void RunController::timeEdit(const ParamState& applied) {
    // Time only the result computed for the edit (not an older one still arriving), and stop the
    // clock once the views have redrawn: this timer is queued after their own refresh timers.
    if (!m_editParams || applied != *m_editParams) return;
    m_editParams.reset();
    QTimer::singleShot(0, this, [this] {
        if (!m_editClock.isValid()) return;
        const double total = m_editMsBefore + m_editClock.nsecsElapsed() / 1e6;
        m_editClock.invalidate();
        m_editMsBefore = 0;
        Q_EMIT retuneTimed(m_lastSelectMs, total);
    });
}

void RunController::applyRunFocus() {
    RunFocus f = std::move(m_runFocus);
    m_runFocus = RunFocus();
    if (f.leastKept && m_state->selection()) {
        std::vector<EvalCellPrompt::Mark> marks;
        for (const auto& m : f.marks) marks.push_back({m.first, m.last, m.label});
        const auto [layer, head] = leastKeptHead(*m_state->selection(), marks);
        if (layer >= 0) f.layer = layer, f.head = head;
    }
    if (f.layer >= 0) m_state->setFocus(f.layer, f.head);
    if (!f.marks.empty()) m_state->setMarkedSpans(std::move(f.marks));
}

}  // namespace studio
