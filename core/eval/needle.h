// Needle in a haystack: the haystack (bundled prose, cycled as often as a length needs), the needle
// (a pass key or a fact sentence, with the question about it), and the document of one grid cell:
// the haystack cut so that the whole prompt (chat template, document, question) is exactly
// `length` tokens, with the needle inserted at the sentence boundary nearest to `depth` percent of
// the haystack. The needle's and its value's token positions are found in the prompt. Cells are
// length-major: cell = length index x depths + depth index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/eval/eval_runner.h"

namespace snapkv::eval {

struct Haystack {
    std::string text;                // files joined by blank lines
    std::vector<std::string> files;  // file names, in order
    std::string fnv;                 // FNV-1a of text
};
// Files, or folders (their *.md and *.txt files, sorted by name). Throws InputError for a missing
// path or an empty haystack.
Haystack load_haystack(const std::vector<std::string>& paths);

struct NeedleSpec {
    std::string name;  // "passkey", "fact"
    std::string text;  // the sentence; "{value}" is replaced by the value
    std::string question;
    std::string value;  // "" = a 5-digit pass key drawn per cell from the seed
};
// A JSON Lines file of {name, needle, question, value?}; errors name the file and line.
std::vector<NeedleSpec> load_needles(const std::string& path);
const NeedleSpec& find_needle(const std::vector<NeedleSpec>& needles, const std::string& name, const std::string& file);

// The pass key of a cell: 5 digits from (seed, length, depth), so that no two cells share one.
std::string pass_key(uint64_t seed, int64_t length, double depth);

struct NeedleOptions {
    Haystack haystack;
    NeedleSpec needle;
    std::vector<int64_t> lengths;         // prompt tokens
    std::vector<double> depths;           // percent, 0..100
    ChatSettings chat{true, "", "", ""};  // the model's template (core/eval/chat_settings.h)
    uint64_t seed = 42;
};

// The options a run's settings (EvalRun::settings()["needle"]) were made with, over `haystack`,
// which must be the same text (checked by its FNV-1a): the task of a results file, rebuilt to open
// one of its cells again.
NeedleOptions needle_options_from_settings(const nlohmann::json& needle_settings, Haystack haystack);

class NeedleTask : public EvalTask {
public:
    // Tokenizes the haystack once; checks depths (0..100), lengths (above the needle + question +
    // template, and length + max_tokens within the model's context). Throws ParamError naming the parameter
    // ("lengths", "depths", "haystack") and the value.
    NeedleTask(const Session& s, NeedleOptions options, int64_t max_tokens);

    std::string name() const override { return "needle"; }
    int64_t n_cells() const override;
    nlohmann::json settings() const override;
    CellPrompt prepare(const Session& s, int64_t cell) const override;
    // A cell's prompt is sized to its length (its depth does not change it), so the first cell
    // still to run at the longest length stands for them all.
    std::vector<int64_t> plan_candidates(const std::vector<int64_t>& to_run) const override;
    std::string cell_label(int64_t cell) const override;  // "length 2048 depth 50"

    const NeedleOptions& options() const { return m_opt; }
    // Default lengths: 5 lengths doubling up to the model's context less max_tokens, or up to `cap`
    // when that is smaller (0 = no cap): cap/16 .. cap, those above the needle's minimum.
    static std::vector<int64_t> default_lengths(const Session& s, const NeedleOptions& options, int64_t max_tokens,
                                                int64_t cap = 0);
    int64_t min_length() const { return m_min_length; }

private:
    PromptSpec prompt_for(const std::string& document, const std::string& question) const;
    std::string document(const Session& s, int64_t n_hay, double depth, const std::string& needle_text) const;

    NeedleOptions m_opt;
    std::vector<int32_t> m_hay_ids;  // haystack tokens, cycled to the longest length
    int64_t m_min_length = 0;        // prompt tokens with an empty haystack
};

}  // namespace snapkv::eval
