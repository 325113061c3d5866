// The plan line the prompt commands print before a prefill (run_forecast.h: memory by what holds
// it, the peak against the free memory, the time from this machine's measured speed), `--plan`
// (print the forecast and stop before the prefill), and the refusal of a run that does not fit,
// naming the cheaper choices as the flags that make them. Text to stderr only: stdout may be the
// command's JSON.
#pragma once

#include <atomic>
#include <string>

#include <CLI/CLI.hpp>

#include "core/session/session.h"

namespace snapkv::cli {

// --plan on a prompt command.
void add_plan(CLI::App* c, bool& plan_only);

// Forecasts the prefill of `spec` with `ps` on the loaded model (a short calibration forward
// first) and prints "plan: ..." to stderr. A run that does not fit throws InputError with the
// numbers and the cheaper choices ("try --cache-type q8_0 (peak 2.1 GiB) or a document of at
// most 12,000 tokens"), plan_only or not. Returns plan_only: the caller then stops.
bool show_plan(Session& s, const PromptSpec& spec, const PrefillSettings& ps, bool plan_only,
               const std::atomic<bool>* cancel);

// After the prefill show_plan forecast: "prefill: 40.2 s (forecast 41 s)" to stderr, so the
// forecast's error is in plain sight.
void report_prefill(const PrefillSummary& done);

}  // namespace snapkv::cli
