// EvalWorker / EvalController: see eval_worker.h.
#include "app/gui/workers/eval_worker.h"

#include <QMetaObject>

#include <algorithm>
#include <exception>

#include "core/eval/chat_settings.h"
#include "core/eval/datasets.h"
#include "core/eval/eval_plan.h"
#include "core/eval/needle.h"
#include "core/eval/qa_set.h"
#include "core/eval/results_file.h"
#include "core/eval/ruler_runner.h"

#ifndef SNAPKV_SOURCE_DIR
#define SNAPKV_SOURCE_DIR ""
#endif

namespace studio {

namespace se = snapkv::eval;
using json = nlohmann::json;

namespace {

constexpr qint64 kProgressIntervalMs = 100;

void registerEvalMetaTypes() {
    static const bool once = [] {
        qRegisterMetaType<EvalJob>();
        qRegisterMetaType<EvalCellJob>();
        qRegisterMetaType<EvalRowPtr>();
        qRegisterMetaType<EvalSourcePtr>();
        qRegisterMetaType<EvalCellPtr>();
        qRegisterMetaType<EvalStatsValue>();
        return true;
    }();
    (void)once;
}

std::vector<std::string> paths(const QStringList& l) {
    std::vector<std::string> out;
    for (const QString& s : l) out.push_back(s.toStdString());
    return out;
}

se::Haystack haystackOf(const QStringList& given) {
    return se::load_haystack(given.isEmpty() ? se::bundled_haystack(SNAPKV_SOURCE_DIR) : paths(given));
}

// RULER's generators draw from the bundled word lists and the bundled essays, as `snapkv ruler`
// does by default.
se::RulerData rulerData(se::Haystack* essays) {
    *essays = haystackOf({});
    return se::load_ruler_data(se::bundled_dataset("ruler", SNAPKV_SOURCE_DIR, "the RULER word lists"), essays->text);
}

std::vector<EvalCellPrompt::Mark> spansOf(const json& row, const char* key, const QString& label) {
    std::vector<EvalCellPrompt::Mark> out;
    if (!row.contains(key) || !row[key].is_array()) return out;
    for (const auto& s : row[key])
        if (s.is_array() && s.size() == 2) out.push_back({s[0].get<int64_t>(), s[1].get<int64_t>(), label});
    return out;
}

std::string setPathOf(const QString& given) {
    return given.isEmpty() ? se::bundled_dataset("qa/qa.jsonl", SNAPKV_SOURCE_DIR, "a question set file")
                           : given.toStdString();
}

// Forwards to a task and keeps the prompt of the cell prepared last, so that each row can travel to
// the GUI with its cell's prompt (clicking a cell of a running grid then needs no session).
class KeepingTask : public se::EvalTask {
public:
    explicit KeepingTask(const se::EvalTask& inner) : m_inner(inner) {}
    std::string name() const override { return m_inner.name(); }
    int64_t n_cells() const override { return m_inner.n_cells(); }
    json settings() const override { return m_inner.settings(); }
    se::CellPrompt prepare(const snapkv::Session& s, int64_t cell) const override {
        se::CellPrompt cp = m_inner.prepare(s, cell);
        m_last = std::make_shared<const se::CellPrompt>(cp);
        return cp;
    }
    std::vector<int64_t> plan_candidates(const std::vector<int64_t>& toRun) const override {
        return m_inner.plan_candidates(toRun);
    }
    std::string cell_label(int64_t cell) const override { return m_inner.cell_label(cell); }
    EvalSourcePtr last() const { return m_last; }

private:
    const se::EvalTask& m_inner;
    mutable EvalSourcePtr m_last;
};

// The run's plan text ("Plan: largest cell length 2048 depth 0: ...", core/eval/eval_plan.h as
// `snapkv needle` and `snapkv ruler` plan); throws InputError, with the cheaper choices in the
// form's words, when its largest cell does not fit.
QString planRun(snapkv::Session& s, const se::EvalTask& task, const se::EvalRun& run, const std::set<se::RowKey>& done,
                snapkv::CancelFlag cancel) {
    const snapkv::GridForecast g = se::forecast_eval(s, task, run, done, cancel);
    se::require_grid_fits(g, [](const snapkv::CheaperChoice& c) {
        return c.kind == snapkv::CheaperChoice::Kind::CacheType
                   ? "KV cache type " + std::string(snapkv::kv_type_name(c.cache_type))
                   : "prompts of at most " + snapkv::group_thousands(c.n_tokens) + " tokens (shorter lengths)";
    });
    return "Plan: " + QString::fromStdString(g.summary()) + ".";
}

}  // namespace

EvalCellPrompt makeCellPrompt(const se::CellPrompt& source, const json& settings, const json& row) {
    EvalCellPrompt out;
    out.prompt = source.prompt;
    const int64_t config = row.at("config").get<int64_t>();
    const json& configs = settings.at("configs");
    if (config < 0 || config >= static_cast<int64_t>(configs.size()))
        throw snapkv::InputError("row configuration " + std::to_string(config) + " is not in the results' settings");
    const se::EvalConfig c = se::config_from_json(configs[static_cast<size_t>(config)]);
    out.full = c.full;
    out.params = c.params;
    out.queryAgnostic = c.query_agnostic;
    out.markFirst = source.needle.first;
    out.markLast = source.needle.last;
    if (row.contains("needle_spans")) {  // RULER: every needle, and the answers inside them
        out.marks = spansOf(row, "needle_spans", "needle");
        for (const auto& m : spansOf(row, "answer_spans", "answer")) out.marks.push_back(m);
        out.focusLeastKept = !out.marks.empty();
    } else if (out.markFirst >= 0) {
        out.marks.push_back({out.markFirst, out.markLast, "needle"});
    }
    // Focus the head that kept the smallest share of the needle (the first such, layer-major).
    if (row.contains("needle_kept_heads") && row["needle_kept_heads"].is_array()) {
        double best = 2.0;
        const json& heads = row["needle_kept_heads"];
        for (size_t l = 0; l < heads.size(); ++l)
            for (size_t h = 0; h < heads[l].size(); ++h)
                if (heads[l][h].get<double>() < best) {
                    best = heads[l][h].get<double>();
                    out.focusLayer = static_cast<int>(l);
                    out.focusHead = static_cast<int>(h);
                }
    }
    QString where =
        row.contains("ruler_task") ? QString("%1 #%2 at %3 tokens")
                                         .arg(QString::fromStdString(row["ruler_task"].get<std::string>()))
                                         .arg(row.value("sample", int64_t(0)))
                                         .arg(row.value("length", int64_t(0)))
        : row.contains("length")
            ? QString("length %1, depth %2%").arg(row["length"].get<int64_t>()).arg(row["depth"].get<double>())
            : QString::fromStdString(row.value("item_id", std::string("item")));
    QString what = QString::fromStdString(se::config_label(c));
    if (row.contains("score") && row["score"].is_number())
        what += QString(" scored %1 of 100").arg(100.0 * row["score"].get<double>(), 0, 'f', 0);
    else if (row.contains("found")) what += row["found"].get<bool>() ? " found the needle" : " missed the needle";
    else if (row.contains("agree_full"))
        what += QString(", agreement with full %1").arg(row["agree_full"].get<double>(), 0, 'f', 2);
    out.title = where + ": " + what;
    return out;
}

std::pair<int, int> leastKeptHead(const snapkv::Selection& sel, const std::vector<EvalCellPrompt::Mark>& marks) {
    // Kept tokens per (layer, head), summed over the needles: shares weighted by each span's width.
    std::vector<std::vector<double>> kept;
    double width = 0;
    for (const auto& m : marks) {
        if (m.label != "needle" || m.last <= m.first) continue;
        const se::SpanKept k = se::span_kept(sel, {m.first, std::min(m.last, sel.n_tokens)});
        const double w = static_cast<double>(std::min(m.last, sel.n_tokens) - m.first);
        if (w <= 0) continue;
        width += w;
        if (kept.empty()) kept.assign(k.heads.size(), {});
        for (size_t l = 0; l < k.heads.size() && l < kept.size(); ++l) {
            kept[l].resize(k.heads[l].size(), 0.0);
            for (size_t h = 0; h < k.heads[l].size(); ++h) kept[l][h] += k.heads[l][h] * w;
        }
    }
    std::pair<int, int> best{-1, -1};
    double least = 0;
    for (size_t l = 0; l < kept.size(); ++l)
        for (size_t h = 0; h < kept[l].size(); ++h)
            if (best.first < 0 || kept[l][h] < least) {
                least = kept[l][h];
                best = {static_cast<int>(l), static_cast<int>(h)};
            }
    return width > 0 ? best : std::pair<int, int>{-1, -1};
}

EvalWorker::EvalWorker() { registerEvalMetaTypes(); }
EvalWorker::~EvalWorker() = default;

snapkv::Session& EvalWorker::session(const QString& modelPath, const snapkv::LoadOptions& load) {
    if (modelPath.isEmpty()) throw snapkv::InputError("no model: open a model first (File > Open Model)");
    const QString key = modelPath + "|" + QString::fromStdString(load.device + "|" + load.dtype + "|" + load.weights);
    if (!m_session) m_session = std::make_unique<snapkv::Session>();  // born on this thread
    if (m_loaded != key || !m_session->has_model()) {
        Q_EMIT progressed("loading model", 0, 1);
        m_session->load_model(modelPath.toStdString(), load);
        m_loaded = key;
    }
    // The KV cache type changes without a reload (the prompt panel's KV choice applies to the
    // next evaluation, as to the next prefill).
    if (!load.cache_type.empty() && m_session->model_info().cache_type != load.cache_type)
        m_session->set_cache_type(load.cache_type);
    return *m_session;
}

template <typename Fn>
void EvalWorker::guarded(const QString& task, Fn&& fn) {
    try {
        fn();
    } catch (const snapkv::Cancelled&) {
        Q_EMIT cancelled(task);
    } catch (const snapkv::Error& e) {
        Q_EMIT failed(task, QString::fromUtf8(e.what()));
    } catch (const std::bad_alloc&) {
        Q_EMIT failed(task, "Out of memory. Try shorter lengths or fewer configurations.");
    } catch (const std::exception& e) {
        Q_EMIT failed(task, QString("Internal error: %1").arg(QString::fromUtf8(e.what())));
    } catch (...) {
        Q_EMIT failed(task, "Internal error (unknown exception).");
    }
}

void EvalWorker::run(const EvalJob& job, const EvalCancelPtr& cancel) {
    guarded("evaluation", [&] {
        snapkv::Session& s = session(job.modelPath, job.load);
        if (cancel && cancel->load()) throw snapkv::Cancelled();
        se::RunOptions ro;
        ro.configs = se::expand_configs(job.axes);
        ro.generation.max_tokens = job.maxTokens;
        ro.generation.greedy = true;
        ro.kl_steps = std::min(job.klSteps, job.maxTokens);
        snapkv::ChatSettings chat;  // the model's template, when it has one (the tasks check)
        chat.enabled = job.chat;
        std::unique_ptr<se::EvalTask> task;
        if (job.task == "ruler") {
            se::RulerOptions ropt;
            ropt.tasks = se::parse_ruler_tasks(job.rulerTasks.toStdString());
            ropt.lengths = job.rulerLengths;
            ropt.samples = job.samples;
            ropt.seed = job.axes.seed;
            ropt.chat = chat;
            se::Haystack essays;
            se::RulerData data = rulerData(&essays);
            ropt.essay_files = essays.files;
            auto ruler = std::make_unique<se::RulerTask>(s, std::move(data), ropt);
            // Each task answers in its own length (RULER's tokens_to_generate); the run's is the longest.
            ro.generation.max_tokens = ruler->max_answer_tokens();
            ro.kl_steps = std::min(job.klSteps, ro.generation.max_tokens);
            se::check_ruler_ratios(*ruler, ro);
            se::check_ruler_memory(s, *ruler, ro, job.axes.query_agnostic);
            task = std::move(ruler);
        } else if (job.task == "needle") {
            const std::string nf = job.needlesFile.isEmpty()
                                       ? se::bundled_dataset("needles.jsonl", SNAPKV_SOURCE_DIR, "a needles file")
                                       : job.needlesFile.toStdString();
            se::NeedleOptions no;
            no.needle = se::find_needle(se::load_needles(nf), job.needle.toStdString(), nf);
            no.haystack = haystackOf(job.haystack);
            no.depths = job.depths;
            no.chat = chat;
            no.seed = job.axes.seed;
            no.lengths = !job.lengths.empty() ? job.lengths : se::NeedleTask::default_lengths(s, no, job.maxTokens);
            task = std::make_unique<se::NeedleTask>(s, no, job.maxTokens);
        } else {
            task = std::make_unique<se::SweepTask>(s, se::load_qa_set(setPathOf(job.setPath)), chat, job.maxTokens);
        }
        KeepingTask keeping(*task);
        se::EvalRun run(s, keeping, ro);
        const std::string out = job.outPath.toStdString();
        const std::set<se::RowKey> done = se::resume_rows(out, run.settings());
        Q_EMIT progressed("planning", 0, 1);
        Q_EMIT planned(planRun(s, *task, run, done, cancel.get()));
        Q_EMIT started(job.outPath, static_cast<qint64>(run.shard_cells().size()), static_cast<qint64>(done.size()));
        se::RowWriter writer(out);
        m_progressClock.restart();
        const snapkv::ProgressFn progress = [&](const std::string& stage, int64_t d, int64_t t) {
            if (stage == "cells") {
                Q_EMIT cellsProgressed(d, t);
                return;
            }
            if (d < t && m_progressClock.elapsed() < kProgressIntervalMs) return;
            m_progressClock.restart();
            Q_EMIT progressed(QString::fromStdString(stage), d, t);
        };
        const se::RunStats st = run.run(
            done,
            [&](const se::Row& row) {
                writer.write(row);
                Q_EMIT rowFinished(std::make_shared<const json>(row), keeping.last());
            },
            progress, cancel.get());
        EvalStatsValue v;
        v.rowsWritten = st.rows_written;
        v.cellsRun = st.cells_run;
        v.cellsSkipped = st.cells_skipped;
        v.wallMs = st.wall_ms;
        v.prefillMs = st.prefill_ms;
        v.referenceMs = st.reference_ms;
        v.compressedMs = st.compressed_ms;
        v.savedMs = st.saved_ms;
        Q_EMIT finished(v);
    });
}

void EvalWorker::prepareCell(const EvalCellJob& job) {
    guarded("open cell", [&] {
        snapkv::Session& s = session(job.modelPath, job.load);
        const json& st = job.settings;
        const int64_t maxTokens = st.at("generation").at("max_tokens").get<int64_t>();
        const int64_t cell = job.row.at("cell").get<int64_t>();
        se::CellPrompt cp;
        if (st.value("task", std::string()) == "ruler") {
            const json& rs = st.at("ruler");
            se::RulerOptions ropt;
            ropt.tasks = rs.at("tasks").get<std::vector<std::string>>();
            ropt.lengths = rs.at("lengths").get<std::vector<int64_t>>();
            ropt.samples = rs.at("samples").get<int64_t>();
            ropt.seed = rs.at("seed").get<uint64_t>();
            ropt.chat = se::chat_settings_from(rs);
            se::Haystack essays;
            se::RulerData data = rulerData(&essays);
            ropt.essay_files = essays.files;
            const se::RulerTask t(s, std::move(data), ropt);
            // The same seed draws the same sample only from the same words and essays.
            const std::string diff = se::first_difference(t.settings(), rs);
            if (!diff.empty())
                throw snapkv::InputError(
                    "this RULER sample cannot be rebuilt here: the results were made with other "
                    "settings or data than the bundled word lists and essays (" +
                    diff + ")");
            if (cell < 0 || cell >= t.n_cells())
                throw snapkv::InputError("cell " + std::to_string(cell) + " is not in the run");
            cp = t.prepare(s, cell);
        } else if (st.value("task", std::string()) == "needle") {
            const se::NeedleTask t(s, se::needle_options_from_settings(st.at("needle"), haystackOf(job.haystack)),
                                   maxTokens);
            if (cell < 0 || cell >= t.n_cells())
                throw snapkv::InputError("cell " + std::to_string(cell) + " is not in the grid");
            cp = t.prepare(s, cell);
        } else {
            se::QaSet set = se::load_qa_set(setPathOf(job.setPath));
            se::check_same_set(st.at("sweep"), set);
            const json& sw = st.at("sweep");
            const se::SweepTask t(s, std::move(set), se::chat_settings_from(sw), maxTokens);
            if (cell < 0 || cell >= t.n_cells())
                throw snapkv::InputError("item " + std::to_string(cell) + " is not in the set");
            cp = t.prepare(s, cell);
        }
        Q_EMIT cellPrepared(std::make_shared<const EvalCellPrompt>(makeCellPrompt(cp, st, job.row)));
    });
}

void EvalWorker::shutdown() { m_session.reset(); }

EvalController::EvalController(QObject* parent) : QObject(parent) {
    registerEvalMetaTypes();
    m_worker = new EvalWorker;
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    connect(m_worker, &EvalWorker::planned, this, &EvalController::planned);
    connect(m_worker, &EvalWorker::started, this, &EvalController::started);
    connect(m_worker, &EvalWorker::rowFinished, this, &EvalController::rowFinished);
    connect(m_worker, &EvalWorker::cellsProgressed, this, &EvalController::cellsProgressed);
    connect(m_worker, &EvalWorker::progressed, this, &EvalController::progressed);
    connect(m_worker, &EvalWorker::cellPrepared, this, &EvalController::cellPrepared);
    connect(m_worker, &EvalWorker::finished, this, [this](const EvalStatsValue& v) {
        setBusy(false);
        Q_EMIT finished(v);
    });
    connect(m_worker, &EvalWorker::failed, this, [this](const QString& task, const QString& msg) {
        if (task == "evaluation") setBusy(false);
        Q_EMIT failed(task, msg);
    });
    connect(m_worker, &EvalWorker::cancelled, this, [this](const QString& task) {
        if (task == "evaluation") setBusy(false);
        Q_EMIT cancelled(task);
    });
    m_thread.setObjectName("snapkv-eval-worker");
    m_thread.start();
}

EvalController::~EvalController() { shutdown(); }

void EvalController::setBusy(bool busy) {
    if (m_busy == busy) return;
    m_busy = busy;
    Q_EMIT busyChanged(busy);
}

void EvalController::run(const EvalJob& job) {
    if (m_busy || m_shutDown) return;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    setBusy(true);
    EvalWorker* w = m_worker;
    const EvalCancelPtr cancel = m_cancel;
    QMetaObject::invokeMethod(
        m_worker, [w, job, cancel] { w->run(job, cancel); }, Qt::QueuedConnection);
}

void EvalController::openCell(const EvalCellJob& job) {
    if (m_shutDown) return;
    EvalWorker* w = m_worker;
    QMetaObject::invokeMethod(
        m_worker, [w, job] { w->prepareCell(job); }, Qt::QueuedConnection);
}

void EvalController::cancel() {
    if (m_cancel) m_cancel->store(true);
}

void EvalController::shutdown() {
    if (m_shutDown) return;
    m_shutDown = true;
    cancel();
    EvalWorker* w = m_worker;
    QMetaObject::invokeMethod(
        m_worker, [w] { w->shutdown(); }, Qt::QueuedConnection);
    m_thread.quit();
    m_thread.wait();
}

}  // namespace studio
