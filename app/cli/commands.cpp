// The subcommands: info, tokenize, generate, perplexity, bench, analyze, compare.
// Parameters and selections are written in core's one JSON form (params_json.h), the app's too.
#include "app/cli/commands.h"

#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/cli/cli_checks.h"
#include "core/common/atomic_file.h"
#include "core/common/units.h"
#include "core/session/runtime.h"
#include "core/session/session.h"
#include "core/snapkv/params_json.h"

namespace snapkv::cli {
namespace {

using json = nlohmann::json;

struct Common {
    std::string model;
    std::string device = "cpu";
    std::string dtype = "float32";
    std::string weights = "native";
};

struct PromptOpts {
    std::string prompt, prompt_file, doc, question;
    bool chat = false;
    std::string chat_format;
    const CLI::Option* prompt_opt = nullptr;   // to tell --prompt "" from no --prompt
    bool prompt_given() const { return prompt_opt != nullptr && prompt_opt->count() > 0; }
};

// Starts from core's default_params(), as the app and the evaluation grid do: per KV head, so that
// on a GQA model the cache really shrinks; query-head (the official code's choice) is one option away.
struct SelectOpts {
    int64_t window = default_params().window;
    int64_t kernel = default_params().kernel;
    std::string pooling = pooling_name(default_params().pooling);
    int64_t budget = default_params().budget;
    double ratio = default_params().ratio;
    std::string policy = policy_name(default_params().policy);
    std::string gqa = gqa_mode_name(default_params().gqa);
    std::string tie_break = tie_break_name(default_params().tie_break);
    bool query_agnostic = false;
    int64_t sink = default_params().n_sink;
    uint64_t seed = default_params().seed;
    int64_t max_window = 0;                    // 0: max(128, W)
};

// Upper bounds that only catch absurd values (a real setting is far below them).
constexpr int64_t kMaxBudgetOption = int64_t(1) << 40;
constexpr int64_t kMaxLengthOption = int64_t(1) << 26;   // the largest context arch_tensors allows

void write_json(const json& j, const std::string& out) {
    // Invalid UTF-8 in generated text (a token split inside a character) is replaced, not fatal.
    write_output(out, j.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

SelectionParams make_params(const SelectOpts& o);

// The selection options' option names, for core's parameter checks.
std::string option_of(const std::string& field) {
    if (field == "window" || field == "kernel" || field == "budget" || field == "ratio" || field == "pooling")
        return "--" + field;
    if (field == "n_sink") return "--sink";
    return {};
}

// Options that contradict each other, checked before the model is loaded (exit code 2): core's
// check_params without the prompt, naming the options.
void check_select(const SelectOpts& o) {
    if (const auto bad = check_params(make_params(o))) {
        const std::string option = option_of(bad->field);
        usage_error(option.empty() ? bad->field : option, bad->sentence(option_of));
    }
}

int64_t max_window_of(const SelectOpts& o) {
    return std::max<int64_t>(o.max_window > 0 ? o.max_window : 128, o.window);
}

void add_common(CLI::App* c, Common& o) {
    c->add_option("--model,-m", o.model, "Model: a GGUF file or a Hugging Face folder")->required();
    c->add_option("--device", o.device, "cpu, cuda or cuda:N")->capture_default_str();
    c->add_option("--dtype", o.dtype, "float32, float16 or bfloat16 (the last two on CUDA)")
        ->capture_default_str()
        ->check(one_of({"float32", "float16", "bfloat16", "f32", "f16", "bf16"}));
    c->add_option("--weights", o.weights,
                  "native: keep the file's weight format in memory (CPU); f32: dequantize every weight at load")
        ->capture_default_str()
        ->check(one_of({"native", "f32", "float32"}));
}

void add_prompt(CLI::App* c, PromptOpts& o, bool with_doc) {
    auto* p = c->add_option("--prompt,-p", o.prompt, "Prompt text (\"\" starts from BOS alone)");
    o.prompt_opt = p;
    auto* f = c->add_option("--prompt-file,-f", o.prompt_file, "Read the prompt from a file");
    p->excludes(f);
    if (with_doc) {
        auto* d = c->add_option("--doc", o.doc, "Document file (with --question)");
        auto* q = c->add_option("--question", o.question, "Question asked about the document");
        d->needs(q);
        d->excludes(p)->excludes(f);
        q->excludes(p)->excludes(f);
    }
    c->add_flag("--chat", o.chat, "Wrap the prompt in the model's chat template");
    c->add_option("--chat-format", o.chat_format,
                  "Override the detected template: raw, chatml, llama2, llama3, mistral, gemma, phi3")
        ->check(one_of({"raw", "chatml", "llama2", "llama3", "mistral", "gemma", "phi3"}));
}

void add_select(CLI::App* c, SelectOpts& o) {
    c->add_option("--window", o.window, "Observation window W")->capture_default_str()->check(integer_in(1, kMaxLengthOption));
    c->add_option("--kernel", o.kernel, "Pooling kernel K (odd; ignored by --pooling none)")
        ->capture_default_str()
        ->check(integer_in(1, kMaxLengthOption));
    c->add_option("--pooling", o.pooling, "max, avg or none")->capture_default_str()->check(one_of({"max", "avg", "none"}));
    c->add_option("--budget", o.budget, "Budget C: tokens kept per head, window included")
        ->capture_default_str()
        ->check(integer_in(2, kMaxBudgetOption));
    c->add_option("--ratio", o.ratio, "kvpress form: keep int(L*(1-ratio)) tokens instead of --budget")
        ->check(number_in(0.0, 1.0, false, true));
    c->add_option("--policy", o.policy, "Eviction policy: " + policy_list_text())
        ->capture_default_str()
        ->check(one_of(policy_spellings()));
    c->add_option("--gqa", o.gqa,
                  "kv-head (one selection per KV head, the cache shrinks; kvpress) or query-head (one per "
                  "query head, official SnapKV; on a GQA model the cache can grow)")
        ->capture_default_str()
        ->check(one_of({"query-head", "kv-head"}));
    c->add_option("--tie-break", o.tie_break,
                  "Which of equal scores top-k keeps: later (as torch.topk did in the official code) or earlier")
        ->capture_default_str()
        ->check(one_of({"earlier", "later"}));
    c->add_flag("--query-agnostic", o.query_agnostic, "Compress the document alone, then feed the question");
    c->add_option("--sink", o.sink, "StreamingLLM sink tokens")->capture_default_str()->check(integer_in(0, kMaxLengthOption));
    c->add_option("--seed", o.seed, "Seed of the random policy (and of sampling)")->capture_default_str();
    c->add_option("--max-window", o.max_window, "Queries captured per layer (default: max(128, W))")
        ->check(integer_in(1, kMaxLengthOption));
}

// min_tokens: 0 for generate (prompt only), 1 for compare (something to compare).
void add_gen(CLI::App* c, GenerationSettings& o, int64_t min_tokens) {
    c->add_option("--max-tokens,-n", o.max_tokens, "Tokens to generate (generation stops at the context)")
        ->capture_default_str()
        ->check(integer_in(min_tokens, INT64_MAX));   // any count: generation stops at the context
    c->add_flag("--greedy", o.greedy, "Greedy decoding (argmax)");
    c->add_option("--temperature", o.temperature, "Sampling temperature; 0 means greedy, as in llama.cpp")
        ->capture_default_str()
        ->check(number_in(0.0, 1e6, false, false));
    c->add_option("--top-k", o.top_k, "Top-k (0 = off)")->capture_default_str()->check(integer_in(0, int64_t(1) << 31));
    c->add_option("--top-p", o.top_p, "Top-p (1 = off)")->capture_default_str()->check(number_in(0.0, 1.0, true, false));
    c->add_option("--sample-seed", o.seed, "Sampling seed")->capture_default_str();
    c->add_flag("--no-stop{false}", o.stop_at_eog, "Do not stop at the end-of-generation token");
}

// Sampling by default (the CLI's --greedy turns it off), 64 new tokens.
GenerationSettings cli_generation_defaults() {
    GenerationSettings g;
    g.max_tokens = 64;
    g.greedy = false;
    return g;
}

// What a prompt-taking command reads, for check_output_not_input.
std::vector<NamedPath> inputs_of(const Common& c, const PromptOpts& o) {
    return {{"the model (--model)", c.model}, {"the document (--doc)", o.doc},
            {"the prompt file (--prompt-file)", o.prompt_file}};
}

PromptSpec make_prompt(const PromptOpts& o) {
    PromptSpec s;
    if (!o.doc.empty()) {
        s.document = read_text_file(o.doc, "document");
        s.question = o.question;
        if (s.document.empty()) throw InputError("document '" + o.doc + "' is empty");
    } else if (!o.prompt_file.empty()) {
        s.text = read_text_file(o.prompt_file, "prompt file");
    } else {
        s.text = o.prompt;
    }
    if (s.text.empty() && s.document.empty() && !o.chat && !o.prompt_given() && o.prompt_file.empty())
        usage_error("--prompt", "no prompt: give --prompt, --prompt-file or --doc with --question");
    s.chat = o.chat;
    s.chat_format = o.chat_format;
    return s;
}

SelectionParams make_params(const SelectOpts& o) {
    SelectionParams p;
    p.policy = parse_policy(o.policy);
    p.window = o.window;
    p.kernel = o.kernel;
    p.pooling = parse_pooling(o.pooling);
    p.budget = o.budget;
    p.ratio = o.ratio;
    p.gqa = parse_gqa_mode(o.gqa);
    p.tie_break = parse_tie_break(o.tie_break);
    p.n_sink = o.sink;
    p.seed = o.seed;
    return p;
}


ProgressFn stderr_progress(bool quiet) {
    if (quiet || !isatty(fileno(stderr))) return {};
    auto last = std::make_shared<std::string>();
    return [last](const std::string& stage, int64_t done, int64_t total) {
        if (stage != *last) {
            if (!last->empty()) std::cerr << "\n";
            *last = stage;
        }
        std::cerr << "\r" << stage << " " << done << "/" << total << std::flush;
        if (done == total) {
            std::cerr << "\n";
            last->clear();
        }
    };
}

std::unique_ptr<Session> open_session(const Common& c, bool quiet) {
    auto s = std::make_unique<Session>();
    s->load_model(c.model, {c.device, c.dtype, c.weights}, stderr_progress(quiet));
    return s;
}

// ---------------------------------------------------------------------------------------------

void cmd_info(const Common& c, bool as_json) {
    auto s = open_session(c, true);
    const ModelInfo i = s->model_info();
    const ModelConfig& k = i.config;
    std::map<std::string, int> types;
    for (const auto& t : i.tensors) types[t.type]++;
    if (as_json) {
        json j = {{"path", i.path}, {"format", i.format}, {"arch", k.arch}, {"name", k.name},
                  {"n_layer", k.n_layer}, {"n_embd", k.n_embd}, {"n_ff", k.n_ff}, {"n_head", k.n_head},
                  {"n_head_kv", k.n_head_kv}, {"head_dim", k.head_dim}, {"n_rot", k.n_rot}, {"n_vocab", k.n_vocab},
                  {"n_ctx_train", k.n_ctx_train}, {"rope_freq_base", k.rope_freq_base}, {"rope_neox", k.rope_neox},
                  {"rope_scaling", k.rope_scaling.type}, {"rms_eps", k.rms_eps}, {"qkv_bias", k.qkv_bias},
                  {"tied_embeddings", k.tied_embeddings}, {"tensor_types", types},
                  {"n_tensors", i.tensors.size()}, {"tokenizer", i.tokenizer_kind}, {"chat_template", i.chat_format},
                  {"weights", i.weights}, {"weight_bytes", i.weight_bytes}};
        j["architecture"] = arch_json(k);
        write_json(j, "");
        return;
    }
    std::cout << "file           " << i.path << " (" << i.format << ")\n"
              << "architecture   " << k.arch << "  name: " << k.name << "\n"
              << "layers         " << k.n_layer << "\n"
              << "embedding      " << k.n_embd << "   feed-forward " << k.n_ff << "\n"
              << "heads          " << k.n_head << " query, " << k.n_head_kv << " key/value, head_dim " << k.head_dim
              << "\n"
              << "vocabulary     " << k.n_vocab << "   context " << k.n_ctx_train << "\n"
              << "rope           base " << k.rope_freq_base << ", " << k.n_rot << " dims, "
              << (k.rope_neox ? "NeoX" : "normal") << " layout, scaling " << k.rope_scaling.type << "\n"
              << "rms eps        " << k.rms_eps << "   qkv bias " << (k.qkv_bias ? "yes" : "no")
              << "   tied embeddings " << (k.tied_embeddings ? "yes" : "no") << "\n"
              << arch_text(k)
              << "tensors        " << i.tensors.size() << ":";
    for (const auto& [t, n] : types) std::cout << " " << n << " " << t;
    std::cout << "\n"
              << "tokenizer      " << i.tokenizer_kind << "\n"
              << "chat template  " << i.chat_format << "\n"
              << "weights        " << format_bytes(i.weight_bytes) << " "
              << (i.weights == "native" ? "in the file's formats (native)" : "as " + i.dtype) << " on " << i.device
              << "\n";
}

void cmd_tokenize(const Common& c, const std::string& text, bool no_bos, bool as_json) {
    auto s = open_session(c, true);
    const std::vector<int32_t> ids = s->tokenize(text, !no_bos, true);
    json pieces = json::array();
    for (int32_t id : ids) pieces.push_back(s->token_text(id));
    if (as_json) {
        write_json({{"ids", ids}, {"pieces", pieces}}, "");
        return;
    }
    for (size_t i = 0; i < ids.size(); ++i)
        std::cout << std::setw(7) << ids[i] << "  " << pieces[i].get<std::string>() << "\n";
}

void cmd_generate(const Common& c, const PromptOpts& po, const GenerationSettings& go, bool as_json,
                  const std::atomic<bool>* cancel) {
    auto s = open_session(c, as_json);
    TokenFn stream;
    if (!as_json) stream = [](int32_t, const std::string& piece) {
        std::cout << piece << std::flush;
        return true;
    };
    PromptSpec spec = make_prompt(po);
    if (spec.text.empty() && spec.document.empty() && !spec.chat) {
        // An empty prompt starts from BOS alone, as llama.cpp does (llama2.c's golden output is
        // defined that way); a model that adds no BOS has nothing to start from.
        spec.ids = s->tokenize("", true, true);
        if (spec.ids.empty())
            throw InputError("the prompt is empty and this model adds no BOS token, so there is nothing to "
                             "generate from; give a prompt");
    }
    GenerationOutput out = s->generate(spec, go, stream, cancel);
    if (as_json) {
        write_json({{"prompt_ids", out.prompt_ids}, {"ids", out.ids}, {"text", out.text},
                    {"prefill_ms", out.prefill_ms}, {"decode_ms", out.decode_ms},
                    {"decode_tok_s", out.decode_tok_s}, {"stop", out.stop_reason}}, "");
    } else {
        std::cout << std::endl;
        std::cerr << "[" << out.prompt_ids.size() << " prompt tokens, " << out.ids.size() << " generated; prefill "
                  << std::fixed << std::setprecision(1) << out.prefill_ms << " ms, decode " << out.decode_tok_s
                  << " tok/s; stop: " << out.stop_reason << "]\n";
    }
}

// Split a text at the whitespace nearest to its middle: context | continuation.
std::pair<std::string, std::string> split_text(const std::string& t) {
    size_t mid = t.size() / 2;
    size_t at = t.find_first_of(" \n", mid);
    if (at == std::string::npos) at = mid;
    return {t.substr(0, at), t.substr(at)};
}

void cmd_perplexity(const Common& c, const std::string& file, int64_t ctx, bool compress, const SelectOpts& so,
                    bool as_json, const std::atomic<bool>* cancel) {
    auto s = open_session(c, as_json);
    const std::string text = read_text_file(file, "text file");
    if (compress) {
        auto [context, continuation] = split_text(text);
        SelectionParams p = make_params(so);
        auto [full, comp] = s->continuation_perplexity(context, continuation, p, stderr_progress(as_json), cancel);
        if (as_json) {
            write_json({{"ppl_full", full}, {"ppl_compressed", comp}, {"params", params_to_json(p, false)},
                        {"context_chars", context.size()}, {"continuation_chars", continuation.size()}}, "");
        } else {
            std::cout << std::fixed << std::setprecision(4) << "continuation perplexity: full " << full
                      << ", compressed " << comp << "\n";
        }
        return;
    }
    PerplexityOutput r = s->perplexity(text, ctx, stderr_progress(as_json), cancel);
    if (as_json) {
        write_json({{"ppl", r.ppl}, {"chunks", r.chunks}, {"running", r.running}, {"n_tokens", r.n_tokens},
                    {"ctx", r.ctx}}, "");
        return;
    }
    for (size_t i = 0; i < r.running.size(); ++i)
        std::cout << "[" << i + 1 << "]" << std::fixed << std::setprecision(4) << r.running[i] << (i + 1 < r.running.size() ? "," : "\n");
    std::cout << "Final estimate: PPL = " << std::setprecision(4) << r.ppl << "  (" << r.n_tokens << " tokens, ctx "
              << r.ctx << ", " << r.chunks.size() << " chunks)\n";
}

void print_runtime() {
    const RuntimeInfo ri = runtime_info();
    std::cout << "threads        " << ri.intra_op_threads << " intra-op (" << ri.cores << " cores)\n"
              << "BLAS           " << ri.blas << "\n"
              << "CPU features   " << ri.cpu_features << "\n"
              << "weight kernels " << ri.kernel_path << "\n"
              << "LibTorch       " << ri.torch_version << (ri.cuda_available ? " (CUDA available)" : " (CPU)") << "\n";
    if (ri.cuda_available) std::cout << "GPU            " << ri.cuda_device << " " << ri.cuda_summary << "\n";
}

// A benchmark prompt of exactly n tokens: BOS (if the vocab adds one), then the text's tokens,
// repeated as often as needed.
PromptSpec repeated_prompt(Session& s, const PromptOpts& po, int64_t n) {
    const std::string text = po.prompt_file.empty() ? po.prompt : read_text_file(po.prompt_file, "prompt file");
    if (text.empty()) throw InputError("this benchmark needs --prompt or --prompt-file (the text to repeat)");
    const std::vector<int32_t> base = s.tokenize(text, false, true);
    if (base.empty()) throw InputError("the benchmark text has no tokens");
    PromptSpec spec;
    spec.ids = s.tokenize("", true, true);
    while (static_cast<int64_t>(spec.ids.size()) < n) spec.ids.push_back(base[spec.ids.size() % base.size()]);
    spec.ids.resize(static_cast<size_t>(n));
    return spec;
}

// Full vs compressed decode at each prompt length.
void bench_compress(Session& s, const std::vector<int64_t>& lengths, int64_t decode, const PromptOpts& po,
                    const SelectOpts& so, const std::atomic<bool>* cancel) {
    const SelectionParams p = make_params(so);
    std::cout << "policy " << policy_name(p.policy) << ", W " << p.window << ", K " << p.kernel << ", "
              << pooling_name(p.pooling) << " pooling, C " << p.budget << ", " << gqa_mode_name(p.gqa) << "; "
              << decode << " greedy tokens\n\n";
    std::cout << std::right << std::setw(7) << "L" << std::setw(12) << "prefill ms" << std::setw(12) << "KV full"
              << std::setw(12) << "KV comp" << std::setw(13) << "full tok/s" << std::setw(13) << "comp tok/s"
              << std::setw(9) << "speedup" << std::setw(11) << "diverge@" << std::setw(10) << "hit rate" << "\n";
    for (int64_t n : lengths) {
        const PromptSpec spec = repeated_prompt(s, po, n);
        PrefillSettings ps;
        ps.max_window = max_window_of(so);
        ps.h2o = policy_info(p.policy).needs_h2o;
        ps.new_tokens = decode;
        reset_peak_device_memory();
        const PrefillSummary sum = s.prefill(spec, ps, stderr_progress(false), cancel);
        const int64_t peak_prefill = peak_device_memory_bytes();
        reset_peak_device_memory();
        CompareSettings cs;
        cs.generation.max_tokens = decode;
        cs.generation.greedy = true;
        cs.generation.stop_at_eog = false;
        const CompareResult r = s.compare(p, cs, {}, cancel);
        double hit = 0;
        int64_t nh = 0;
        for (const auto& layer : r.hit_rate)
            for (double h : layer)
                if (h >= 0) { hit += h; ++nh; }
        std::cout << std::setw(7) << n << std::setw(12) << std::fixed << std::setprecision(0) << sum.prefill_ms
                  << std::setw(12) << format_bytes(r.full.kv_bytes) << std::setw(12) << format_bytes(r.compressed.kv_bytes)
                  << std::setw(13) << std::setprecision(1) << r.full.decode_tok_s << std::setw(13)
                  << r.compressed.decode_tok_s << std::setw(8) << std::setprecision(2)
                  << (r.full.decode_tok_s > 0 ? r.compressed.decode_tok_s / r.full.decode_tok_s : 0.0) << "x"
                  << std::setw(11) << (r.first_divergence < 0 ? std::string("none") : std::to_string(r.first_divergence))
                  << std::setw(10) << std::setprecision(3) << (nh ? hit / nh : -1.0) << "\n";
        if (const int64_t peak_decode = peak_device_memory_bytes(); peak_decode > 0 || peak_prefill > 0)
            std::cout << "        peak device memory: prefill " << format_bytes(peak_prefill)
                      << ", lockstep decode (both caches) " << format_bytes(peak_decode) << "\n";
        std::cout << std::flush;
    }
}

void cmd_bench(const Common& c, const std::vector<int64_t>& lengths, int64_t decode, bool retune, bool compress,
               bool profile, const PromptOpts& po, const SelectOpts& so, const std::atomic<bool>* cancel) {
    print_runtime();
    auto s = open_session(c, true);
    const ModelInfo i = s->model_info();
    std::cout << "model          " << i.path << " (" << i.config.arch << ", " << i.config.n_layer << " layers)\n\n";
    if (compress) {
        bench_compress(*s, lengths, decode, po, so, cancel);
        return;
    }
    if (!retune) {
        std::vector<BenchRow> rows = s->bench(lengths, decode, {}, cancel, profile);
        std::cout << std::left << std::setw(18) << "test" << std::right << std::setw(10) << "tokens" << std::setw(12)
                  << "ms" << std::setw(12) << "tok/s" << "\n";
        for (const auto& r : rows) {
            std::cout << std::left << std::setw(18) << r.what << std::right << std::setw(10) << r.tokens
                      << std::setw(12) << std::fixed << std::setprecision(1) << r.ms << std::setw(12) << r.tok_s
                      << "\n";
            for (const auto& [stage, ms] : r.stages)
                std::cout << "  " << std::left << std::setw(26) << stage << std::right << std::setw(12) << ms
                          << std::setw(11) << std::setprecision(1) << 100.0 * ms / r.ms << "%\n";
        }
        return;
    }
    PrefillSettings ps;
    ps.max_window = max_window_of(so);
    const PromptSpec spec = repeated_prompt(*s, po, lengths.back());
    PrefillSummary sum = s->prefill(spec, ps, stderr_progress(false), cancel);
    std::cout << "prompt " << sum.n_tokens << " tokens: prefill " << std::fixed << std::setprecision(0)
              << sum.prefill_ms << " ms, layer score caches " << sum.scorer_ms << " ms\n\n";
    std::cout << s->retune_benchmark(make_params(so));
}

// Why the compressed cache (comp bytes) is larger than the full one, or "".
std::string growth_note(Session& s, const Selection& sel, int64_t full, int64_t comp) {
    const ModelConfig& c = s.model_info().config;
    return cache_growth_note(sel, c.n_head, c.n_head_kv, full, comp);
}

// The selection in core's one JSON form (the app's export holds the same object), with the prompt's
// tokens and the parameters beside it.
json selection_json(Session& s, const Selection& sel, const SelectionParams& p, bool agnostic) {
    const PrefillSummary& sum = s.prefill_summary();
    std::vector<int32_t> tokens(sum.ids.begin(), sum.ids.begin() + sel.n_tokens);
    const auto [full, comp] = s.kv_bytes(sel);
    json j = selection_to_json(sel, {full, comp, growth_note(s, sel, full, comp)});
    j["n_prompt_tokens"] = sum.n_tokens;
    j["tokens"] = tokens;
    j["params"] = params_to_json(p, agnostic);
    return j;
}

void cmd_analyze(const Common& c, const PromptOpts& po, const SelectOpts& so, const std::string& out,
                 const std::atomic<bool>* cancel) {
    check_output_not_input("--json", out, inputs_of(c, po));
    check_select(so);
    const PromptSpec spec = make_prompt(po);
    if (!out.empty() && out != "-") create_parent_dirs(out);   // fail before the prefill, not after
    auto s = open_session(c, true);
    SelectionParams p = make_params(so);
    PrefillSettings ps;
    ps.max_window = max_window_of(so);
    // One selection, no retunes: H2O's sums (a second pass over the keys) only when it is the policy.
    ps.h2o = p.policy == Policy::H2O;
    s->prefill(spec, ps, stderr_progress(out.empty() || out == "-"), cancel);
    Selection sel = s->select(p, so.query_agnostic, true);
    write_json(selection_json(*s, sel, p, so.query_agnostic), out);
    if (!sel.note.empty()) std::cerr << "note: " << sel.note << "\n";
    const auto [full, comp] = s->kv_bytes(sel);
    if (const std::string g = growth_note(*s, sel, full, comp); !g.empty()) std::cerr << "note: " << g << "\n";
}

void cmd_compare(const Common& c, const PromptOpts& po, const SelectOpts& so, const GenerationSettings& go, double theta,
                 const std::string& out, const std::atomic<bool>* cancel) {
    check_output_not_input("--json", out, inputs_of(c, po));
    check_select(so);
    const PromptSpec spec = make_prompt(po);
    if (!out.empty() && out != "-") create_parent_dirs(out);   // fail before the prefill, not after
    auto s = open_session(c, true);
    SelectionParams p = make_params(so);
    PrefillSettings ps;
    ps.max_window = max_window_of(so);
    ps.h2o = policy_info(p.policy).needs_h2o;
    ps.new_tokens = go.max_tokens;   // prompt + new tokens are checked against the context first
    const bool quiet = out.empty() || out == "-";
    s->prefill(spec, ps, stderr_progress(quiet), cancel);
    CompareSettings cs;
    cs.generation = go;
    cs.query_agnostic = so.query_agnostic;
    cs.hit_threshold = theta;
    CompareResult r = s->compare(p, cs, stderr_progress(quiet), cancel);
    auto run = [](const RunOutput& o) {
        return json{{"ids", o.ids}, {"text", o.text}, {"kv_bytes", o.kv_bytes}, {"decode_tok_s", o.decode_tok_s},
                    {"decode_ms", o.decode_ms}};
    };
    json steps = json::array();
    for (const auto& st : r.steps) steps.push_back({{"kl", st.kl}, {"top1_agree", st.top1_agree}, {"rank", st.rank}});
    // The selection the compressed run used (cheap to redo): its budget and L explain a larger cache.
    const std::string cache_note =
        growth_note(*s, s->select(p, r.query_agnostic, false), r.full.kv_bytes, r.compressed.kv_bytes);
    json j = {{"full", run(r.full)}, {"compressed", run(r.compressed)}, {"steps", steps},
              {"first_divergence", r.first_divergence < 0 ? json(nullptr) : json(r.first_divergence)},
              {"hit_rate", r.hit_rate}, {"hit_threshold", theta}, {"params", params_to_json(p, r.query_agnostic)},
              {"prefill_ms", r.prefill_ms}, {"note", r.note}, {"cache_note", cache_note}};
    write_json(j, out);
    if (!quiet) {
        std::cerr << "full:       " << r.full.text << "\ncompressed: " << r.compressed.text << "\n";
        std::cerr << "KV bytes " << format_bytes(r.full.kv_bytes) << " -> " << format_bytes(r.compressed.kv_bytes)
                  << "; first divergence: " << (r.first_divergence < 0 ? std::string("none") : std::to_string(r.first_divergence))
                  << "\n";
        if (!cache_note.empty()) std::cerr << "note: " << cache_note << "\n";
    }
}

std::vector<int64_t> parse_lengths(const std::string& s) {
    std::vector<int64_t> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
        size_t used = 0;
        long long v = 0;
        try {
            v = std::stoll(item, &used);
        } catch (...) {
            used = 0;
        }
        if (used == 0 || used != item.size() || v < 1 || v > kMaxLengthOption)
            usage_error("--lengths", "'" + item + "' is not a prompt length (an integer from 1 to " +
                                         std::to_string(kMaxLengthOption) + ")");
        out.push_back(v);
    }
    if (out.empty()) usage_error("--lengths", "is empty; give lengths like 128,512");
    return out;
}

}  // namespace

void register_commands(CLI::App& app, const std::atomic<bool>* cancel) {
    register_model_commands(app, cancel);
    // Options live as long as the app: one static block per subcommand.
    {
        static Common c;
        static bool as_json = false;
        auto* cmd = app.add_subcommand("info", "Architecture, hyperparameters, tensor types, tokenizer, template");
        add_common(cmd, c);
        cmd->add_flag("--json", as_json, "Print JSON");
        cmd->callback([] { cmd_info(c, as_json); });
    }
    {
        static Common c;
        static std::string text;
        static bool as_json = false, no_bos = false;
        auto* cmd = app.add_subcommand("tokenize", "Token ids and pieces of a text");
        add_common(cmd, c);
        cmd->add_option("--text,-t", text, "Text to tokenize")->required();
        cmd->add_flag("--no-bos", no_bos, "Do not add BOS/EOS even if the model's metadata says so");
        cmd->add_flag("--json", as_json, "Print {\"ids\": [...], \"pieces\": [...]}");
        cmd->callback([] { cmd_tokenize(c, text, no_bos, as_json); });
    }
    {
        static Common c;
        static PromptOpts po;
        static GenerationSettings go = cli_generation_defaults();
        static bool as_json = false;
        auto* cmd = app.add_subcommand("generate", "Generate text with the full cache");
        add_common(cmd, c);
        add_prompt(cmd, po, false);
        add_gen(cmd, go, 0);
        cmd->add_flag("--json", as_json, "Print JSON with prompt_ids, ids, text, prefill_ms, decode_ms");
        cmd->callback([cancel] { cmd_generate(c, po, go, as_json, cancel); });
    }
    {
        static Common c;
        static std::string file;
        static int64_t ctx = 512;
        static bool as_json = false, compress = false;
        static SelectOpts so;
        auto* cmd = app.add_subcommand("perplexity", "llama.cpp-style perplexity, or of a continuation under compression");
        add_common(cmd, c);
        cmd->add_option("--file,-f", file, "Text file")->required();
        cmd->add_option("--ctx,-c", ctx, "Chunk size in tokens")->capture_default_str()->check(integer_in(4, kMaxLengthOption));
        cmd->add_flag("--compress", compress,
                      "Split the text at its middle; score the second half after the first, with the full cache and "
                      "with the first half's cache compressed by the selection options");
        add_select(cmd, so);
        cmd->add_flag("--json", as_json, "Print JSON");
        cmd->callback([cancel] {
            if (compress) check_select(so);
            cmd_perplexity(c, file, ctx, compress, so, as_json, cancel);
        });
    }
    {
        static Common c;
        static std::string lengths = "128,512,2048";
        static int64_t decode = 32;
        static bool retune = false, compress = false, profile = false;
        static PromptOpts po;
        static SelectOpts so;
        auto* cmd = app.add_subcommand("bench", "Prefill and decode speed, or (--retune) SnapKV retune latency");
        add_common(cmd, c);
        cmd->add_option("--lengths", lengths, "Prompt lengths, comma separated")->capture_default_str();
        cmd->add_option("--decode", decode, "Tokens decoded after each prefill")
            ->capture_default_str()
            ->check(integer_in(0, kMaxLengthOption));
        cmd->add_flag("--retune", retune,
                      "Time selection retunes on a prompt of the last --lengths tokens (the prompt text repeated)");
        cmd->add_flag("--compress", compress,
                      "Full vs compressed decode speed and KV bytes at each length (the prompt text is repeated)");
        cmd->add_flag("--profile", profile, "With plain prefill: time per stage of the forward pass (summed over layers)");
        add_prompt(cmd, po, true);
        add_select(cmd, so);
        cmd->callback([cancel] {
            const std::vector<int64_t> ls = parse_lengths(lengths);
            if (retune || compress) check_select(so);
            cmd_bench(c, ls, decode, retune, compress, profile, po, so, cancel);
        });
    }
    {
        static Common c;
        static PromptOpts po;
        static SelectOpts so;
        static std::string out;
        auto* cmd = app.add_subcommand("analyze", "Prefill with capture and write the SnapKV selection as JSON");
        add_common(cmd, c);
        add_prompt(cmd, po, true);
        add_select(cmd, so);
        cmd->add_option("--json", out, "Output file ('-' for stdout)")->required();
        cmd->callback([cancel] { cmd_analyze(c, po, so, out, cancel); });
    }
    {
        static Common c;
        static PromptOpts po;
        static SelectOpts so;
        static GenerationSettings go = cli_generation_defaults();
        static double theta = 0.05;
        static std::string out;
        auto* cmd = app.add_subcommand("compare", "Full vs compressed generation in lockstep, as JSON");
        add_common(cmd, c);
        add_prompt(cmd, po, true);
        add_select(cmd, so);
        add_gen(cmd, go, 1);
        cmd->add_option("--hit-threshold", theta, "θ: attention above it marks an important position")
            ->capture_default_str()
            ->check(number_in(0.0, 1.0, true, true));
        cmd->add_option("--json", out, "Output file ('-' for stdout)")->required();
        cmd->callback([cancel] { cmd_compare(c, po, so, go, theta, out, cancel); });
    }
    register_eval_commands(app, cancel);
    register_ruler_commands(app, cancel);
}

}  // namespace snapkv::cli
