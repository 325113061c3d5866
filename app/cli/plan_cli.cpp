// The prompt commands' plan line and --plan (plan_cli.h).
#include "app/cli/plan_cli.h"

#include <iostream>

#include "core/session/run_forecast.h"

namespace snapkv::cli {
namespace {

double g_forecast_seconds = -1;  // the last show_plan's forecast (one prefill per command)

}  // namespace

void add_plan(CLI::App* c, bool& plan_only) {
    c->add_flag("--plan", plan_only,
                "Print what the run will take (memory: KV cache, capture, scorers, peak vs free; time from a short "
                "calibration forward on this machine) and the cheaper choices when it does not fit, then stop "
                "before the prefill");
}

bool show_plan(Session& s, const PromptSpec& spec, const PrefillSettings& ps, bool plan_only,
               const std::atomic<bool>* cancel) {
    const PromptTokens prompt = s.build_prompt(spec);
    if (prompt.ids.empty()) return plan_only;  // the prefill names the empty prompt
    PrefillSpeed speed;                        // unmeasured: the forecast gives memory alone
    try {
        speed = measure_prefill_speed(s, 128, cancel);
    } catch (const InputError&) {
        // Not even the calibration forward fits: the memory forecast below names what the run needs.
    }
    const RunForecast f = forecast_prefill(s, prompt, ps, speed);
    std::cerr << "plan: " << f.summary() << "\n";
    g_forecast_seconds = f.seconds;
    const std::string choices = f.choices_text(true);
    require_memory(f.memory, f.available, "the prompt (" + group_thousands(f.n_tokens) + " tokens)",
                   choices.empty() ? "; no cache type or shorter document fits: free memory or use a smaller model"
                                   : "; try " + choices);
    if (plan_only && speed.measured())
        std::cerr << "plan: calibrated on a " << speed.tokens << "-token forward ("
                  << format_seconds(speed.calibration_ms / 1000.0) << ", " << speed.threads
                  << " threads); --plan stops here, before the prefill\n";
    return plan_only;
}

void report_prefill(const PrefillSummary& done) {
    std::cerr << "prefill: " << group_thousands(done.n_tokens) << " tokens in "
              << format_seconds((done.prefill_ms + done.scorer_ms) / 1000.0);
    if (g_forecast_seconds >= 0) std::cerr << " (forecast " << format_seconds(g_forecast_seconds) << ")";
    std::cerr << "\n";
}

}  // namespace snapkv::cli
