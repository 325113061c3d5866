// `snapkv bench`: prefill and decode speed per prompt length, per-stage profile, retune latency
// (--retune) or full vs compressed decode (--compress). Prints tables for people; no JSON.
#include "app/cli/commands.h"

#include <iomanip>
#include <iostream>
#include <sstream>

#include "app/cli/cli_checks.h"
#include "app/cli/command_options.h"
#include "core/common/units.h"
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

}  // namespace snapkv::cli
