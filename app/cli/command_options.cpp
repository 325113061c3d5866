// The option structs' registration and the checks and conversions the prompt subcommands share
// (command_options.h). No subcommand here.
#include "app/cli/command_options.h"

#include <iostream>
#include <memory>

#include <unistd.h>

#include "app/cli/cli_checks.h"
#include "core/common/atomic_file.h"
#include "core/tokenizer/chat_template.h"

namespace snapkv::cli {
namespace {

// The selection options' option names, for core's parameter checks.
std::string option_of(const std::string& field) {
    if (field == "window" || field == "kernel" || field == "budget" || field == "ratio" || field == "pooling")
        return "--" + field;
    if (field == "n_sink") return "--sink";
    return {};
}

// Buffers what nlohmann's serializer writes and hands it on in 1 MiB pieces, so that a large
// JSON (an 8K-token selection with every head's votes: ~50 MB) is never one string in memory.
class PieceAdapter : public nlohmann::detail::output_adapter_protocol<char> {
public:
    explicit PieceAdapter(const ByteSink& sink) : m_sink(sink) { m_buf.reserve(kPiece); }
    void write_character(char c) override {
        m_buf.push_back(c);
        if (m_buf.size() >= kPiece) flush();
    }
    void write_characters(const char* s, std::size_t n) override {
        m_buf.append(s, n);
        if (m_buf.size() >= kPiece) flush();
    }
    void flush() {
        if (m_buf.empty()) return;
        m_sink(m_buf);
        m_buf.clear();
    }

private:
    static constexpr size_t kPiece = size_t(1) << 20;
    const ByteSink& m_sink;
    std::string m_buf;
};

}  // namespace

void write_json(const json& j, const std::string& out) {
    auto produce = [&](const ByteSink& write) {
        auto adapter = std::make_shared<PieceAdapter>(write);
        // Invalid UTF-8 in generated text (a token split inside a character) is replaced, not fatal.
        nlohmann::detail::serializer<json> ser(adapter, ' ', json::error_handler_t::replace);
        ser.dump(j, /*pretty_print=*/true, /*ensure_ascii=*/false, /*indent_step=*/2);
        adapter->write_character('\n');
        adapter->flush();
    };
    if (out.empty() || out == "-") {
        produce([](std::string_view piece) { write_output("-", std::string(piece)); });
        return;
    }
    write_file_atomic(out, produce);
}

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
                  "native: keep the file's weight format in memory (CPU); native-q8: the same, and decode's "
                  "products quantize their input to 8 bits per block as llama.cpp does (faster, results differ "
                  "slightly); f32: dequantize every weight at load")
        ->capture_default_str()
        ->check(one_of({"native", "native-q8", "f32", "float32"}));
    add_cache_type(c, o.cache_type);
}

void add_cache_type(CLI::App* c, std::string& type) {
    c->add_option("--cache-type", type,
                  "KV cache storage as llama.cpp's -ctk/-ctv: f32 (exact), f16, bf16 or q8_0 (rounded when "
                  "written; scores and selection read the stored values)")
        ->capture_default_str()
        ->check(one_of({"f32", "f16", "bf16", "q8_0"}));
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
    auto* chat = c->add_flag("--chat", o.chat, "Wrap the prompt in the model's chat template (as its user turn)");
    c->add_option("--system", o.system, "System message before the prompt in the chat template")->needs(chat);
    c->add_option("--chat-template", o.chat_template_file,
                  "A Jinja chat template file to use instead of the model's own")
        ->needs(chat);
    c->add_option("--chat-date", o.chat_date, "The date a template prints (strftime_now), YYYY-MM-DD (default: today)")
        ->needs(chat);
}

void add_select(CLI::App* c, SelectOpts& o) {
    c->add_option("--window", o.window, "Observation window W")
        ->capture_default_str()
        ->check(integer_in(1, kMaxLengthOption));
    c->add_option("--kernel", o.kernel, "Pooling kernel K (odd; ignored by --pooling none)")
        ->capture_default_str()
        ->check(integer_in(1, kMaxLengthOption));
    c->add_option("--pooling", o.pooling, "max, avg or none")
        ->capture_default_str()
        ->check(one_of({"max", "avg", "none"}));
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
    c->add_option("--sink", o.sink, "StreamingLLM sink tokens")
        ->capture_default_str()
        ->check(integer_in(0, kMaxLengthOption));
    c->add_option("--seed", o.seed, "Seed of the random policy (and of sampling)")->capture_default_str();
    c->add_option("--max-window", o.max_window, "Queries captured per layer (default: max(128, W))")
        ->check(integer_in(1, kMaxLengthOption));
}

void add_decode(CLI::App* c, DecodeOpts& o, bool with_prefill_switch) {
    c->add_option("--decode-budget", o.budget,
                  "Compress while generating: tokens kept per head at each event, window included (0 = off; the "
                  "policy and its settings are the selection's)")
        ->capture_default_str()
        ->check(integer_in(0, kMaxBudgetOption));
    c->add_option("--decode-interval", o.interval, "Generated tokens between decoding compression events")
        ->capture_default_str()
        ->check(integer_in(1, kMaxLengthOption));
    if (with_prefill_switch)
        c->add_flag("--no-prefill-compression", o.no_prefill,
                    "The compressed run starts from the full cache (decoding compression alone; needs "
                    "--decode-budget)");
}

DecodeCompressionSettings make_decode(const DecodeOpts& o) {
    DecodeCompressionSettings d;
    d.budget = o.budget;
    d.interval = o.budget > 0 ? o.interval : 0;
    return d;
}

void check_decode(const SelectOpts& so, const DecodeOpts& o) {
    if (o.no_prefill && o.budget <= 0)
        usage_error("--no-prefill-compression",
                    "needs --decode-budget: without prefill and decoding compression both runs are the full cache");
    const std::string problem = check_decode_settings(make_params(so), make_decode(o));
    if (!problem.empty()) usage_error("--decode-budget", problem);
}

void add_gen(CLI::App* c, GenerationSettings& o, int64_t min_tokens) {
    c->add_option("--max-tokens,-n", o.max_tokens, "Tokens to generate (generation stops at the context)")
        ->capture_default_str()
        ->check(integer_in(min_tokens, INT64_MAX));  // any count: generation stops at the context
    c->add_flag("--greedy", o.greedy, "Greedy decoding (argmax)");
    c->add_option("--temperature", o.temperature, "Sampling temperature; 0 means greedy, as in llama.cpp")
        ->capture_default_str()
        ->check(number_in(0.0, 1e6, false, false));
    c->add_option("--top-k", o.top_k, "Top-k (0 = off)")->capture_default_str()->check(integer_in(0, int64_t(1) << 31));
    c->add_option("--top-p", o.top_p, "Top-p (1 = off)")->capture_default_str()->check(number_in(0.0, 1.0, true, false));
    c->add_option("--sample-seed", o.seed, "Sampling seed")->capture_default_str();
    c->add_flag("--no-stop{false}", o.stop_at_eog, "Do not stop at the end-of-generation token");
}

GenerationSettings cli_generation_defaults() {
    GenerationSettings g;
    g.max_tokens = 64;
    g.greedy = false;
    return g;
}

std::vector<NamedPath> inputs_of(const Common& c, const PromptOpts& o) {
    return {{"the model (--model)", c.model},
            {"the document (--doc)", o.doc},
            {"the prompt file (--prompt-file)", o.prompt_file},
            {"the chat template (--chat-template)", o.chat_template_file}};
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
    s.chat.enabled = o.chat;
    s.chat.system = o.system;
    if (!o.chat_template_file.empty()) {
        s.chat.template_text = read_text_file(o.chat_template_file, "chat template");
        if (s.chat.template_text.empty()) usage_error("--chat-template", "'" + o.chat_template_file + "' is empty");
    }
    if (!o.chat_date.empty()) {
        try {
            check_chat_date(o.chat_date);
        } catch (const InputError& e) {
            usage_error("--chat-date", e.what());
        }
    }
    s.chat.date = o.chat_date;
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

PromptSpec checked_json_run(const Common& c, const PromptOpts& po, const SelectOpts& so, const std::string& out) {
    check_output_not_input("--json", out, inputs_of(c, po));
    check_select(so);
    PromptSpec spec = make_prompt(po);
    if (!out.empty() && out != "-") create_parent_dirs(out);  // fail before the prefill, not after
    return spec;
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
    s->load_model(c.model, {c.device, c.dtype, c.weights, c.cache_type}, stderr_progress(quiet));
    return s;
}

std::string growth_note(Session& s, const Selection& sel, int64_t full, int64_t comp) {
    const ModelConfig& c = s.model_info().config;
    return cache_growth_note(sel, c.n_head, c.n_head_kv, full, comp);
}

}  // namespace snapkv::cli
