// See eval_cli.h.
#include "app/cli/eval_cli.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include <unistd.h>

#include "app/cli/cli_checks.h"
#include "core/eval/results_file.h"
#include "core/tokenizer/chat_template.h"

namespace snapkv::cli {

using namespace snapkv::eval;

std::string fmt_s(double ms) {
    std::ostringstream ss;
    ss << std::fixed << std::setprecision(ms < 10000 ? 1 : 0) << ms / 1000.0 << " s";
    return ss.str();
}

CliRun run_and_write(Session& s, const EvalTask& task, const RunOptions& ro, const std::string& header,
                     const std::string& out, bool quiet, const CellLine& line, const std::atomic<bool>* cancel) {
    EvalRun run(s, task, ro);
    const std::set<RowKey> done = resume_rows(out, run.settings());
    const bool tty = isatty(fileno(stderr));
    if (!quiet)
        std::cerr << header << " x " << ro.configs.size() << " configurations"
                  << (ro.shard.count > 1
                          ? ", shard " + std::to_string(ro.shard.index) + "/" + std::to_string(ro.shard.count) + " (" +
                                std::to_string(run.shard_cells().size()) + " cells)"
                          : std::string())
                  << (done.empty() ? "" : ", resuming: " + std::to_string(done.size()) + " rows already in " + out)
                  << "\n";
    RowWriter writer(out);
    std::vector<Row> cell_rows;
    const auto t0 = std::chrono::steady_clock::now();
    int64_t run_cells = 0;
    ProgressFn progress = [&](const std::string& stage, int64_t d, int64_t t) {
        if (quiet) return;
        if (stage != "cells") {
            if (tty) std::cerr << "\r  " << stage << " " << d << "/" << t << "        " << std::flush;
            return;
        }
        if (cell_rows.empty()) return;  // skipped (resumed) cell
        ++run_cells;
        const double el = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::cerr << (tty ? "\r" : "") << "[" << d << "/" << t << "] ";
        line.label(std::cerr, cell_rows.front());
        std::cerr << ":";
        for (const Row& r : cell_rows) {
            std::cerr << " ";
            line.result(std::cerr, r);
            std::cerr << ";";
        }
        std::cerr << " ETA " << fmt_s(el / static_cast<double>(run_cells) * static_cast<double>(t - d)) << "\n";
        cell_rows.clear();
    };
    CliRun res;
    res.stats = run.run(
        done,
        [&](const Row& r) {
            writer.write(r);
            cell_rows.push_back(r);
        },
        progress, cancel);
    const RunStats& st = res.stats;
    std::cout << task.name() << ": " << st.rows_written << " rows written to " << out << " (" << st.cells_run
              << " cells run, " << st.cells_skipped << " already done)\n";
    if (st.cells_run > 0)
        std::cout << "time: " << fmt_s(st.wall_ms) << " (" << std::fixed << std::setprecision(2)
                  << static_cast<double>(st.cells_run) / (st.wall_ms / 60000.0) << " cells/min); prefill "
                  << fmt_s(st.prefill_ms) << ", full-cache decode " << fmt_s(st.reference_ms)
                  << ", compressed select+decode " << fmt_s(st.compressed_ms) << "\n";
    for (auto& r : read_results(out, false).rows)
        if (r["settings"] == run.settings()) res.rows.push_back(std::move(r));
    std::stable_sort(res.rows.begin(), res.rows.end(), row_less);
    return res;
}

void add_grid_chat_options(CLI::App* c, GridChatOpts& o) {
    c->add_flag("--no-chat", o.no_chat,
                "Do not wrap prompts in the model's chat template (default: wrap when it has one)");
    c->add_option("--system", o.system, "System message before each prompt, in the model's chat template");
    c->add_option("--chat-date", o.date,
                  "The date a template prints (strftime_now), YYYY-MM-DD; default today, recorded in the rows");
}

ChatSettings grid_chat(const GridChatOpts& o) {
    ChatSettings c;
    c.enabled = !o.no_chat;
    c.system = o.system;
    c.date = o.date;
    if (!c.date.empty()) {
        try {
            check_chat_date(c.date);
        } catch (const InputError& e) {
            usage_error("--chat-date", e.what());
        }
    }
    return c;
}

}  // namespace snapkv::cli
