// See eval_runner.h.
#include "core/eval/eval_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "core/common/units.h"
#include "core/eval/text_score.h"
#include "core/session/run_plan.h"

namespace snapkv::eval {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

json span_json(TokenSpan s) { return s.empty() ? json(nullptr) : json::array({s.first, s.last}); }

// Rounded for the row (the per-head tables would otherwise carry 17 digits each).
double round4(double v) { return std::round(v * 1e4) / 1e4; }

void add_span_stats(json& row, const CellPrompt& cell, const Selection* sel) {
    if (cell.needle.empty()) return;
    const SpanKept needle = sel ? span_kept(*sel, cell.needle) : SpanKept{};
    const SpanKept value = sel && !cell.value_tokens.empty() ? span_kept(*sel, cell.value_tokens) : SpanKept{};
    row["needle_kept"] = round4(needle.mean);
    row["value_kept"] = round4(value.mean);
    row["value_kept_all"] = value.all;
    if (!sel) return;
    json layers = json::array(), heads = json::array();
    for (size_t l = 0; l < needle.layers.size(); ++l) {
        layers.push_back(round4(needle.layers[l]));
        json h = json::array();
        for (double v : needle.heads[l]) h.push_back(round4(v));
        heads.push_back(std::move(h));
    }
    row["needle_kept_layers"] = std::move(layers);
    row["needle_kept_heads"] = std::move(heads);
}

void add_answer_scores(json& row, const CellPrompt& cell, const std::string& answer, const std::string& full_answer) {
    row["answer"] = answer;
    if (!cell.value.empty()) row["found"] = contains_value(answer, cell.value);
    if (cell.has_reference) {
        row["reference"] = cell.reference;
        row["exact"] = exact_match(answer, cell.reference);
        row["contains"] = contains_match(answer, cell.reference);
        row["f1"] = round4(word_f1(answer, cell.reference));
    }
    if (!cell.references.empty()) {
        row["references"] = cell.references;
        row["score"] = round4(string_match_all(answer, cell.references));
    }
    row["agree_full"] = round4(word_f1(answer, full_answer));
}

}  // namespace

TokenSpan PieceText::span(size_t a, size_t b) const {
    TokenSpan s;
    for (size_t i = 0; i < ends.size(); ++i) {
        const size_t start = i ? ends[i - 1] : 0;
        if (ends[i] > a && s.first < 0) s.first = static_cast<int64_t>(i);
        if (start < b) s.last = static_cast<int64_t>(i) + 1;
    }
    return s;
}

PieceText piece_text(const Session& s, const std::vector<int32_t>& ids) {
    PieceText p;
    for (int32_t id : ids) {
        p.text += s.token_piece(id);
        p.ends.push_back(p.text.size());
    }
    return p;
}

SpanKept span_kept(const Selection& sel, TokenSpan span) {
    SpanKept out;
    if (span.empty()) return out;
    double total = 0;
    int64_t n = 0;
    const int64_t limit = sel.n_tokens - sel.window;  // positions at or after it are always kept
    const auto width = static_cast<double>(span.last - span.first);
    for (const auto& ls : sel.layers) {
        std::vector<double> heads;
        for (const auto& h : ls.heads) {
            int64_t kept = 0;
            for (int64_t p = span.first; p < span.last; ++p)
                if (!ls.compressed || p >= limit || std::binary_search(h.kept.begin(), h.kept.end(), p)) ++kept;
            heads.push_back(static_cast<double>(kept) / width);
            out.all = out.all && kept == span.last - span.first;
        }
        double layer = 0;
        for (double v : heads) layer += v;
        total += layer;
        n += static_cast<int64_t>(heads.size());
        out.layers.push_back(heads.empty() ? 1.0 : layer / static_cast<double>(heads.size()));
        out.heads.push_back(std::move(heads));
    }
    out.mean = n ? total / static_cast<double>(n) : 1.0;
    return out;
}

EvalRun::EvalRun(Session& session, const EvalTask& task, RunOptions options)
    : m_session(session), m_task(task), m_options(std::move(options)) {
    if (m_options.configs.empty() || !m_options.configs.front().full)
        throw InputError("evaluation: the configurations must start with the full cache (expand_configs)");
    if (m_options.generation.max_tokens < 1)
        throw ParamError("max_tokens", std::to_string(m_options.generation.max_tokens) + " must be at least 1");
    if (m_options.kl_steps < 0) throw ParamError("kl_steps", std::to_string(m_options.kl_steps) + " must be >= 0");
    if (!(m_options.hit_threshold > 0 && m_options.hit_threshold < 1))
        throw ParamError("hit_threshold", std::to_string(m_options.hit_threshold) + " is outside (0, 1)");
    if (m_task.n_cells() < 1) throw InputError("evaluation: the grid has no cells");
    const ModelInfo info = m_session.model_info();
    json configs = json::array();
    for (const auto& c : m_options.configs) configs.push_back(config_json(c));
    const GenerationSettings& g = m_options.generation;
    json gen = {{"max_tokens", g.max_tokens}, {"greedy", g.greedy}, {"stop_at_eog", g.stop_at_eog}};
    if (!g.greedy)
        gen.update({{"temperature", g.temperature}, {"top_k", g.top_k}, {"top_p", g.top_p}, {"seed", g.seed}});
    m_settings = {{"task", m_task.name()},
                  {"model",
                   {{"file", std::filesystem::path(info.path).filename().string()},
                    {"arch", info.config.arch},
                    {"n_layer", info.config.n_layer},
                    {"n_head", info.config.n_head},
                    {"n_vocab", info.config.n_vocab},
                    {"device", info.device},
                    {"dtype", info.dtype},
                    {"weights", info.weights},
                    {"cache_type", info.cache_type}}},
                  {"generation", gen},
                  {"kl_steps", m_options.kl_steps},
                  {"hit_threshold", m_options.hit_threshold},
                  {"cells", m_task.n_cells()},
                  {"configs", configs},
                  {m_task.name(), m_task.settings()}};
}

std::vector<int64_t> EvalRun::shard_cells() const {
    std::vector<int64_t> out;
    for (int64_t c = 0; c < m_task.n_cells(); ++c)
        if (m_options.shard.contains(c)) out.push_back(c);
    return out;
}

RunStats EvalRun::run(const std::set<RowKey>& done, const RowFn& on_row, const ProgressFn& progress,
                      CancelFlag cancel) {
    const auto t_run = Clock::now();
    const std::vector<int64_t> cells = shard_cells();
    const auto n_configs = static_cast<int64_t>(m_options.configs.size());
    RunStats st;
    st.cells_in_shard = static_cast<int64_t>(cells.size());

    const PrefillSettings ps = plan_run(selection_params(m_options.configs));
    CompareSettings cs;
    cs.generation = m_options.generation;
    cs.hit_threshold = m_options.hit_threshold;

    int64_t finished = 0;
    for (int64_t cell : cells) {
        if (cancel && cancel->load()) throw Cancelled();
        std::vector<int64_t> todo;
        for (int64_t k = 0; k < n_configs; ++k)
            if (!done.count({cell, k})) todo.push_back(k);
        if (todo.empty()) {
            ++st.cells_skipped;
            if (progress) progress("cells", ++finished, st.cells_in_shard);
            continue;
        }
        const CellPrompt cp = m_task.prepare(m_session, cell);
        CompareSettings cell_cs = cs;
        if (cp.max_tokens > 0) cell_cs.generation.max_tokens = cp.max_tokens;
        const PrefillSummary sum = m_session.prefill(cp.prompt, ps, progress, cancel);
        const double prefill_ms = sum.prefill_ms + sum.scorer_ms;
        auto t0 = Clock::now();
        const RunOutput full = m_session.decode_reference(
            cell_cs, std::min(m_options.kl_steps, cell_cs.generation.max_tokens), progress, cancel);
        const double reference_ms = ms_since(t0);
        st.prefill_ms += prefill_ms;
        st.reference_ms += reference_ms;
        ++st.cells_run;
        const int64_t n_compressed = static_cast<int64_t>(todo.size()) - (todo.front() == 0 ? 1 : 0);
        if (n_compressed > 1) st.saved_ms += static_cast<double>(n_compressed - 1) * (prefill_ms + reference_ms);

        // The compressed configurations' selections, then their answers decoded together.
        std::vector<Selection> sels;
        std::vector<DecodeRun> decode;
        std::vector<double> select_ms;
        for (int64_t k : todo) {
            const EvalConfig& cfg = m_options.configs[static_cast<size_t>(k)];
            if (cfg.full) continue;
            if (cancel && cancel->load()) throw Cancelled();
            t0 = Clock::now();
            sels.push_back(m_session.select(cfg.params, cfg.query_agnostic, false));
            select_ms.push_back(ms_since(t0));
            decode.push_back({cfg.decode, cfg.compress_prefill});
        }
        t0 = Clock::now();
        const std::vector<CompareResult> results = m_session.compare_many_to_reference(sels, progress, cancel, decode);
        st.compressed_ms += ms_since(t0);
        for (double v : select_ms) st.compressed_ms += v;

        size_t next = 0;
        for (int64_t k : todo) {
            const EvalConfig& cfg = m_options.configs[static_cast<size_t>(k)];
            json row = {{"task", m_task.name()}, {"cell", cell}, {"config", k}};
            row.update(cp.fields);
            row.update(config_json(cfg));
            row["n_tokens"] = sum.n_tokens;
            json timing = {{"build_ms", cp.build_ms},
                           {"prefill_ms", sum.prefill_ms},
                           {"scorer_ms", sum.scorer_ms},
                           {"reference_ms", reference_ms}};
            if (cfg.full) {
                row["compressed"] = false;
                add_answer_scores(row, cp, full.text, full.text);
                row.update({{"first_divergence", nullptr},
                            {"kl_mean", 0.0},
                            {"top1_agree", 1.0},
                            {"kept_mass", 1.0},
                            {"hit_rate", 1.0},
                            {"kv_bytes", full.kv_bytes},
                            {"kv_bytes_full", full.kv_bytes},
                            {"n_answer_tokens", full.ids.size()}});
                add_span_stats(row, cp, nullptr);
                timing.update({{"select_ms", 0.0}, {"decode_ms", full.decode_ms}, {"decode_tok_s", full.decode_tok_s}});
            } else {
                const Selection& sel = sels[next];
                const CompareResult& r = results[next];
                const double sel_ms = select_ms[next];
                ++next;
                row["compressed"] = (cfg.compress_prefill && sel.compressed) || !r.decode_events.empty();
                row["budget_used"] = cfg.compress_prefill ? json(sel.budget) : json(nullptr);
                if (cfg.decode.enabled()) {
                    row["decode_events"] = r.decode_events.size();
                    row["cache_tokens_max"] = r.cache_tokens.empty() ? json(nullptr)
                                                                     : json(*std::max_element(r.cache_tokens.begin(),
                                                                                              r.cache_tokens.end()));
                }
                add_answer_scores(row, cp, r.compressed.text, full.text);
                double kl = 0, top1 = 0;
                for (const auto& s : r.steps) {
                    kl += s.kl;
                    top1 += s.top1_agree ? 1.0 : 0.0;
                }
                const double n_steps = static_cast<double>(r.steps.size());
                double mass = 0, hit = 0;
                int64_t n_mass = 0, n_hit = 0;
                // Prefill compression off: every prompt position was kept at prefill.
                for (const auto& ls : sel.layers)
                    for (const auto& h : ls.heads) {
                        mass += cfg.compress_prefill ? h.kept_mass : 1.0;
                        ++n_mass;
                    }
                for (const auto& layer : r.hit_rate)
                    for (double h : layer)
                        if (h >= 0) {
                            hit += h;
                            ++n_hit;
                        }
                row.update({{"first_divergence", r.first_divergence < 0 ? json(nullptr) : json(r.first_divergence)},
                            {"kl_mean", n_steps > 0 ? kl / n_steps : 0.0},
                            {"top1_agree", n_steps > 0 ? top1 / n_steps : 1.0},
                            {"kept_mass", n_mass ? round4(mass / static_cast<double>(n_mass)) : 1.0},
                            {"hit_rate", n_hit ? json(round4(hit / static_cast<double>(n_hit))) : json(nullptr)},
                            {"kv_bytes", r.compressed.kv_bytes},
                            {"kv_bytes_full", r.full.kv_bytes},
                            {"n_answer_tokens", r.compressed.ids.size()}});
                if (!r.note.empty()) row["note"] = r.note;
                add_span_stats(row, cp, cfg.compress_prefill ? &sel : nullptr);
                timing.update({{"select_ms", sel_ms},
                               {"decode_ms", r.compressed.decode_ms},
                               {"decode_tok_s", r.compressed.decode_tok_s},
                               {"decode_batch", r.compressed.batch}});
            }
            row["timing"] = std::move(timing);
            row["settings"] = m_settings;
            on_row(row);
            ++st.rows_written;
        }
        if (progress) progress("cells", ++finished, st.cells_in_shard);
    }
    st.wall_ms = ms_since(t_run);
    return st;
}

}  // namespace snapkv::eval
