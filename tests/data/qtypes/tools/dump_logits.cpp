// dump_logits: a small libllama client that produces golden data for SnapKV Studio's tests.
// It evaluates a list of token ids in ONE batch and writes the logits of every position, or it
// runs plain-argmax greedy generation and prints the ids. It does no sampling, no tokenization
// and no chat templates: callers pass token ids (get them from llama-tokenize --ids).
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
    std::string ids_arg;         // "1,2,3"
    std::string ids_file;        // whitespace/comma-separated ids
    std::string out;             // logits output path ("-" = stdout, JSON only)
    std::string format = "bin";  // bin | json
    std::string fa = "off";      // flash attention: off | on | auto
    int n_ctx = 0;               // 0 = max(256, n_prompt + n_gen) rounded up
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
                 "  greedy mode: --gen N  prints one JSON line {\"prompt\":[..],\"generated\":[..],\"margin\":[..]}\n"
                 "  common: -c N_CTX (default fits the sequence), -t THREADS (default 2),\n"
                 "          --fa off|on|auto (default off), -v (llama.cpp logs)\n"
                 "  The KV cache is always F32 (type_k = type_v = GGML_TYPE_F32).\n",
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

void quiet_log(enum ggml_log_level level, const char* text, void* user) {
    const bool verbose = *static_cast<const bool*>(user);
    if (verbose || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
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
        else if (a == "--fa") opt.fa = next();
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

    llama_log_set(quiet_log, &opt.verbose);
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
    cparams.type_k = GGML_TYPE_F32;
    cparams.type_v = GGML_TYPE_F32;
    cparams.flash_attn_type = opt.fa == "on"     ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                              : opt.fa == "auto" ? LLAMA_FLASH_ATTN_TYPE_AUTO
                                                 : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cparams.no_perf = true;
    llama_context* ctx = llama_init_from_model(model, cparams);
    if (!ctx) {
        std::fprintf(stderr, "dump_logits: cannot create a context (n_ctx %d)\n", n_ctx);
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
        std::printf("]}\n");
    }

    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
