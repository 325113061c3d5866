// `snapkv analyze`: prefill with capture, one selection, written in core's one JSON form
// (params_json.h; the app's export holds the same object) with the prompt's tokens.
#include "app/cli/commands.h"

#include <iostream>

#include "app/cli/cli_checks.h"
#include "app/cli/command_options.h"
#include "app/cli/plan_cli.h"
#include "core/session/run_plan.h"
#include "core/snapkv/params_json.h"

namespace snapkv::cli {
namespace {

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

void cmd_analyze(const Common& c, const PromptOpts& po, const SelectOpts& so, const std::string& out, bool plan,
                 const std::atomic<bool>* cancel) {
    const PromptSpec spec = checked_json_run(c, po, so, out);
    auto s = open_session(c, true);
    SelectionParams p = make_params(so);
    // One selection, no retunes: only what this policy declares is captured (H2O's sums are a
    // second pass over the keys). Nothing is generated: each layer's values go once scored (peak
    // memory: keys + one layer's values).
    RunFlags flags;
    flags.max_window = max_window_of(so);
    flags.analysis_only = true;
    const PrefillSettings ps = plan_run({p}, flags);
    if (show_plan(*s, spec, ps, plan, cancel)) return;
    report_prefill(s->prefill(spec, ps, stderr_progress(out.empty() || out == "-"), cancel));
    Selection sel = s->select(p, so.query_agnostic, true);
    write_json(selection_json(*s, sel, p, so.query_agnostic), out);
    if (!sel.note.empty()) std::cerr << "note: " << sel.note << "\n";
    const auto [full, comp] = s->kv_bytes(sel);
    if (const std::string g = growth_note(*s, sel, full, comp); !g.empty()) std::cerr << "note: " << g << "\n";
}

}  // namespace

void register_analyze_command(CLI::App& app, const std::atomic<bool>* cancel) {
    // Options live as long as the app.
    static Common c;
    static PromptOpts po;
    static SelectOpts so;
    static std::string out;
    static bool plan = false;
    auto* cmd = app.add_subcommand("analyze", "Prefill with capture and write the SnapKV selection as JSON");
    add_common(cmd, c);
    add_prompt(cmd, po, true);
    add_select(cmd, so);
    cmd->add_option("--json", out, "Output file ('-' for stdout)")->required();
    add_plan(cmd, plan);
    cmd->callback([cancel] { cmd_analyze(c, po, so, out, plan, cancel); });
}

}  // namespace snapkv::cli
