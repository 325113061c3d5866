// `snapkv bench`: prefill and decode speed per prompt length, per-stage profile, retune latency
// (--retune) or full vs compressed decode (--compress). Prints tables for people; no JSON.
#include "app/cli/commands.h"

#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "app/cli/cli_checks.h"
#include "app/cli/command_options.h"
#include "core/common/atomic_file.h"
#include "core/common/units.h"
#include "core/kv/kv_type.h"
#include "core/session/run_plan.h"
#include "core/session/runtime.h"

namespace snapkv::cli {
namespace {

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

// ---- roofline -------------------------------------------------------------------------------------

// What one token costs the model, from its real tensor sizes: the FLOPs of the weight products
// (2 per weight of every layer matrix) and the bytes a decode step reads (every layer tensor, the
// output matrix or the tied embedding, one embedding row), weights as held (--weights f32: 4 bytes
// a value).
struct ModelCost {
    double matrix_weights = 0;  // values in the layers' matrices (the vocabulary-sized ones aside)
    double decode_bytes = 0;    // weight bytes one decode step reads
};

ModelCost model_cost(const ModelInfo& i) {
    const ModelConfig& c = i.config;
    ModelCost m;
    double embd = 0, output = 0, rest = 0;
    bool has_output = false;
    for (const TensorSummary& t : i.tensors) {
        double numel = 1;
        for (int64_t d : t.shape) numel *= static_cast<double>(d);
        const double bytes = i.weights == "f32" ? 4.0 * numel : static_cast<double>(t.bytes);
        const bool vocab = t.shape.size() == 2 && (t.shape[0] == c.n_vocab || t.shape[1] == c.n_vocab);
        if (vocab) {
            const bool is_output = t.name.find("output") != std::string::npos ||
                                   t.name.find("lm_head") != std::string::npos;
            (is_output ? output : embd) += bytes;
            has_output = has_output || is_output;
            continue;
        }
        if (t.shape.size() == 2) m.matrix_weights += numel;
        rest += bytes;
    }
    m.decode_bytes = rest + (has_output ? output : embd) + (c.n_vocab > 0 ? embd / static_cast<double>(c.n_vocab) : 0);
    return m;
}

// Causal (query, key) pairs of a T-token prompt in one layer: T (T + 1) / 2, or with a sliding
// window each query sees at most `window` keys.
double causal_pairs(int64_t T, int64_t window) {
    if (window <= 0 || window >= T) return static_cast<double>(T) * static_cast<double>(T + 1) / 2.0;
    const double w = static_cast<double>(window);
    return w * (w + 1) / 2.0 + static_cast<double>(T - window) * w;
}

// KV bytes a decode step at context `ctx` reads: keys and values of every layer's visible positions.
double kv_read_bytes(const ModelConfig& c, KvType type, int64_t ctx) {
    double total = 0;
    for (int64_t l = 0; l < c.n_layer; ++l) {
        const int64_t sw = l < static_cast<int64_t>(c.layers.size()) ? c.layers[static_cast<size_t>(l)].sliding_window
                                                                     : 0;
        const int64_t seen = sw > 0 ? std::min(sw, ctx) : ctx;
        total += 2.0 * static_cast<double>(c.n_head_kv * seen) * static_cast<double>(kv_row_bytes(type, c.head_dim));
    }
    return total;
}

double stage_ms(const BenchRow& r, std::initializer_list<const char*> names) {
    double ms = 0;
    for (const auto& [stage, v] : r.stages)
        for (const char* n : names)
            if (stage == n) ms += v;
    return ms;
}

void bench_roofline(Session& s, const std::vector<int64_t>& lengths, int64_t decode, const std::string& json_out,
                    const std::atomic<bool>* cancel) {
    const ModelInfo i = s.model_info();
    const ModelConfig& c = i.config;
    const RuntimeInfo ri = runtime_info();
    std::cerr << "measuring this machine's FMA peak and read bandwidth (about 3 s)...\n";
    const MachineBounds b = measure_machine_bounds();
    const std::vector<BenchRow> rows = s.bench(lengths, std::max<int64_t>(decode, 1), stderr_progress(false), cancel,
                                               true);
    const ModelCost cost = model_cost(i);
    const KvType kv = kv_type_from_name(i.cache_type);
    std::cout << "bounds         float32 FMA peak " << std::fixed << std::setprecision(1) << b.fma_gflops
              << " GFLOP/s (" << b.fma_path << ", " << b.threads << " threads); read bandwidth " << b.read_gbs
              << " GB/s (" << b.threads << " threads, 1 GiB)\n"
              << "model          " << std::setprecision(3) << cost.matrix_weights / 1e6
              << " M matrix weights; a decode step reads " << format_bytes(static_cast<int64_t>(cost.decode_bytes))
              << " of weights + the KV cache (" << i.cache_type << "); weights " << i.weights
              << (i.weights == "native-q8" ? " (decode's products take 8-bit inputs)" : "") << "\n\n";
    std::cout << std::left << std::setw(26) << "phase" << std::right << std::setw(8) << "tokens" << std::setw(11)
              << "ms" << std::setw(16) << "reached" << std::setw(16) << "bound" << std::setw(9) << "share\n";
    nlohmann::json jrows = nlohmann::json::array();
    auto row = [&](const std::string& phase, int64_t tokens, double ms, double reached, double bound, const char* unit,
                   const std::string& work) {
        const double share = bound > 0 ? 100.0 * reached / bound : 0.0;
        std::cout << std::left << std::setw(26) << phase << std::right << std::setw(8) << tokens << std::setw(11)
                  << std::setprecision(1) << ms << std::setw(10) << reached << " " << std::left << std::setw(5) << unit
                  << std::right << std::setw(10) << bound << " " << std::left << std::setw(5) << unit << std::right
                  << std::setw(6) << share << "%\n";
        jrows.push_back({{"phase", phase},
                         {"tokens", tokens},
                         {"ms", ms},
                         {"reached", reached},
                         {"bound", bound},
                         {"unit", unit},
                         {"share", share / 100.0},
                         {"work", work}});
    };
    for (const BenchRow& r : rows) {
        if (r.what == "prefill") {
            const int64_t T = r.tokens;
            const double proj_ms = stage_ms(r, {"qkv proj", "out proj", "ffn proj"});
            const double proj_flops = 2.0 * static_cast<double>(T) * cost.matrix_weights;
            row("prefill weight products", T, proj_ms, proj_ms > 0 ? proj_flops / proj_ms / 1e6 : 0.0, b.fma_gflops,
                "GF/s", std::to_string(proj_flops / 1e9) + " GFLOP");
            double attn_flops = 0;
            for (int64_t l = 0; l < c.n_layer; ++l) {
                const int64_t sw = l < static_cast<int64_t>(c.layers.size())
                                       ? c.layers[static_cast<size_t>(l)].sliding_window
                                       : 0;
                attn_flops += 4.0 * static_cast<double>(c.n_head * c.head_dim) * causal_pairs(T, sw);
            }
            const double attn_ms = stage_ms(r, {"attention"});
            row("prefill attention", T, attn_ms, attn_ms > 0 ? attn_flops / attn_ms / 1e6 : 0.0, b.fma_gflops, "GF/s",
                std::to_string(attn_flops / 1e9) + " GFLOP");
        } else if (r.what.rfind("decode @", 0) == 0 && r.tokens > 0) {
            const int64_t n = std::stoll(r.what.substr(8));
            const double per_token = cost.decode_bytes + kv_read_bytes(c, kv, n + r.tokens / 2);
            row("decode " + std::to_string(r.tokens) + " after " + std::to_string(n), r.tokens, r.ms,
                per_token * r.tok_s / 1e9, b.read_gbs, "GB/s",
                format_bytes(static_cast<int64_t>(per_token)) + " a token");
        }
    }
    std::cout << "\nCPU path of the kernels: " << ri.kernel_path << "; BLAS: " << ri.blas << "\n";
    const std::time_t now = std::time(nullptr);
    char when[32] = {};
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M", std::localtime(&now));
    const nlohmann::json j = {{"measured_at", when},
                              {"model", i.path},
                              {"cpu_features", ri.cpu_features},
                              {"kernel_path", ri.kernel_path},
                              {"blas", ri.blas},
                              {"threads", b.threads},
                              {"fma_peak_gflops", b.fma_gflops},
                              {"fma_path", b.fma_path},
                              {"read_bandwidth_gbs", b.read_gbs},
                              {"matrix_weights", cost.matrix_weights},
                              {"decode_weight_bytes", cost.decode_bytes},
                              {"cache_type", i.cache_type},
                              {"weights", i.weights},
                              {"rows", jrows}};
    if (!json_out.empty()) write_json(j, json_out);
    // The app's About box shows the last figures; a place that cannot be written costs a note only.
    if (const std::string keep = roofline_state_path(); !keep.empty()) {
        try {
            std::filesystem::create_directories(std::filesystem::path(keep).parent_path());
            write_file_atomic(keep, j.dump(2) + "\n");
        } catch (const std::exception& e) {
            std::cerr << "note: the figures were not kept for the app (" << e.what() << ")\n";
        }
    }
}

// Full vs compressed decode at each prompt length.
void bench_compress(Session& s, const std::vector<int64_t>& lengths, int64_t decode, const PromptOpts& po,
                    const SelectOpts& so, const std::atomic<bool>* cancel) {
    const SelectionParams p = make_params(so);
    std::cout << "policy " << policy_name(p.policy) << ", W " << p.window << ", K " << p.kernel << ", "
              << pooling_name(p.pooling) << " pooling, C " << p.budget << ", " << gqa_mode_name(p.gqa) << "; " << decode
              << " greedy tokens\n\n";
    std::cout << std::right << std::setw(7) << "L" << std::setw(12) << "prefill ms" << std::setw(12) << "KV full"
              << std::setw(12) << "KV comp" << std::setw(13) << "full tok/s" << std::setw(13) << "comp tok/s"
              << std::setw(9) << "speedup" << std::setw(11) << "diverge@" << std::setw(10) << "hit rate"
              << "\n";
    for (int64_t n : lengths) {
        const PromptSpec spec = repeated_prompt(s, po, n);
        RunFlags flags;
        flags.max_window = max_window_of(so);
        flags.new_tokens = decode;
        const PrefillSettings ps = plan_run({p}, flags);
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
                if (h >= 0) {
                    hit += h;
                    ++nh;
                }
        std::cout << std::setw(7) << n << std::setw(12) << std::fixed << std::setprecision(0) << sum.prefill_ms
                  << std::setw(12) << format_bytes(r.full.kv_bytes) << std::setw(12)
                  << format_bytes(r.compressed.kv_bytes) << std::setw(13) << std::setprecision(1) << r.full.decode_tok_s
                  << std::setw(13) << r.compressed.decode_tok_s << std::setw(8) << std::setprecision(2)
                  << (r.full.decode_tok_s > 0 ? r.compressed.decode_tok_s / r.full.decode_tok_s : 0.0) << "x"
                  << std::setw(11)
                  << (r.first_divergence < 0 ? std::string("none") : std::to_string(r.first_divergence))
                  << std::setw(10) << std::setprecision(3) << (nh ? hit / nh : -1.0) << "\n";
        if (const int64_t peak_decode = peak_device_memory_bytes(); peak_decode > 0 || peak_prefill > 0)
            std::cout << "        peak device memory: prefill " << format_bytes(peak_prefill)
                      << ", lockstep decode (both caches) " << format_bytes(peak_decode) << "\n";
        std::cout << std::flush;
    }
}

void cmd_bench(const Common& c, const std::vector<int64_t>& lengths, int64_t decode, bool retune, bool compress,
               bool profile, bool roofline, const std::string& json_out, const PromptOpts& po, const SelectOpts& so,
               const std::atomic<bool>* cancel) {
    print_runtime();
    auto s = open_session(c, true);
    const ModelInfo i = s->model_info();
    std::cout << "model          " << i.path << " (" << i.config.arch << ", " << i.config.n_layer << " layers)\n";
    if (roofline) {
        bench_roofline(*s, lengths, decode, json_out, cancel);
        return;
    }
    std::cout << "\n";
    if (compress) {
        bench_compress(*s, lengths, decode, po, so, cancel);
        return;
    }
    if (!retune) {
        std::vector<BenchRow> rows = s->bench(lengths, decode, {}, cancel, profile);
        std::cout << std::left << std::setw(18) << "test" << std::right << std::setw(10) << "tokens" << std::setw(12)
                  << "ms" << std::setw(12) << "tok/s"
                  << "\n";
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
    // The benchmark steps through every policy of the table from this one prefill. It only
    // selects, never generates: an analysis prefill (values dropped per layer, weights paged
    // out), so an 8B-shaped model's 32K-token prefill fits next to its keys and scorers.
    RunFlags flags;
    flags.max_window = max_window_of(so);
    flags.analysis_only = true;
    const PrefillSettings ps = plan_all_policies(flags);
    const PromptSpec spec = repeated_prompt(*s, po, lengths.back());
    PrefillSummary sum = s->prefill(spec, ps, stderr_progress(false), cancel);
    std::cout << "prompt " << sum.n_tokens << " tokens: prefill " << std::fixed << std::setprecision(0)
              << sum.prefill_ms << " ms, layer score caches " << sum.scorer_ms << " ms\n\n";
    std::cout << s->retune_benchmark(make_params(so));
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

void register_bench_command(CLI::App& app, const std::atomic<bool>* cancel) {
    // Options live as long as the app.
    static Common c;
    static std::string lengths = "128,512,2048";
    static int64_t decode = 32;
    static bool retune = false, compress = false, profile = false, roofline = false;
    static std::string json_out;
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
    auto* rl = cmd->add_flag(
        "--roofline", roofline,
        "Measure this machine's FMA peak and read bandwidth, then each phase against them: prefill "
        "weight products and attention (GFLOP/s), decode (bytes a token x tok/s)");
    cmd->add_option("--json", json_out, "With --roofline: write the figures as JSON to this file ('-': stdout)")
        ->needs(rl);
    rl->excludes("--retune")->excludes("--compress");
    add_prompt(cmd, po, true);
    add_select(cmd, so);
    cmd->callback([cancel] {
        const std::vector<int64_t> ls = parse_lengths(lengths);
        if (retune || compress) check_select(so);
        cmd_bench(c, ls, decode, retune, compress, profile, roofline, json_out, po, so, cancel);
    });
}

}  // namespace snapkv::cli
