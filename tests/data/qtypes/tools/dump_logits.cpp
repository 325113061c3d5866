// dump_logits: a small libllama client that produces golden data for SnapKV Studio's tests.
// It evaluates a list of token ids in ONE batch and writes the logits of every position, or it
// runs plain-argmax greedy generation and prints the ids. It does no sampling, no tokenization
// and no chat templates: callers pass token ids (get them from llama-tokenize --ids). The KV cache
// type (llama.cpp's -ctk/-ctv) and flash attention are options; the defaults (F32 cache, flash
// attention off) are what every older command ran with, so those keep their meaning.
// Built against a llama.cpp build tree by build_dump_logits.sh; never used by our test binaries.

#include "llama.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Options {
    std::string model;
    std::string ids_arg;          // "1,2,3"
    std::string ids_file;         // whitespace/comma-separated ids
    std::string out;              // logits output path ("-" = stdout, JSON only)
    std::string format = "bin";   // bin | json
    std::string fa = "off";       // flash attention: off | on | auto (llama.cpp's own default is auto)
    std::string cache_k = "f32";  // KV cache types, llama.cpp's -ctk / -ctv names
    std::string cache_v = "f32";
    std::string last_logits;  // greedy mode: where to write the last prompt position's logits
    int n_ctx = 0;            // 0 = max(256, n_prompt + n_gen) rounded up
    int n_threads = 2;
    int n_gen = 0;  // > 0: greedy generation instead of a logits dump
    bool verbose = false;
};

void usage(const char* argv0) {
    std::fprintf(stderr,
                 "usage: %s -m MODEL (--ids 1,2,3 | --ids-file FILE) [options]\n"
                 "  logits mode (default): -o OUT [--format bin|json]\n"
                 "     bin : float32 little-endian, row-major [n_tokens, n_vocab], no header\n"
                 "     json: {\"n_tokens\":T,\"n_vocab\":V,\"ids\":[..],\"logits\":[[..],..]} with %%.9g\n"
                 "  greedy mode: --gen N  prints one JSON line {\"prompt\":[..],\"generated\":[..],\"margin\":[..],\n"
                 "     \"cache_type_k\":..,\"cache_type_v\":..,\"flash_attn\":..}; --last-logits FILE also writes\n"
                 "     the n_vocab float32 logits of the last prompt position (little-endian, no header)\n"
                 "  common: -c N_CTX (default fits the sequence), -t THREADS (default 2),\n"
                 "          --flash-attn | --fa off|on|auto (default off; llama.cpp's tools default to auto),\n"
                 "          --cache-type-k | -ctk TYPE, --cache-type-v | -ctv TYPE (default f32 both;\n"
                 "          TYPE: f32 f16 bf16 q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1; a quantized V needs flash attention),\n"
                 "          -v (llama.cpp logs)\n",
                 argv0);
}

bool parse_ids(const std::string& text, std::vector<llama_token>& ids) {
    std::string s = text;
    for (char& c : s) {
        if (c == ',' || c == '[' || c == ']') c = ' ';
    }
    std::istringstream in(s);
    long long v = 0;
    while (in >> v) {
        if (v < 0 || v > INT32_MAX) return false;
        ids.push_back(static_cast<llama_token>(v));
    }
    return in.eof();
}

// The cache types llama.cpp's common arguments accept for -ctk/-ctv (common/arg.cpp kv_cache_types).
bool parse_cache_type(const std::string& name, ggml_type* type) {
    static const struct {
        const char* name;
        ggml_type type;
    } kTypes[] = {{"f32", GGML_TYPE_F32},       {"f16", GGML_TYPE_F16},   {"bf16", GGML_TYPE_BF16},
                  {"q8_0", GGML_TYPE_Q8_0},     {"q4_0", GGML_TYPE_Q4_0}, {"q4_1", GGML_TYPE_Q4_1},
                  {"iq4_nl", GGML_TYPE_IQ4_NL}, {"q5_0", GGML_TYPE_Q5_0}, {"q5_1", GGML_TYPE_Q5_1}};
    for (const auto& t : kTypes) {
        if (name == t.name) {
            *type = t.type;
            return true;
        }
    }
    return false;
}

struct LogState {
    bool verbose = false;
    // What llama.cpp resolved flash attention to; with "auto" only its log says so.
    std::string fa_resolved;
};

void quiet_log(enum ggml_log_level level, const char* text, void* user) {
    LogState& st = *static_cast<LogState*>(user);
    const std::string line = text;
    if (line.find("Flash Attention") != std::string::npos || line.find("flash_attn") != std::string::npos) {
        if (line.find("set to disabled") != std::string::npos) st.fa_resolved = "off";
        else if (line.find("Flash Attention enabled") != std::string::npos ||
                 line.find("enabling flash_attn") != std::string::npos)
            st.fa_resolved = "on";
    }
    if (st.verbose || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

// Plain argmax; ties go to the lowest id, like a strict '>' scan.
llama_token argmax(const float* row, int n_vocab, float* margin) {
    int best = 0;
    float top1 = row[0];
    float top2 = -INFINITY;
    for (int i = 1; i < n_vocab; ++i) {
        if (row[i] > top1) {
            top2 = top1;
            top1 = row[i];
            best = i;
        } else if (row[i] > top2) {
            top2 = row[i];
        }
    }
    if (margin) *margin = top1 - top2;
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    Options opt;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "dump_logits: option %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "-m") opt.model = next();
        else if (a == "--ids") opt.ids_arg = next();
        else if (a == "--ids-file") opt.ids_file = next();
        else if (a == "-o") opt.out = next();
        else if (a == "--format") opt.format = next();
        else if (a == "--fa" || a == "--flash-attn") opt.fa = next();
        else if (a == "--cache-type-k" || a == "-ctk") opt.cache_k = next();
        else if (a == "--cache-type-v" || a == "-ctv") opt.cache_v = next();
        else if (a == "--last-logits") opt.last_logits = next();
        else if (a == "-c") opt.n_ctx = std::atoi(next().c_str());
        else if (a == "-t") opt.n_threads = std::atoi(next().c_str());
        else if (a == "--gen") opt.n_gen = std::atoi(next().c_str());
        else if (a == "-v") opt.verbose = true;
        else {
            usage(argv[0]);
            return 2;
        }
    }

    std::vector<llama_token> ids;
    if (!opt.ids_arg.empty() && !parse_ids(opt.ids_arg, ids)) {
        std::fprintf(stderr, "dump_logits: bad --ids '%s'\n", opt.ids_arg.c_str());
        return 2;
    }
    if (!opt.ids_file.empty()) {
        std::ifstream f(opt.ids_file);
        std::stringstream ss;
        ss << f.rdbuf();
        if (!f || !parse_ids(ss.str(), ids)) {
            std::fprintf(stderr, "dump_logits: cannot read ids from '%s'\n", opt.ids_file.c_str());
            return 2;
        }
    }
    if (opt.model.empty() || ids.empty() || (opt.n_gen == 0 && opt.out.empty()) ||
        (opt.format != "bin" && opt.format != "json")) {
        usage(argv[0]);
        return 2;
    }
    if (opt.fa != "on" && opt.fa != "off" && opt.fa != "auto") {
        std::fprintf(stderr, "dump_logits: --flash-attn '%s': expected on, off or auto\n", opt.fa.c_str());
        return 2;
    }
    ggml_type type_k = GGML_TYPE_F32;
    ggml_type type_v = GGML_TYPE_F32;
    if (!parse_cache_type(opt.cache_k, &type_k) || !parse_cache_type(opt.cache_v, &type_v)) {
        std::fprintf(stderr,
                     "dump_logits: cache type '%s': expected f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0 or q5_1\n",
                     parse_cache_type(opt.cache_k, &type_k) ? opt.cache_v.c_str() : opt.cache_k.c_str());
        return 2;
    }
    if (ggml_is_quantized(type_v) && opt.fa == "off") {
        // llama.cpp refuses this itself (llama_init_from_model); say why before loading the model.
        std::fprintf(stderr, "dump_logits: --cache-type-v %s is quantized, which needs --flash-attn on or auto\n",
                     opt.cache_v.c_str());
        return 2;
    }
    if (!opt.last_logits.empty() && opt.n_gen == 0) {
        std::fprintf(stderr, "dump_logits: --last-logits belongs to greedy mode (--gen N); logits mode writes -o\n");
        return 2;
    }

    LogState log_state;
    log_state.verbose = opt.verbose;
    log_state.fa_resolved = opt.fa;
    llama_log_set(quiet_log, &log_state);
    llama_backend_init();

    llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers = 0;
    llama_model* model = llama_model_load_from_file(opt.model.c_str(), mparams);
    if (!model) {
        std::fprintf(stderr, "dump_logits: cannot load '%s'\n", opt.model.c_str());
        return 1;
    }
    const llama_vocab* vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);
    for (llama_token t : ids) {
        if (t >= n_vocab) {
            std::fprintf(stderr, "dump_logits: token id %d out of range (n_vocab %d)\n", t, n_vocab);
            return 2;
        }
    }

    const int n_prompt = static_cast<int>(ids.size());
    int n_ctx = opt.n_ctx;
    if (n_ctx == 0) {
        n_ctx = 256;
        while (n_ctx < n_prompt + opt.n_gen) n_ctx *= 2;
    }
    if (n_ctx < n_prompt + opt.n_gen) {
        std::fprintf(stderr, "dump_logits: -c %d is smaller than %d prompt + %d generated tokens\n", n_ctx, n_prompt,
                     opt.n_gen);
        return 2;
    }

    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = n_ctx;
    cparams.n_batch = n_ctx;  // the whole prompt is one batch and one ubatch
    cparams.n_ubatch = n_ctx;
    cparams.n_seq_max = 1;
    cparams.n_threads = opt.n_threads;
    cparams.n_threads_batch = opt.n_threads;
    cparams.type_k = type_k;
    cparams.type_v = type_v;
    cparams.flash_attn_type = opt.fa == "on"     ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                              : opt.fa == "auto" ? LLAMA_FLASH_ATTN_TYPE_AUTO
                                                 : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cparams.no_perf = true;
    llama_context* ctx = llama_init_from_model(model, cparams);
    if (!ctx) {
        std::fprintf(stderr, "dump_logits: cannot create a context (n_ctx %d, cache K %s, V %s, flash attention %s)\n",
                     n_ctx, opt.cache_k.c_str(), opt.cache_v.c_str(), opt.fa.c_str());
        return 1;
    }

    const bool all_logits = opt.n_gen == 0;
    llama_batch batch = llama_batch_init(n_prompt, 0, 1);
    for (int i = 0; i < n_prompt; ++i) {
        batch.token[i] = ids[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = all_logits || i == n_prompt - 1;
    }
    batch.n_tokens = n_prompt;
    if (llama_decode(ctx, batch) != 0) {
        std::fprintf(stderr, "dump_logits: llama_decode failed on the prompt\n");
        return 1;
    }

    if (all_logits) {
        if (opt.format == "bin") {
            FILE* f = std::fopen(opt.out.c_str(), "wb");
            if (!f) {
                std::fprintf(stderr, "dump_logits: cannot write '%s'\n", opt.out.c_str());
                return 1;
            }
            for (int i = 0; i < n_prompt; ++i) {
                // x86-64 is little-endian, so the in-memory floats are the file format.
                std::fwrite(llama_get_logits_ith(ctx, i), sizeof(float), n_vocab, f);
            }
            std::fclose(f);
        } else {
            FILE* f = opt.out == "-" ? stdout : std::fopen(opt.out.c_str(), "w");
            if (!f) {
                std::fprintf(stderr, "dump_logits: cannot write '%s'\n", opt.out.c_str());
                return 1;
            }
            std::fprintf(f, "{\"n_tokens\":%d,\"n_vocab\":%d,\"ids\":[", n_prompt, n_vocab);
            for (int i = 0; i < n_prompt; ++i) std::fprintf(f, "%s%d", i ? "," : "", ids[i]);
            std::fprintf(f, "],\"logits\":[\n");
            for (int i = 0; i < n_prompt; ++i) {
                const float* row = llama_get_logits_ith(ctx, i);
                std::fprintf(f, "[");
                for (int j = 0; j < n_vocab; ++j) std::fprintf(f, "%s%.9g", j ? "," : "", row[j]);
                std::fprintf(f, "]%s\n", i + 1 < n_prompt ? "," : "");
            }
            std::fprintf(f, "]}\n");
            if (f != stdout) std::fclose(f);
        }
    } else {
        std::vector<llama_token> gen;
        std::vector<float> margins;
        float margin = 0.0f;
        if (!opt.last_logits.empty()) {
            // The logits the first generated id is chosen from, from the same run as the ids.
            FILE* f = std::fopen(opt.last_logits.c_str(), "wb");
            if (!f ||
                std::fwrite(llama_get_logits_ith(ctx, -1), sizeof(float), n_vocab, f) != static_cast<size_t>(n_vocab)) {
                std::fprintf(stderr, "dump_logits: cannot write '%s'\n", opt.last_logits.c_str());
                return 1;
            }
            std::fclose(f);
        }
        llama_token tok = argmax(llama_get_logits_ith(ctx, -1), n_vocab, &margin);
        llama_batch one = llama_batch_init(1, 0, 1);
        for (int step = 0; step < opt.n_gen; ++step) {
            gen.push_back(tok);
            margins.push_back(margin);
            if (step + 1 == opt.n_gen) break;
            // No early stop on end-of-generation tokens: the caller asked for exactly N ids.
            one.token[0] = tok;
            one.pos[0] = n_prompt + step;
            one.n_seq_id[0] = 1;
            one.seq_id[0][0] = 0;
            one.logits[0] = true;
            one.n_tokens = 1;
            if (llama_decode(ctx, one) != 0) {
                std::fprintf(stderr, "dump_logits: llama_decode failed at step %d\n", step);
                return 1;
            }
            tok = argmax(llama_get_logits_ith(ctx, -1), n_vocab, &margin);
        }
        llama_batch_free(one);
        std::printf("{\"prompt\":[");
        for (int i = 0; i < n_prompt; ++i) std::printf("%s%d", i ? "," : "", ids[i]);
        std::printf("],\"generated\":[");
        for (size_t i = 0; i < gen.size(); ++i) std::printf("%s%d", i ? "," : "", gen[i]);
        std::printf("],\"margin\":[");
        for (size_t i = 0; i < margins.size(); ++i) std::printf("%s%.9g", i ? "," : "", margins[i]);
        std::printf("],\"cache_type_k\":\"%s\",\"cache_type_v\":\"%s\",\"flash_attn\":\"%s\"}\n", opt.cache_k.c_str(),
                    opt.cache_v.c_str(), log_state.fa_resolved.c_str());
    }

    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
