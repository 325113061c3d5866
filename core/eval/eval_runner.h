// The evaluation loop shared by the needle grid and the question-set sweep: for every cell (one
// document + question) of this shard that still misses rows, one prefill with capture, one
// full-cache decode, then each configuration's selection from that same prefill and their
// compressed decodes together (Session::compare_many_to_reference: one pass over the weights per
// step for all of them); a cell's rows then go to the caller (which writes and flushes each). Scores
// (needle found, reference match, agreement with the full answer, KL, hit rate, kept mass, kept
// needle tokens) and timings are filled in here. Torch-free: it talks to core/session only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/eval/eval_grid.h"
#include "core/eval/results_file.h"
#include "core/session/session.h"

namespace snapkv::eval {

// Token span [first, last) in the prompt; empty when first < 0.
struct TokenSpan {
    int64_t first = -1;
    int64_t last = -1;
    bool empty() const { return first < 0 || last <= first; }
};

// A prompt's token pieces concatenated, so that a text found in it (a needle, an answer) can be mapped
// back to the tokens that carry it; the needle and RULER tasks share it.
struct PieceText {
    std::string text;
    std::vector<size_t> ends;  // end offset in text of each token's piece
    // Token span of the characters [a, b) of text.
    TokenSpan span(size_t a, size_t b) const;
};
PieceText piece_text(const Session& s, const std::vector<int32_t>& ids);

// One cell, ready to prefill.
struct CellPrompt {
    PromptSpec prompt;
    nlohmann::json fields = nlohmann::json::object();  // row fields naming the cell (length, depth, item, ...)
    std::string value;                                 // needle value to find in the answer ("" = none)
    bool has_reference = false;                        // score against `reference` (exact, contains, word F1)
    std::string reference;
    // Every one of them is looked for in the answer (RULER's string_match_all): the row's "score".
    std::vector<std::string> references;
    int64_t max_tokens = 0;  // answer tokens of this cell; 0 = the run's
    TokenSpan needle;        // needle sentence tokens (kept-needle stats)
    TokenSpan value_tokens;  // the value's tokens inside it
    double build_ms = 0;     // building the document
};

// A grid's cells: needle documents at (length, depth), or the items of a question set.
class EvalTask {
public:
    virtual ~EvalTask() = default;
    virtual std::string name() const = 0;  // "needle" | "sweep"
    virtual int64_t n_cells() const = 0;
    virtual nlohmann::json settings() const = 0;  // what defines the cells
    virtual CellPrompt prepare(const Session& s, int64_t cell) const = 0;
    // Of the cells still to run (in order), those whose prompt may be the longest: the grid's plan
    // (eval_plan.h) builds each and forecasts the longest. Default: every one of them.
    virtual std::vector<int64_t> plan_candidates(const std::vector<int64_t>& to_run) const { return to_run; }
    // How the plan names a cell ("length 2048 depth 50", "length 4096 niah_single_1", an item's
    // id); default "cell 3".
    virtual std::string cell_label(int64_t cell) const { return "cell " + std::to_string(cell); }
};

struct RunOptions {
    std::vector<EvalConfig> configs;  // [0] is the full cache (expand_configs)
    GenerationSettings generation;    // greedy by default: rows are deterministic
    int64_t kl_steps = 32;            // KL / top-1 over the first N steps
    double hit_threshold = 0.05;      // θ (paper §4)
    Shard shard;
};

struct RunStats {
    int64_t cells_in_shard = 0;
    int64_t cells_run = 0;      // prefilled in this run
    int64_t cells_skipped = 0;  // every row already present (resume)
    int64_t rows_written = 0;
    double prefill_ms = 0;     // prefill + layer score caches, summed
    double reference_ms = 0;   // full-cache decodes
    double compressed_ms = 0;  // selections + compressed decodes
    double wall_ms = 0;
    // What running each compressed configuration on its own (prefill + full + compressed decode, as
    // `snapkv compare` does) would have cost on top: (configs in the cell - 1) x (prefill + full decode).
    double saved_ms = 0;
};

using RowFn = std::function<void(const Row& row)>;

class EvalRun {
public:
    // Validates the options against the loaded model (throws ParamError naming the parameter:
    // "max_tokens", "kl_steps", "hit_threshold").
    EvalRun(Session& session, const EvalTask& task, RunOptions options);

    // The settings every row carries: model, task, grid, generation, scoring.
    const nlohmann::json& settings() const { return m_settings; }
    const RunOptions& options() const { return m_options; }
    std::vector<int64_t> shard_cells() const;

    // Runs the shard's cells, skipping rows in `done`. progress sees ("cells", done, total) after
    // each cell and the session's stages inside it. Throws Cancelled (rows written so far stay;
    // a cancel while a cell's rows go out lets that cell's finished rows out first).
    RunStats run(const std::set<RowKey>& done, const RowFn& on_row, const ProgressFn& progress = {},
                 CancelFlag cancel = nullptr);

private:
    Session& m_session;
    const EvalTask& m_task;
    RunOptions m_options;
    nlohmann::json m_settings;
};

// Share of the span's tokens that a selection kept, per layer and head (1 for a layer kept whole,
// and for tokens in the window or after the compressed part).
struct SpanKept {
    double mean = 1.0;
    bool all = true;                         // every head of every layer kept every token
    std::vector<double> layers;              // [n_layer]
    std::vector<std::vector<double>> heads;  // [n_layer][selection heads]
};
SpanKept span_kept(const Selection& sel, TokenSpan span);

}  // namespace snapkv::eval
