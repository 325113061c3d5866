// `snapkv compare`: full-cache and compressed-cache generation in lock step from one prefill, as
// JSON (both runs, per-step KL / top-1 / rank, first divergence, hit rates, KV bytes).
#include "app/cli/commands.h"

#include <algorithm>
#include <iostream>

#include "app/cli/cli_checks.h"
#include "app/cli/command_options.h"
#include "app/cli/plan_cli.h"
#include "core/common/units.h"
#include "core/session/compare_json.h"
#include "core/session/run_plan.h"
#include "core/snapkv/params_json.h"

namespace snapkv::cli {
namespace {

void cmd_compare(const Common& c, const PromptOpts& po, const SelectOpts& so, const DecodeOpts& dopt,
                 const GenerationSettings& go, double theta, const std::string& out, bool plan,
                 const std::atomic<bool>* cancel) {
    check_decode(so, dopt);
    const PromptSpec spec = checked_json_run(c, po, so, out);
    auto s = open_session(c, true);
    SelectionParams p = make_params(so);
    RunFlags flags;
    flags.max_window = max_window_of(so);
    flags.new_tokens = go.max_tokens;  // prompt + new tokens are checked against the context first
    const PrefillSettings ps = plan_run({p}, flags);
    const bool quiet = out.empty() || out == "-";
    if (show_plan(*s, spec, ps, plan, cancel)) return;
    report_prefill(s->prefill(spec, ps, stderr_progress(quiet), cancel));
    CompareSettings cs;
    cs.generation = go;
    cs.query_agnostic = so.query_agnostic;
    cs.hit_threshold = theta;
    cs.decode = make_decode(dopt);
    cs.compress_prefill = !dopt.no_prefill;
    CompareResult r = s->compare(p, cs, stderr_progress(quiet), cancel);
    // The selection the compressed run used (cheap to redo): its budget and L explain a larger cache.
    const std::string cache_note = growth_note(*s, s->select(p, r.query_agnostic, false), r.full.kv_bytes,
                                               r.compressed.kv_bytes);
    const json j = compare_to_json(r, theta, cache_note);
    write_json(j, out);
    if (!quiet) {
        std::cerr << "full:       " << r.full.text << "\ncompressed: " << r.compressed.text << "\n";
        std::cerr << "KV bytes " << format_bytes(r.full.kv_bytes) << " -> " << format_bytes(r.compressed.kv_bytes)
                  << "; first divergence: "
                  << (r.first_divergence < 0 ? std::string("none") : std::to_string(r.first_divergence)) << "\n";
        if (!cache_note.empty()) std::cerr << "note: " << cache_note << "\n";
        if (r.decode.enabled())
            std::cerr << "decoding compression: " << r.decode_events.size() << " events, cache at most "
                      << (r.cache_tokens.empty() ? 0 : *std::max_element(r.cache_tokens.begin(), r.cache_tokens.end()))
                      << " tokens per head\n";
    }
}

}  // namespace

void register_compare_command(CLI::App& app, const std::atomic<bool>* cancel) {
    // Options live as long as the app.
    static Common c;
    static PromptOpts po;
    static SelectOpts so;
    static DecodeOpts dopt;
    static GenerationSettings go = cli_generation_defaults();
    static double theta = 0.05;
    static std::string out;
    static bool plan = false;
    auto* cmd = app.add_subcommand("compare", "Full vs compressed generation in lockstep, as JSON");
    add_common(cmd, c);
    add_prompt(cmd, po, true);
    add_select(cmd, so);
    add_decode(cmd, dopt, true);
    add_gen(cmd, go, 1);
    cmd->add_option("--hit-threshold", theta, "θ: attention above it marks an important position")
        ->capture_default_str()
        ->check(number_in(0.0, 1.0, true, true));
    cmd->add_option("--json", out, "Output file ('-' for stdout)")->required();
    add_plan(cmd, plan);
    cmd->callback([cancel] { cmd_compare(c, po, so, dopt, go, theta, out, plan, cancel); });
}

}  // namespace snapkv::cli
