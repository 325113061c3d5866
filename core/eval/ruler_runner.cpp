// See ruler_runner.h.
#include "core/eval/ruler_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "core/eval/chat_settings.h"
#include "core/eval/param_error.h"
#include "core/session/memory_estimate.h"
#include "core/session/run_plan.h"

namespace snapkv::eval {
using json = nlohmann::json;

namespace {

json spans_json(const std::vector<TokenSpan>& spans) {
    json out = json::array();
    for (const auto& s : spans) out.push_back(s.empty() ? json(nullptr) : json::array({s.first, s.last}));
    return out;
}

}  // namespace

RulerTask::RulerTask(const Session& s, RulerData data, RulerOptions options)
    : m_data(std::move(data)), m_opt(std::move(options)) {
    m_opt.chat = task_chat(s, m_opt.chat);
    if (m_opt.tasks.empty()) throw ParamError("tasks", "the list is empty");
    for (const auto& name : m_opt.tasks) m_tasks.push_back(&find_ruler_task(name));
    if (m_opt.samples < 1) throw ParamError("samples", std::to_string(m_opt.samples) + " must be at least 1");
    if (m_opt.lengths.empty()) throw ParamError("lengths", "the list is empty");
    m_n_ctx = s.model_info().config.n_ctx_train;
    for (size_t i = 0; i < m_opt.lengths.size(); ++i) {
        const int64_t n = m_opt.lengths[i];
        if (n < 1) throw ParamError("lengths", std::to_string(n) + " is not a length in tokens");
        if (m_n_ctx > 0 && n > m_n_ctx)
            throw ParamError("lengths", "length " + std::to_string(n) + " is above the model's context of " +
                                            std::to_string(m_n_ctx) +
                                            " tokens (a length counts the prompt and the answer, as "
                                            "RULER's max_seq_length does)");
        for (size_t j = 0; j < i; ++j)
            if (m_opt.lengths[j] == n) throw ParamError("lengths", "length " + std::to_string(n) + " is given twice");
    }
    // Each task's fixed part must leave room in every length: the fewest units, counted once.
    for (const RulerTaskSpec* t : m_tasks)
        for (int64_t length : m_opt.lengths) {
            const RulerText text = generate_ruler_text(*t, m_data, ruler_sample_seed(m_opt.seed, t->name, length, 0),
                                                       ruler_min_units(*t), length);
            const auto fewest = static_cast<int64_t>(s.build_prompt(prompt_for(text)).ids.size());
            if (fewest + t->answer_tokens > length)
                throw ParamError("lengths", "length " + std::to_string(length) + " is too short for " + t->name +
                                                ": its instructions, needles and question alone take " +
                                                std::to_string(fewest) + " prompt tokens + " +
                                                std::to_string(t->answer_tokens) + " answer tokens");
            // cwe draws distinct words: the list must reach the length.
            const int64_t most = ruler_max_units(*t, m_data);
            if (most >= 0) {
                const RulerText full = generate_ruler_text(*t, m_data, 0, most, length);
                const auto n = static_cast<int64_t>(s.build_prompt(prompt_for(full)).ids.size());
                if (static_cast<double>(n + t->answer_tokens) < 0.99 * static_cast<double>(length))
                    throw ParamError("lengths",
                                     "length " + std::to_string(length) + " is too long for " + t->name + ": all " +
                                         std::to_string(most) + " distinct words of the word list fill " +
                                         std::to_string(n + t->answer_tokens) + " tokens (allowed up to " +
                                         std::to_string(static_cast<int64_t>((n + t->answer_tokens) / 0.99)) + ")");
            }
        }
}

int64_t RulerTask::n_cells() const {
    return static_cast<int64_t>(m_opt.lengths.size() * m_tasks.size()) * m_opt.samples;
}

RulerTask::CellId RulerTask::cell_id(int64_t cell) const {
    const auto n_tasks = static_cast<int64_t>(m_tasks.size());
    CellId id;
    id.sample = cell % m_opt.samples;
    const int64_t rest = cell / m_opt.samples;
    id.task = m_tasks[static_cast<size_t>(rest % n_tasks)];
    id.length = m_opt.lengths[static_cast<size_t>(rest / n_tasks)];
    return id;
}

std::vector<int64_t> RulerTask::plan_candidates(const std::vector<int64_t>& to_run) const {
    int64_t longest = -1;
    for (int64_t cell : to_run) longest = std::max(longest, cell_id(cell).length);
    std::vector<int64_t> best;
    std::vector<const RulerTaskSpec*> seen;
    for (int64_t cell : to_run) {
        const CellId id = cell_id(cell);
        if (id.length != longest || std::find(seen.begin(), seen.end(), id.task) != seen.end()) continue;
        seen.push_back(id.task);
        best.push_back(cell);
    }
    return best;
}

std::string RulerTask::cell_label(int64_t cell) const {
    const CellId id = cell_id(cell);
    return "length " + std::to_string(id.length) + " " + id.task->name;
}

int64_t RulerTask::max_answer_tokens() const {
    int64_t n = 1;
    for (const RulerTaskSpec* t : m_tasks) n = std::max(n, t->answer_tokens);
    return n;
}

json RulerTask::settings() const {
    json answer_tokens = json::object();
    for (const RulerTaskSpec* t : m_tasks) answer_tokens[t->name] = t->answer_tokens;
    json st = {{"tasks", m_opt.tasks},
               {"lengths", m_opt.lengths},
               {"samples", m_opt.samples},
               {"seed", m_opt.seed},
               {"answer_tokens", answer_tokens},
               {"words_fnv1a", m_data.words_fnv},
               {"essays", {{"files", m_opt.essay_files}, {"fnv1a", m_data.essays_fnv}}},
               {"scoring", "string_match_all"}};
    add_chat_settings(st, m_opt.chat);
    return st;
}

PromptSpec RulerTask::prompt_for(const RulerText& text) const {
    PromptSpec p;
    p.document = text.document;
    p.question = text.question;
    p.answer_prefix = text.answer_prefix;
    p.chat = m_opt.chat;
    return p;
}

RulerSample RulerTask::sample(const Session& s, int64_t cell) const {
    const CellId id = cell_id(cell);
    const RulerTaskSpec& t = *id.task;
    const int64_t max_prompt = m_n_ctx > 0 ? m_n_ctx - t.answer_tokens : 0;
    return size_ruler_sample(
        t, m_data, ruler_sample_seed(m_opt.seed, t.name, id.length, id.sample), id.length,
        [&](const RulerText& text) { return static_cast<int64_t>(s.build_prompt(prompt_for(text)).ids.size()); },
        max_prompt);
}

CellPrompt RulerTask::prepare(const Session& s, int64_t cell) const {
    const auto t0 = std::chrono::steady_clock::now();
    const CellId id = cell_id(cell);
    const RulerSample rs = sample(s, cell);
    CellPrompt cp;
    cp.prompt = prompt_for(rs.text);
    cp.references = rs.text.references;
    cp.max_tokens = id.task->answer_tokens;

    // Token spans of the needles and of the references inside them, found in the token pieces.
    const PromptTokens pt = s.build_prompt(cp.prompt);
    const PieceText pieces = piece_text(s, pt.ids);
    std::vector<TokenSpan> needle_spans;
    std::vector<TokenSpan> answer_spans(rs.text.references.size());  // by reference; empty: not in a needle
    size_t from = 0;
    for (const auto& needle : rs.text.needles) {
        const size_t at = pieces.text.find(needle, from);
        if (at == std::string::npos) continue;
        from = at + needle.size();
        needle_spans.push_back(pieces.span(at, at + needle.size()));
        for (size_t r = 0; r < rs.text.references.size(); ++r) {
            const size_t v = answer_spans[r].empty() ? needle.find(rs.text.references[r]) : std::string::npos;
            if (v != std::string::npos) answer_spans[r] = pieces.span(at + v, at + v + rs.text.references[r].size());
        }
    }
    // The kept-needle statistics of the row follow the first needle and the first reference.
    if (!needle_spans.empty()) cp.needle = needle_spans.front();
    if (!answer_spans.empty()) cp.value_tokens = answer_spans.front();
    cp.fields = {{"ruler_task", id.task->name},
                 {"length", id.length},
                 {"sample", id.sample},
                 {"n_units", rs.n_units},
                 {"needle_spans", spans_json(needle_spans)},
                 {"answer_spans", spans_json(answer_spans)}};
    cp.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return cp;
}

void check_ruler_memory(const Session& s, const RulerTask& task, const RunOptions& run, bool query_agnostic) {
    const PrefillSettings ps = plan_run(selection_params(run.configs));
    const int64_t longest = *std::max_element(task.options().lengths.begin(), task.options().lengths.end());
    try {
        require_memory(s.estimate_prefill_memory(longest, ps, query_agnostic), s.available_memory(),
                       "a RULER prompt of length " + std::to_string(longest), ": choose shorter lengths");
    } catch (const InputError& e) {
        throw ParamError("lengths", e.what());
    }
}

void check_ruler_ratios(const RulerTask& task, const RunOptions& run) {
    for (const auto& c : run.configs) {
        if (c.full || c.params.ratio < 0) continue;
        for (int64_t length : task.options().lengths) {
            // The prompt part of a length, less 1% for the fit of the sizing.
            const auto n = static_cast<int64_t>(0.99 * static_cast<double>(length - task.max_answer_tokens()));
            const auto kept = static_cast<int64_t>(static_cast<double>(n) * (1.0 - c.params.ratio));
            if (kept <= c.params.window) {
                std::ostringstream r;
                r << c.params.ratio;
                throw ParamError("ratios", "ratio " + r.str() + " keeps about " + std::to_string(kept) + " of the " +
                                               std::to_string(n) + " tokens of a length-" + std::to_string(length) +
                                               " prompt, not more than the window " + std::to_string(c.params.window) +
                                               "; choose a smaller ratio or a longer length");
            }
        }
    }
}

std::vector<RulerScore> ruler_scores(const std::vector<Row>& rows) {
    struct Acc {
        double sum = 0, sum2 = 0;
        int64_t n = 0;
    };
    std::vector<std::tuple<std::string, int64_t, int64_t>> order;
    std::map<std::tuple<std::string, int64_t, int64_t>, Acc> acc;
    for (const Row& r : rows) {
        if (!r.contains("score") || !r.contains("ruler_task")) continue;
        const auto key = std::make_tuple(r["ruler_task"].get<std::string>(), r["length"].get<int64_t>(),
                                         r["config"].get<int64_t>());
        auto [it, fresh] = acc.emplace(key, Acc{});
        if (fresh) order.push_back(key);
        const double v = 100.0 * r["score"].get<double>();
        it->second.sum += v;
        it->second.sum2 += v * v;
        ++it->second.n;
    }
    std::vector<RulerScore> out;
    for (const auto& key : order) {
        const Acc& a = acc[key];
        RulerScore s;
        std::tie(s.task, s.length, s.config) = key;
        s.n = a.n;
        s.mean = a.sum / static_cast<double>(a.n);
        s.sd = std::sqrt(std::max(0.0, a.sum2 / static_cast<double>(a.n) - s.mean * s.mean));
        out.push_back(s);
    }
    return out;
}

}  // namespace snapkv::eval
