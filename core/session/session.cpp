// Session: model loading, tokens, prompts, plain generation, perplexity and the runtime benchmark.
// Prefill with capture, selection and compare are in session_prefill.cpp, session_select.cpp and
// session_compare.cpp (compressed perplexity: session_compressed_perplexity.cpp).
#include "core/session/session.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>

#include "core/common/units.h"
#include "core/compare/decode_compression.h"
#include "core/kv/kv_type.h"
#include "core/model/generator.h"
#include "core/session/run_plan.h"
#include "core/session/session_impl.h"
#include "core/tokenizer/chat_template.h"

namespace snapkv {
namespace {

c10::Device parse_device(const std::string& s) {
    if (s == "cpu") return c10::Device(c10::kCPU);
    if (s == "cuda" || s.rfind("cuda:", 0) == 0) {
        if (!at::hasCUDA())
            throw InputError("device '" + s + "': CUDA is not available (no GPU, or a CPU-only LibTorch build)");
        return c10::Device(s);
    }
    throw InputError("device '" + s + "' is not known (cpu, cuda, cuda:N)");
}

at::ScalarType parse_dtype(const std::string& s) {
    if (s == "float32" || s == "f32") return at::kFloat;
    if (s == "float16" || s == "f16") return at::kHalf;
    if (s == "bfloat16" || s == "bf16") return at::kBFloat16;
    throw InputError("dtype '" + s + "' is not known (float32, float16, bfloat16)");
}

// "native" keeps the file's weight format on the CPU; "native-q8" too, with 8-bit inputs to the
// single-token products; "f32" dequantizes at load.
void parse_weights(const std::string& s, ModelOptions& mo) {
    if (s == "native" || s == "native-q8") {
        mo.native_weights = true;
        mo.q8_activations = s == "native-q8";
        return;
    }
    if (s == "f32" || s == "float32") {
        mo.native_weights = false;
        return;
    }
    throw InputError("weights '" + s + "' is not known (native, native-q8, f32)");
}

}  // namespace

void Session::Impl::require_model() const {
    if (!model) throw InputError("no model is loaded");
}

void Session::Impl::require_prefill() const {
    require_model();
    if (!state) throw InputError("run prefill first: there is no captured prompt");
}

void Session::Impl::require_values() const {
    require_prefill();
    if (state->cache.n_layer() > 0 && state->cache.layer(0).values_dropped())
        throw InputError(
            "this prefill kept keys only (an analysis: each layer's values were dropped once scored); "
            "prefill again with values kept to generate");
}

std::string Session::Impl::piece(int32_t id) const { return tok->token_to_piece(id, true); }

MemoryEstimate Session::Impl::estimate(const RunShape& shape, std::optional<KvType> as) const {
    require_model();
    RunShape run = shape;
    run.kv_type = as ? *as : model->cache_type();  // every cache the model creates is in its type
    const int64_t elem = static_cast<int64_t>(c10::elementSize(model->options().dtype));
    ForwardPath path;
    path.cpu_float32 = model->options().device.is_cpu() && model->options().dtype == at::kFloat;
    path.native_weights = info.weights != "f32";
    path.tile_values = WeightMatrix::tile_values();
    return snapkv::estimate_memory(model->config(), model->weight_bytes(), elem, run, path);
}

void Session::Impl::check_fits(int64_t n_prompt, int64_t n_new, const MemoryEstimate& e, const std::string& what,
                               const std::string& hint) const {
    const int64_t n_ctx = model->config().n_ctx_train;
    const std::string need = "about " + format_bytes(e.extra()) + " beyond the weights";
    if (n_prompt > n_ctx)
        throw InputError(what + " has " + std::to_string(n_prompt) + " tokens, more than the model's context of " +
                         std::to_string(n_ctx) + " tokens (it would need " + need + ")" + hint);
    if (n_new > n_ctx - n_prompt)  // no overflow: n_prompt <= n_ctx
        throw InputError(what + "'s " + std::to_string(n_prompt) + " tokens + " + std::to_string(n_new) +
                         " new tokens exceed the model's context of " + std::to_string(n_ctx) +
                         " tokens; allowed: at most " + std::to_string(n_ctx - n_prompt) + " new tokens" + hint);
    require_memory(e, snapkv::available_memory(info.device), what + " (" + std::to_string(n_prompt) + " tokens)", hint);
}

namespace {

void check_cache_type(KvType t, const ModelConfig& c) {
    if (!kv_type_fits(t, c.head_dim))
        throw InputError(std::string("cache type ") + kv_type_name(t) + " stores blocks of " +
                         std::to_string(kQ8_0Block) + " values along head_dim, but this model's head_dim is " +
                         std::to_string(c.head_dim) + "; choose f32, f16 or bf16");
}

}  // namespace

Session::Session() : m(std::make_unique<Impl>()) {}
Session::~Session() = default;

bool Session::cuda_available() { return at::hasCUDA(); }

void Session::load_model(const std::string& path, const LoadOptions& opts, const ProgressFn& progress,
                         CancelFlag cancel) {
    ModelOptions mo;
    mo.device = parse_device(opts.device);
    mo.dtype = parse_dtype(opts.dtype);
    parse_weights(opts.weights, mo);
    mo.cache_type = kv_type_from_name(opts.cache_type);
    if (progress) progress("reading " + path, 0, 1);
    auto file = ModelFile::open(path);
    check_cache_type(mo.cache_type, file->config());
    auto tok = Tokenizer::create(file->vocab());
    auto model = with_oom_report("loading the weights", [&] {
        return LlamaModel::load(
            *file, mo,
            [&](int64_t done, int64_t total) {
                if (progress) progress("loading weights", done, total);
            },
            cancel);
    });
    // Commit only when everything succeeded: a failed load keeps the previous model.
    m->state.reset();
    m->reference.reset();
    m->aware_scorers.clear();
    m->agnostic_scorers.clear();
    m->file = std::move(file);
    m->tok = std::move(tok);
    m->model = std::move(model);
    ModelInfo& i = m->info;
    i = ModelInfo{};
    i.path = path;
    i.format = m->file->format();
    i.config = m->file->config();
    i.tokenizer_kind = m->tok->kind();
    i.chat_template = m->file->vocab().chat_template;
    for (const auto& named : m->file->vocab().chat_templates) i.chat_template_names.push_back(named.first);
    i.device = opts.device;
    i.dtype = opts.dtype;
    i.weights = !mo.native_weights || !mo.device.is_cpu() ? "f32" : mo.q8_activations ? "native-q8" : "native";
    i.cache_type = kv_type_name(mo.cache_type);
    i.weight_bytes = m->model->weight_bytes();
    for (const auto& t : m->file->tensors())
        i.tensors.push_back({t.name, t.type, t.shape, static_cast<int64_t>(t.nbytes)});
    i.metadata = m->file->metadata_summary();
}

bool Session::has_model() const { return m->model != nullptr; }

void Session::set_cache_type(const std::string& type) {
    m->require_model();
    const KvType t = kv_type_from_name(type);
    check_cache_type(t, m->model->config());
    if (t == m->model->cache_type()) return;
    m->model->set_cache_type(t);
    m->info.cache_type = kv_type_name(t);
    // The prefill's caches hold the old type: a selection or generation from them would not be
    // the run the user now asks for.
    m->state.reset();
    m->reference.reset();
    m->aware_scorers.clear();
    m->agnostic_scorers.clear();
}

void Session::Impl::check_generation_fits(int64_t n_prompt, int64_t max_tokens) const {
    if (max_tokens < 1) throw InputError("max tokens " + std::to_string(max_tokens) + " must be >= 1");
    RunShape shape;
    shape.n_tokens = 1;
    shape.cache_slots = n_prompt + std::min(max_tokens, model->config().n_ctx_train);  // no overflow
    shape.caches = 2;  // the full cache's copy and the compressed one
    check_fits(n_prompt, max_tokens, estimate(shape), "the prompt", ": ask for fewer new tokens");
}

MemoryEstimate Session::estimate_prefill_memory(int64_t n_tokens, const PrefillSettings& settings,
                                                bool two_parts) const {
    return m->estimate(prefill_run_shape(settings, n_tokens, two_parts));
}

MemoryEstimate Session::estimate_prefill_memory(int64_t n_tokens, const PrefillSettings& settings, bool two_parts,
                                                KvType cache_type) const {
    return m->estimate(prefill_run_shape(settings, n_tokens, two_parts), cache_type);
}

MemoryEstimate Session::estimate_memory(const RunShape& shape, KvType cache_type) const {
    return m->estimate(shape, cache_type);
}

AvailableMemory Session::available_memory() const {
    m->require_model();
    return snapkv::available_memory(m->info.device);
}

ModelInfo Session::model_info() const {
    m->require_model();
    return m->info;
}

std::vector<int32_t> Session::tokenize(const std::string& text, bool add_special, bool parse_special) const {
    m->require_model();
    return m->tok->encode(text, add_special, parse_special);
}

std::string Session::token_piece(int32_t id) const {
    m->require_model();
    return m->piece(id);
}

std::string Session::token_text(int32_t id) const {
    m->require_model();
    return m->tok->token_text(id);
}

std::string Session::decode(const std::vector<int32_t>& ids) const {
    m->require_model();
    return m->tok->decode(ids);
}

PromptTokens Session::build_prompt(const PromptSpec& spec) const {
    m->require_model();
    PromptTokens out;
    if (!spec.ids.empty()) {
        for (int32_t id : spec.ids)
            if (id < 0 || id >= m->tok->n_vocab())
                throw InputError("prompt token id " + std::to_string(id) + " is outside the vocabulary");
        out.ids = spec.ids;
        out.n_context = static_cast<int64_t>(out.ids.size());
        return out;
    }
    const bool split = !spec.document.empty() || !spec.question.empty();
    std::string full, context;
    if (!split) {
        if (spec.text.empty() && !spec.chat.enabled) throw InputError("the prompt is empty");
        full = context = spec.text;
    } else {
        const std::string sep = (!spec.document.empty() && !spec.question.empty()) ? "\n\n" : "";
        full = spec.document + sep + spec.question;
        context = spec.document + sep;
    }
    const VocabData& vocab = m->file->vocab();
    const std::string& tmpl = spec.chat.template_text.empty() ? vocab.chat_template : spec.chat.template_text;
    bool add_special = true;
    if (spec.chat.enabled && !tmpl.empty()) {
        out.template_source = spec.chat.template_text.empty() ? "model" : "given";
        std::vector<ChatMessage> messages;
        if (!spec.chat.system.empty()) messages.push_back({"system", spec.chat.system});
        messages.push_back({"user", full});
        ChatRequest req;
        req.messages = chat_messages(messages);
        req.add_generation_prompt = true;
        req.date = spec.chat.date;
        if (vocab.bos_id >= 0) req.bos_token = m->tok->token_text(vocab.bos_id);
        if (vocab.eos_id >= 0) req.eos_token = m->tok->token_text(vocab.eos_id);
        std::string rendered;
        try {
            rendered = render_chat_template(tmpl, req);
        } catch (const jinja::TemplateRaised& e) {
            throw InputError(std::string("the chat template (") +
                             (out.template_source == "model" ? "the model's" : "given") +
                             ") refused the prompt: " + e.what());
        } catch (const InputError& e) {
            throw InputError(std::string("the chat template (") +
                             (out.template_source == "model" ? "the model's" : "given") + "): " + e.what());
        }
        // The question's text as the template wrote it; where the template changed it (trim),
        // the document alone marks the end of the context.
        size_t at = rendered.rfind(full);
        size_t context_end = std::string::npos;
        if (at != std::string::npos) context_end = at + context.size();
        else if (!spec.document.empty() && (at = rendered.find(spec.document)) != std::string::npos)
            context_end = at + spec.document.size();
        context = context_end == std::string::npos ? rendered : rendered.substr(0, context_end);
        full = rendered;
        if (!spec.answer_prefix.empty() && !full.empty() && !std::isspace(static_cast<unsigned char>(full.back())))
            full += " ";
        full += spec.answer_prefix;
        // A template that writes BOS itself (Llama 3, Gemma, Mistral) gets no second one from the
        // tokenizer: transformers tokenizes a rendered chat without special tokens.
        if (req.bos_token && !req.bos_token->empty() && full.compare(0, req.bos_token->size(), *req.bos_token) == 0)
            add_special = false;
    } else if (spec.chat.enabled) {
        // No template: the conversation's contents one after another (a system message first).
        if (!spec.chat.system.empty()) {
            full = spec.chat.system + "\n" + full;
            context = spec.chat.system + "\n" + context;
        }
        if (!spec.answer_prefix.empty() && !full.empty() && !std::isspace(static_cast<unsigned char>(full.back())))
            full += " ";
        full += spec.answer_prefix;
    } else if (!spec.answer_prefix.empty()) {
        full += (full.empty() ? "" : " ") + spec.answer_prefix;
    }
    out.text = full;
    out.bos_added = add_special && m->tok->add_bos() && m->tok->bos_id() >= 0;
    out.ids = m->tok->encode(full, add_special, true);
    if (out.ids.empty()) throw InputError("the prompt is empty (no tokens)");
    if (!split) {
        out.n_context = static_cast<int64_t>(out.ids.size());
    } else {
        // The context is the longest common token prefix of the context alone and the whole
        // prompt, so both modes see exactly the same token sequence.
        const std::vector<int32_t> ctx = m->tok->encode(context, add_special, true);
        size_t n = 0;
        while (n < ctx.size() && n < out.ids.size() && ctx[n] == out.ids[n]) ++n;
        out.n_context = static_cast<int64_t>(std::max<size_t>(n, 1));
    }
    return out;
}

GenerationOutput Session::generate(const PromptSpec& prompt, const GenerationSettings& s, const TokenFn& on_token,
                                   CancelFlag cancel, const SelectionParams& decode_params,
                                   const DecodeCompressionSettings& decode) {
    m->require_model();
    if (s.max_tokens < 0) throw InputError("generate: max tokens " + std::to_string(s.max_tokens) + " must be >= 0");
    const std::string decode_problem = check_decode_settings(decode_params, decode);
    if (!decode_problem.empty()) throw InputError("decoding compression: " + decode_problem);
    GenerationOutput out;
    out.prompt_ids = build_prompt(prompt).ids;
    const auto L = static_cast<int64_t>(out.prompt_ids.size());
    // Generation stops at the context: size the cache for what can actually be generated.
    const int64_t n_ctx = m->model->config().n_ctx_train;
    const int64_t n_new = L <= n_ctx ? std::min(s.max_tokens, n_ctx - L) : 0;
    RunShape run;
    run.n_tokens = L;
    // The largest cache the run reaches: with decoding compression, the prompt or the budget
    // (whichever is larger) plus one interval of new tokens.
    run.cache_slots = decode.enabled() ? std::min(L + n_new, std::max(L, decode.budget) + decode.interval) : L + n_new;
    m->check_fits(L, -1, m->estimate(run), "the prompt", ": shorten it");
    KvCache cache = with_oom_report("allocating the KV cache", [&] { return m->model->new_cache(run.cache_slots); });
    GenerateOptions go;
    std::unique_ptr<DecodeCompressor> decoder;
    if (decode.enabled()) {
        decoder = std::make_unique<DecodeCompressor>(*m->model, decode_params, decode);
        go.want_queries = true;
        go.after_forward = [&](KvCache& c, const std::vector<at::Tensor>& q) {
            decoder->after_step(c, q);
            out.cache_tokens.push_back(cache_tokens(c));
        };
    }
    go.max_tokens = s.max_tokens;
    go.sampling = {s.is_greedy(), s.temperature, s.top_k, s.top_p, s.seed};
    go.stop_at_eog = s.stop_at_eog;
    go.cancel = cancel;
    // The end-of-generation token is reported with an empty piece: it is not part of the text.
    if (on_token)
        go.on_token = [&](int32_t id) { return on_token(id, m->tok->is_eog(id) ? std::string() : m->piece(id)); };
    GenerateResult r = with_oom_report("generating",
                                       [&] { return snapkv::generate(*m->model, *m->tok, out.prompt_ids, cache, go); });
    out.ids = r.ids;
    out.text = m->tok->decode(r.ids);
    out.stop_reason = r.stop_reason;
    out.prefill_ms = r.prefill_ms;
    out.decode_ms = r.decode_ms;
    out.decode_tok_s = r.decode_tok_s();
    if (decoder) out.decode_events = decoder->events();
    return out;
}

PerplexityOutput Session::perplexity(const std::string& text, int64_t ctx, const ProgressFn& progress,
                                     CancelFlag cancel) {
    m->require_model();
    if (text.empty()) throw InputError("perplexity: the text is empty");
    const std::vector<int32_t> ids = m->tok->encode(text, true, true);
    RunShape run;
    run.n_tokens = ctx;
    run.cache_slots = ctx;
    run.logit_rows = ctx - ctx / 2;
    if (ctx >= 1) m->check_fits(ctx, -1, m->estimate(run), "a perplexity chunk", ": use a smaller --ctx");
    // llama.cpp's perplexity puts BOS first in each chunk only when the model adds BOS.
    const int32_t bos = m->tok->add_bos() ? m->tok->bos_id() : -1;
    PerplexityResult r = with_oom_report("computing perplexity", [&] {
        return snapkv::perplexity(
            *m->model, ids, bos, ctx,
            [&](int64_t d, int64_t t) {
                if (progress) progress("perplexity", d, t);
            },
            cancel);
    });
    PerplexityOutput out;
    out.ppl = r.ppl;
    out.chunks = r.chunk_ppl;
    out.running = r.running_ppl;
    out.n_tokens = r.n_tokens;
    out.ctx = ctx;
    return out;
}

LogitsOutput Session::logits(const PromptSpec& prompt, CancelFlag cancel) {
    m->require_model();
    LogitsOutput out;
    out.ids = build_prompt(prompt).ids;
    if (out.ids.empty()) throw InputError("logits: the prompt is empty (no tokens)");
    const auto T = static_cast<int64_t>(out.ids.size());
    const int64_t n_ctx = m->info.config.n_ctx_train;
    if (n_ctx > 0 && T > n_ctx)
        throw InputError("logits: " + std::to_string(T) + " tokens exceed the model's context of " +
                         std::to_string(n_ctx));
    KvCache cache = m->model->new_cache(T);
    ForwardOptions fo;
    fo.all_logits = true;
    fo.cancel = cancel;
    const at::Tensor t = with_oom_report("computing logits", [&] {
        return m->model->forward(out.ids, cache, fo).to(at::kCPU).contiguous();  // [T, V]
    });
    out.n_vocab = t.size(1);
    out.logits.assign(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
    return out;
}

std::vector<BenchRow> Session::bench(const std::vector<int64_t>& lengths, int64_t decode_tokens,
                                     const ProgressFn& progress, CancelFlag cancel, bool profile) {
    m->require_model();
    // A deterministic prompt: ordinary English repeated to the requested length.
    const std::vector<int32_t> base = m->tok->encode(
        "The history of the region is long and varied. Farmers grew wheat and barley along the river, "
        "traders carried salt and cloth across the mountains, and scholars kept careful records of "
        "the seasons, the harvests and the stars. ",
        false, false);
    if (decode_tokens < 0) throw InputError("bench: decode tokens " + std::to_string(decode_tokens) + " must be >= 0");
    // Every length is checked before the first one runs.
    for (int64_t n : lengths) {
        if (n < 1) throw InputError("bench: prompt length " + std::to_string(n) + " must be positive");
        RunShape run;
        run.n_tokens = n;
        run.cache_slots = n + std::min(decode_tokens, m->info.config.n_ctx_train);
        m->check_fits(n, decode_tokens, m->estimate(run), "bench: a prompt",
                      ": use shorter --lengths or fewer --decode tokens");
    }
    std::vector<BenchRow> rows;
    int64_t step = 0;
    for (int64_t n : lengths) {
        std::vector<int32_t> prompt;
        if (m->tok->add_bos() && m->tok->bos_id() >= 0) prompt.push_back(m->tok->bos_id());
        while (static_cast<int64_t>(prompt.size()) < n) prompt.push_back(base[prompt.size() % base.size()]);
        KvCache cache = m->model->new_cache(n + decode_tokens);
        ForwardOptions fo;
        fo.cancel = cancel;
        ForwardProfile prof;
        if (profile) fo.profile = &prof;
        auto t0 = std::chrono::steady_clock::now();
        at::Tensor logits = m->model->forward(prompt, cache, fo);
        const double pms = ms_since(t0);
        fo.profile = nullptr;
        rows.push_back({"prefill", n, pms, 1000.0 * n / pms, {}});
        if (profile) {
            for (int st = 0; st < ForwardProfile::kStages; ++st)
                rows.back().stages.emplace_back(ForwardProfile::name(st), prof.ms[st]);
            rows.back().stages.emplace_back("(dequantize)", prof.dequant_ms);
        }
        t0 = std::chrono::steady_clock::now();
        for (int64_t i = 0; i < decode_tokens; ++i) {
            const at::Tensor host = logits.to(at::kCPU).contiguous();  // [1, V]
            const int32_t id = argmax(host.data_ptr<float>(), host.size(1));
            logits = m->model->forward({id}, cache, fo);
        }
        const double dms = ms_since(t0);
        rows.push_back({"decode @" + std::to_string(n),
                        decode_tokens,
                        dms,
                        decode_tokens > 0 ? 1000.0 * decode_tokens / dms : 0.0,
                        {}});
        if (progress) progress("bench", ++step, static_cast<int64_t>(lengths.size()));
    }
    return rows;
}

ModelChatTemplate read_model_chat_template(const std::string& model_path, const std::string& name) {
    const std::unique_ptr<ModelFile> file = ModelFile::open(model_path);
    const VocabData& v = file->vocab();
    ModelChatTemplate out;
    for (const auto& named : v.chat_templates) out.names.push_back(named.first);
    if (name.empty() || name == "default") {
        out.text = v.chat_template;
    } else {
        const auto it = std::find_if(v.chat_templates.begin(), v.chat_templates.end(),
                                     [&](const auto& t) { return t.first == name; });
        if (it == v.chat_templates.end()) {
            std::string have;
            for (const std::string& n : out.names) have += (have.empty() ? "" : ", ") + n;
            throw InputError("model '" + model_path + "': no chat template named '" + name + "'" +
                             (have.empty() ? std::string(" (it has only its default one)") : "; it has: " + have));
        }
        out.text = it->second;
    }
    const auto token = [&](int32_t id) -> std::optional<std::string> {
        if (id < 0 || static_cast<size_t>(id) >= v.tokens.size()) return std::nullopt;
        return v.tokens[static_cast<size_t>(id)];
    };
    out.bos_token = token(v.bos_id);
    out.eos_token = token(v.eos_id);
    return out;
}

}  // namespace snapkv
