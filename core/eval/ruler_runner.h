// RULER's synthetic tasks as a grid for the evaluation loop (eval_runner.h): cells are task x
// length x sample, each a document generated from the seed and sized with the model's tokenizer and
// chat template; every configuration answers from the cell's one prefill and is scored with RULER's
// string_match_all (the row's "score", 0..1). Also the checks made before any prefill (lengths
// against the context and the memory) and the per-task means the CLI and the app show. No QA tasks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/eval/eval_runner.h"
#include "core/eval/ruler_tasks.h"

namespace snapkv::eval {

// What a RULER run uses where nothing is said, for `snapkv ruler` and the Evaluate tab alike: every
// task, RULER's 4096-token length, 10 samples per task and length, and kvpress's compression ratios
// as the sizes, with no fixed budget. The other axes are GridAxes{}'s, the seed default_params()'s,
// the KL steps and hit threshold RunOptions{}'s.
struct RulerDefaults {
    std::string tasks = "all";  // parse_ruler_tasks
    std::vector<int64_t> lengths{4096};
    int64_t samples = 10;
    std::vector<double> ratios{0.25, 0.5, 0.75, 0.9};
    std::vector<int64_t> budgets;  // none
};

struct RulerOptions {
    std::vector<std::string> tasks;             // names (parse_ruler_tasks)
    std::vector<int64_t> lengths;               // RULER's max_seq_length: prompt + the task's answer tokens
    int64_t samples = RulerDefaults{}.samples;  // per task and length
    uint64_t seed = default_params().seed;
    ChatSettings chat{true, "", "", ""};   // the model's template (core/eval/chat_settings.h)
    std::vector<std::string> essay_files;  // names of the essay files (recorded in the settings)
};

class RulerTask : public EvalTask {
public:
    // Checks the options against the model: known tasks, samples >= 1, lengths unique and within the
    // model's context, and each task's fixed part (instructions, needles, question) shorter than each
    // length. Throws ParamError naming the parameter ("tasks", "samples", "lengths") and the value.
    RulerTask(const Session& s, RulerData data, RulerOptions options);

    std::string name() const override { return "ruler"; }
    int64_t n_cells() const override;
    nlohmann::json settings() const override;
    // The cell's prompt; its row fields: ruler_task, length, sample, n_units, needle_spans (token
    // spans of the sentences carrying the answer, in text order) and answer_spans (the span of each
    // reference, in the references' order; null where it is not inside a needle, as for cwe and fwe).
    CellPrompt prepare(const Session& s, int64_t cell) const override;
    // Each task sizes its samples to the length, so the first sample still to run of each task at
    // the longest length stands for them all (in the order of the cells).
    std::vector<int64_t> plan_candidates(const std::vector<int64_t>& to_run) const override;
    std::string cell_label(int64_t cell) const override;  // "length 4096 niah_single_1"

    struct CellId {
        int64_t length = 0;
        const RulerTaskSpec* task = nullptr;
        int64_t sample = 0;
    };
    // cell = (length index x tasks + task index) x samples + sample
    CellId cell_id(int64_t cell) const;
    // The cell's generated sample, sized for the model (what prepare() prompts with).
    RulerSample sample(const Session& s, int64_t cell) const;
    PromptSpec prompt_for(const RulerText& text) const;
    // The most answer tokens any chosen task asks for (the run's max_tokens).
    int64_t max_answer_tokens() const;
    const RulerOptions& options() const { return m_opt; }

private:
    RulerData m_data;
    RulerOptions m_opt;
    std::vector<const RulerTaskSpec*> m_tasks;
    int64_t m_n_ctx = 0;
};

// Refuses (ParamError "lengths", one line with the numbers) a run whose longest prompt would not
// fit in the free memory with these configurations' capture, before any prefill.
void check_ruler_memory(const Session& s, const RulerTask& task, const RunOptions& run, bool query_agnostic);

// Refuses (ParamError "ratios", one line with the numbers) a compression ratio that would keep no
// more than the window of the shortest prompt, before any prefill: kvpress's ratio keeps
// int(n x (1 - r)) of n tokens, and SnapKV-style selection always keeps the window.
void check_ruler_ratios(const RulerTask& task, const RunOptions& run);

// Mean and standard deviation over samples of the row scores (x100, as RULER reports them) of one
// task, length and configuration.
struct RulerScore {
    std::string task;
    int64_t length = 0;
    int64_t config = 0;
    double mean = 0;
    double sd = 0;  // population s.d. over the samples
    int64_t n = 0;
};
// One entry per (task, length, config) present in the rows, in that order of first appearance.
std::vector<RulerScore> ruler_scores(const std::vector<Row>& rows);

}  // namespace snapkv::eval
