// RULER's synthetic tasks (Hsieh et al. 2024, arXiv 2404.06654; NVIDIA/RULER scripts/synthetic.yaml)
// generated from a seed: the eight needle-in-a-haystack variants, variable tracking, common words and
// frequent words, each sized to a token length by a binary search on the size of its haystack, with
// the references an answer is scored against (string_match_all). The instructions, needles and
// questions are this project's wording of RULER's. Not here: the QA tasks (they need SQuAD and
// HotpotQA), the model and the chat template (a token counter is passed in). Torch-free.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace snapkv::eval {

enum class RulerFamily { Niah, VariableTracking, CommonWords, FrequentWords };

// One task as RULER's synthetic.yaml configures it.
struct RulerTaskSpec {
    std::string name;  // "niah_single_1", ..., "vt", "cwe", "fwe"
    RulerFamily family = RulerFamily::Niah;
    int64_t answer_tokens = 128;  // RULER's tokens_to_generate: niah 128, vt 30, cwe 120, fwe 50
    // niah
    std::string haystack;    // "noise" (RULER's repeat), "essay", "needles" (distractor needles)
    std::string key_type;    // "words" (adjective-noun) or "uuids"
    std::string value_type;  // "numbers" (7 digits) or "uuids"
    int64_t n_keys = 1;      // needles with different keys (distractors when only one is asked)
    int64_t n_values = 1;    // values per key, all asked
    int64_t n_queries = 1;   // keys asked
    // vt
    int64_t n_chains = 1;
    int64_t n_hops = 4;
    // cwe
    int64_t n_common = 10;
    int64_t common_repeats = 30;
    int64_t uncommon_repeats = 3;
    // fwe
    double alpha = 2.0;  // Zipf exponent of the word counts
};

// The 11 synthetic tasks, in RULER's order.
const std::vector<RulerTaskSpec>& ruler_tasks();
// Throws InputError naming the task and listing the allowed ones (and that QA is left out).
const RulerTaskSpec& find_ruler_task(const std::string& name);
// "all" or a comma list of task names (checked, no repeats), in the order given.
std::vector<std::string> parse_ruler_tasks(const std::string& list);

// What the generators draw from: the word list (datasets/ruler) and the essays' words.
struct RulerData {
    std::vector<std::string> adjectives, nouns, verbs;  // keys are adjective-noun pairs
    std::vector<std::string> common_words;              // cwe: the three lists joined, sorted, unique
    std::vector<std::string> essay_words;               // essay text split at white space, in order
    std::string words_fnv;                              // FNV-1a of the word lists
    std::string essays_fnv;                             // FNV-1a of the essay text
};
// Reads adjectives.txt, nouns.txt and verbs.txt (one lower-case word a line) from `words_dir`;
// `essay_text` is the essays' body text (headings and the italic byline dropped here). Throws
// InputError naming the file for a missing or short list.
RulerData load_ruler_data(const std::string& words_dir, const std::string& essay_text);

// A generated sample before the chat template.
struct RulerText {
    std::string document;  // instructions (+ a worked example) and the context: what a
                           // query-agnostic compression sees
    std::string question;
    std::string answer_prefix;            // the words the answer starts with
    std::vector<std::string> references;  // all to be found in the answer
    std::vector<std::string> needles;     // the sentences that carry the references, in text order
};

// The sample of `seed` with `n_units` haystack units: noise sentences (niah noise, vt), essay words,
// distractor needles, distinct words (cwe) or words in all (fwe). `length` is the requested total
// (cwe and fwe scale their example and vocabulary with it, as RULER does). The keys, values and
// words depend on the seed alone; positions and fillers on the seed and n_units.
RulerText generate_ruler_text(const RulerTaskSpec& task, const RulerData& data, uint64_t seed, int64_t n_units,
                              int64_t length);
// Fewest and most units a sample may have (most: -1 = no limit).
int64_t ruler_min_units(const RulerTaskSpec& task);
int64_t ruler_max_units(const RulerTaskSpec& task, const RulerData& data);

// Prompt tokens of a text, chat template included.
using RulerTokenCount = std::function<int64_t(const RulerText&)>;

struct RulerSample {
    RulerText text;
    int64_t n_units = 0;
    int64_t prompt_tokens = 0;
};
// The sample whose prompt tokens + the task's answer tokens come closest to `length` (as RULER's
// max_seq_length counts them), found by a binary search on n_units; never more prompt tokens than
// max_prompt (> 0). Throws InputError when even the fewest units are too long, or (cwe) when the
// word list runs out before the length is reached.
RulerSample size_ruler_sample(const RulerTaskSpec& task, const RulerData& data, uint64_t seed, int64_t length,
                              const RulerTokenCount& count, int64_t max_prompt = 0);

// The seed of sample `index` of a task at a length: every (task, length, index) differs.
uint64_t ruler_sample_seed(uint64_t seed, const std::string& task, int64_t length, int64_t index);

}  // namespace snapkv::eval
