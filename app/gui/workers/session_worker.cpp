// SessionWorker: runs Session calls on the worker thread, throttles progress, catches everything.
#include "app/gui/workers/session_worker.h"

#include <QThread>

#include <algorithm>
#include <chrono>
#include <exception>

namespace studio {

namespace {

// Progress signals at most every 50 ms (and always the last one): enough for a smooth bar,
// few enough not to flood the GUI thread's event queue.
constexpr qint64 kProgressIntervalMs = 50;

void throwIfCancelled(const CancelPtr& cancel) {
    if (cancel && cancel->load()) throw snapkv::Cancelled();
}

// Cut a UTF-8 string to at most n bytes without splitting a character.
std::string utf8Prefix(const std::string& s, size_t n) {
    if (n >= s.size()) return s;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return s.substr(0, n);
}

}  // namespace

SessionWorker::SessionWorker() { registerMetaTypes(); }

SessionWorker::~SessionWorker() = default;

snapkv::Session& SessionWorker::session() {
    // Created lazily on the first job so that it is born on the worker thread.
    if (!m_session) m_session = std::make_unique<snapkv::Session>();
    return *m_session;
}

snapkv::ProgressFn SessionWorker::progressFn() {
    m_progressClock.restart();
    return [this](const std::string& stage, int64_t done, int64_t total) {
        if (done < total && m_progressClock.isValid() && m_progressClock.elapsed() < kProgressIntervalMs) return;
        m_progressClock.restart();
        Q_EMIT progressed(QString::fromStdString(stage), done, total);
    };
}

template <typename Fn>
bool SessionWorker::guarded(const QString& task, Fn&& fn) {
    try {
        fn();
        return true;
    } catch (const snapkv::Cancelled&) {
        Q_EMIT cancelled(task);
    } catch (const snapkv::Error& e) {
        Q_EMIT failed(task, QString::fromUtf8(e.what()));
    } catch (const std::bad_alloc&) {
        Q_EMIT failed(task, "Out of memory. Try a shorter document, a smaller model or a smaller window.");
    } catch (const std::exception& e) {
        Q_EMIT failed(task, QString("Internal error: %1").arg(QString::fromUtf8(e.what())));
    } catch (...) {
        Q_EMIT failed(task, "Internal error (unknown exception).");
    }
    return false;
}

void SessionWorker::doLoad(const LoadJob& job, const CancelPtr& cancel) {
    throwIfCancelled(cancel);
    Q_EMIT progressed("loading model", 0, 1);
    session().load_model(job.path.toStdString(), job.options, progressFn(), cancel.get());
    Q_EMIT modelLoaded(session().model_info());
}

bool SessionWorker::doPrefill(const PrefillJob& job, const CancelPtr& cancel) {
    throwIfCancelled(cancel);
    auto& s = session();
    if (!s.has_model()) throw snapkv::InputError("no model loaded: open a model file first");
    const int64_t nCtxModel = s.model_info().config.n_ctx_train;
    // Leave room for the tokens a comparison will generate after this prompt.
    int64_t nCtx = nCtxModel > 0 ? std::max<int64_t>(nCtxModel / 2, nCtxModel - job.reserveTokens) : 0;
    if (job.maxTokens > 0) nCtx = nCtx > 0 ? std::min(nCtx, job.maxTokens) : job.maxTokens;
    snapkv::PromptSpec spec = job.prompt;
    QString note;
    snapkv::PromptTokens tokens = s.build_prompt(spec);
    auto n = static_cast<int64_t>(tokens.ids.size());
    if (nCtx > 0 && n > nCtx) {
        if (!job.truncateToFit) {
            Q_EMIT contextExceeded(n, nCtxModel, nCtxModel - nCtx);
            return false;
        }
        // Cut the document in proportion to the excess, a few rounds until it fits.
        std::string& doc = spec.document.empty() ? spec.text : spec.document;
        const int64_t n0 = n;
        for (int round = 0; round < 12 && n > nCtx && !doc.empty(); ++round) {
            const double keep = std::max(0.0, double(nCtx - 16) / double(n));
            doc = utf8Prefix(doc, static_cast<size_t>(doc.size() * std::min(keep, 0.98)));
            tokens = s.build_prompt(spec);
            n = static_cast<int64_t>(tokens.ids.size());
        }
        if (n > nCtx) throw snapkv::InputError("the question alone does not fit the model's context");
        if (job.maxTokens > 0 && nCtx == job.maxTokens)  // the forecast's cheaper choice
            note = QString("Document cut: the prompt went from %1 to %2 tokens to fit the free memory.").arg(n0).arg(n);
        else
            note = QString(
                       "Document truncated: the prompt went from %1 to %2 tokens to fit the model's context of %3 "
                       "with room for %4 generated tokens.")
                       .arg(n0)
                       .arg(n)
                       .arg(nCtxModel)
                       .arg(nCtxModel - nCtx);
    }
    throwIfCancelled(cancel);
    // What the run will take, before it starts: a short calibration forward the first time (cached
    // per model), refined by this session's last prefill.
    Q_EMIT progressed("measuring this machine's speed", 0, 1);
    snapkv::PrefillSpeed speed;  // unmeasured: the forecast gives memory alone
    try {
        speed = snapkv::measure_prefill_speed(s, 128, cancel.get());
    } catch (const snapkv::InputError&) {
        // Not even the calibration forward fits: the memory forecast still offers the choices.
    }
    if (s.has_prefill())
        speed = snapkv::with_last_prefill(speed, s.model_info().config, s.prefill_summary(), job.settings);
    const snapkv::RunForecast forecast = snapkv::forecast_prefill(s, tokens, job.settings, speed);
    Q_EMIT forecastMade(forecast);
    if (!forecast.fits()) {
        Q_EMIT runDoesNotFit(forecast);
        return false;
    }
    Q_EMIT progressed("prefill", 0, n);
    const snapkv::PrefillSummary summary = s.prefill(spec, job.settings, progressFn(), cancel.get());
    Q_EMIT prefillFinished(summary, note);
    return true;
}

AttentionPtr SessionWorker::doAttention(const AttentionJob& job) {
    auto& s = session();
    if (!s.has_prefill() || job.window <= 0) return nullptr;
    const auto cfg = s.model_info().config;
    auto out = std::make_shared<AttentionRows>();
    out->layer = job.layer;
    out->head = job.head;
    out->window = job.window;
    out->queryAgnostic = job.queryAgnostic;
    // In kv-head mode one selection serves a group of query heads: show the mean of their rows,
    // the same aggregation kvpress applies to the scores.
    int64_t first = job.head, count = 1;
    if (job.gqa == snapkv::GqaMode::KvHead && cfg.n_head_kv > 0 && cfg.n_head > cfg.n_head_kv) {
        count = cfg.n_head / cfg.n_head_kv;
        first = job.head * count;
    }
    for (int64_t q = first; q < first + count; ++q) {
        std::vector<float> rows = s.window_attention(job.layer, q, job.window, job.queryAgnostic);
        if (out->rows.empty()) {
            out->rows = std::move(rows);
        } else {
            for (size_t i = 0; i < out->rows.size() && i < rows.size(); ++i) out->rows[i] += rows[i];
        }
    }
    if (count > 1)
        for (float& v : out->rows) v /= static_cast<float>(count);
    out->nKeys = static_cast<int64_t>(out->rows.size()) / job.window;
    out->label = count > 1
                     ? QString("mean of query heads %1-%2 (KV head %3)").arg(first).arg(first + count - 1).arg(job.head)
                     : QString("query head %1").arg(first);
    return out;
}

RetunePtr SessionWorker::doRetune(const RetuneJob& job) {
    auto& s = session();
    if (!s.has_prefill()) throw snapkv::InputError("nothing to tune yet: press Run to prefill the prompt first");
    auto out = std::make_shared<RetuneResult>();
    out->id = job.id;
    const auto t0 = std::chrono::steady_clock::now();
    const auto sel = std::make_shared<snapkv::Selection>(
        s.select(job.params.toSelectionParams(), job.params.queryAgnostic, /*with_scores=*/true));
    out->selectMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!job.overlapPolicy.isEmpty()) {
        ParamState other = job.params;
        other.sel.policy = snapkv::parse_policy(job.overlapPolicy.toStdString());
        out->other = std::make_shared<snapkv::Selection>(
            s.select(other.toSelectionParams(), other.queryAgnostic, /*with_scores=*/false));
    }
    const auto bytes = s.kv_bytes(*sel);
    out->kvBytesFull = bytes.first;
    out->kvBytesKept = bytes.second;
    const auto& cfg = s.model_info().config;
    out->cacheNote = QString::fromStdString(
        snapkv::cache_growth_note(*sel, cfg.n_head, cfg.n_head_kv, bytes.first, bytes.second));
    if (!sel->layers.empty()) {
        AttentionJob a;
        a.id = job.id;
        a.layer = std::clamp<int64_t>(job.layer, 0, static_cast<int64_t>(sel->layers.size()) - 1);
        const int64_t nHeads = static_cast<int64_t>(sel->layers[a.layer].heads.size());
        a.head = std::clamp<int64_t>(job.head, 0, std::max<int64_t>(nHeads - 1, 0));
        a.window = sel->window;
        a.queryAgnostic = job.params.queryAgnostic;
        a.gqa = sel->params.gqa;
        out->attention = doAttention(a);
    }
    out->selection = sel;
    return out;
}

snapkv::PrefillPreview SessionWorker::previewFor(const RetuneJob& retune) {
    snapkv::PrefillPreview pv;
    auto base = std::make_shared<LayerPreview>();
    base->params = retune.params.toSelectionParams();
    pv.params.push_back(base->params);
    if (!retune.overlapPolicy.isEmpty()) {
        ParamState other = retune.params;
        other.sel.policy = snapkv::parse_policy(retune.overlapPolicy.toStdString());
        base->other = other.toSelectionParams();
        pv.params.push_back(*base->other);
    }
    pv.query_agnostic = retune.params.queryAgnostic;
    pv.with_scores = true;  // entropy and sink mass read the votes
    // On this thread, inside Session::prefill: a copy goes out as a value (a few MB a layer at 32K).
    pv.on_layer = [this, base](const snapkv::PrefillLayerPreview& step) {
        auto out = std::make_shared<LayerPreview>(*base);
        out->step = step;
        Q_EMIT layerPreviewed(out);
    };
    return pv;
}

void SessionWorker::loadModel(const LoadJob& job, const CancelPtr& cancel) {
    guarded("load model", [&] { doLoad(job, cancel); });
}

void SessionWorker::run(const RunJob& job) {
    QString task = job.load ? "load model" : "prefill";
    bool stopped = false;  // the prompt did not fit: contextExceeded ends this run
    const bool ok = guarded(task, [&] {
        if (job.load) doLoad(job.loadJob, job.cancel);
        task = "prefill";
        // A new cache type takes effect at this prefill, without reloading the weights.
        const std::string& cacheType = job.loadJob.options.cache_type;
        if (job.prefill && session().has_model() && session().model_info().cache_type != cacheType)
            session().set_cache_type(cacheType);
        PrefillJob prefill = job.prefillJob;
        prefill.settings.preview = previewFor(job.retune);
        if (job.prefill && !doPrefill(prefill, job.cancel)) {
            stopped = true;
            return;
        }
        throwIfCancelled(job.cancel);
        task = "select";
        Q_EMIT progressed("selecting", 0, 1);
        Q_EMIT retuned(doRetune(job.retune));
    });
    // After retuned (which replaced the preview) or failed/cancelled (the previous result stays).
    if (job.prefill) Q_EMIT layerPreviewed(nullptr);
    if (ok && !stopped) Q_EMIT runFinished(job.id);
}

void SessionWorker::retune(const RetuneJob& job) {
    guarded("retune", [&] { Q_EMIT retuned(doRetune(job)); });
}

void SessionWorker::fetchAttention(const AttentionJob& job) {
    guarded("attention", [&] { Q_EMIT attentionFetched(job.id, doAttention(job)); });
}

void SessionWorker::compare(const CompareJob& job) {
    guarded("generate", [&] {
        throwIfCancelled(job.cancel);
        snapkv::CompareSettings cs;
        cs.generation = job.generation;
        cs.query_agnostic = job.params.queryAgnostic;
        cs.hit_threshold = job.params.hitThreshold;
        cs.decode = job.params.decodeSettings();
        cs.compress_prefill = job.params.compressPrefill;
        cs.record_timeline = true;  // the Timeline view draws it
        Q_EMIT progressed("generating", 0, job.generation.max_tokens);
        auto result = std::make_shared<snapkv::CompareResult>(
            session().compare(job.params.toSelectionParams(), cs, progressFn(), job.cancel.get()));
        Q_EMIT compared(job.id, result);
    });
}

void SessionWorker::shutdown() { m_session.reset(); }

void registerMetaTypes() {
    qRegisterMetaType<snapkv::ModelInfo>();
    qRegisterMetaType<snapkv::PrefillSummary>();
    qRegisterMetaType<studio::SelectionPtr>();
    qRegisterMetaType<studio::AttentionPtr>();
    qRegisterMetaType<studio::ComparePtr>();
    qRegisterMetaType<studio::RetunePtr>();
    qRegisterMetaType<studio::LayerPreviewPtr>();
    qRegisterMetaType<studio::ParamState>();
    qRegisterMetaType<snapkv::RunForecast>();
}

}  // namespace studio
