// One policy table, one set of defaults, one JSON: the CLI (`snapkv analyze`, run as a process), the
// app (its parameter panel, its Evaluate tab, its data export) and the evaluation grid must agree on
// the user-visible defaults and write the same parameter and selection JSON for the same run.
#include <catch2/catch.hpp>

#include <QFile>
#include <QJsonDocument>
#include <QProcess>

#include <cmath>
#include <nlohmann/json.hpp>

#include "app/gui/files/data_export.h"
#include "app/gui/panels/parameter_panel.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/state/json_fields.h"
#include "app/gui/views/evaluate_view.h"
#include "core/eval/eval_grid.h"
#include "core/snapkv/params_json.h"
#include "gui_test_util.h"

using namespace guitest;
using json = nlohmann::json;

namespace {

// `snapkv ARGS` -> its stdout as JSON (REQUIREs exit code 0).
json runCli(const QStringList& args) {
    QProcess p;
    p.start(QString(SNAPKV_CLI_PATH), args);
    REQUIRE(p.waitForFinished(300000));
    INFO("stderr: " << p.readAllStandardError().toStdString());
    REQUIRE(p.exitCode() == 0);
    return json::parse(p.readAllStandardOutput().toStdString());
}

// Equal JSON, numbers within a relative 1e-5 (two processes may sum floats in another order);
// the path of the first difference in `where`.
bool sameJson(const json& a, const json& b, std::string& where, const std::string& path = "") {
    if (a.is_number() && b.is_number()) {
        const double x = a.get<double>(), y = b.get<double>();
        if (x == y || std::fabs(x - y) <= 1e-5 * std::max(std::fabs(x), std::fabs(y))) return true;
        where = path + ": " + a.dump() + " vs " + b.dump();
        return false;
    }
    if (a.type() != b.type()) {
        where = path + ": " + a.type_name() + " vs " + b.type_name();
        return false;
    }
    if (a.is_object()) {
        for (const auto& [k, v] : a.items()) {
            if (!b.contains(k)) {
                where = path + "." + k + ": missing on the right";
                return false;
            }
            if (!sameJson(v, b[k], where, path + "." + k)) return false;
        }
        for (const auto& [k, v] : b.items())
            if (!a.contains(k)) {
                where = path + "." + k + ": missing on the left";
                return false;
            }
        return true;
    }
    if (a.is_array()) {
        if (a.size() != b.size()) {
            where = path + ": " + std::to_string(a.size()) + " items vs " + std::to_string(b.size());
            return false;
        }
        for (size_t i = 0; i < a.size(); ++i)
            if (!sameJson(a[i], b[i], where, path + "[" + std::to_string(i) + "]")) return false;
        return true;
    }
    if (a != b) where = path + ": " + a.dump() + " vs " + b.dump();
    return a == b;
}

const QString kText =
    "Once upon a time there was a girl named Lily. She liked to play in the park with her "
    "friends. One day she found a red ball under a big tree and took it home to her mom.";

}  // namespace

TEST_CASE("The CLI, the app and the evaluation grid start from the same selection defaults", "[gui][policy]") {
    // The CLI: analyze with no selection option at all.
    const json cli = runCli({"analyze", "--model", modelPath(), "--prompt", kText, "--json", "-"})["params"];
    // The app: a fresh parameter panel, in core's JSON.
    studio::ParameterPanel panel;
    json app = studio::fromQtJson(panel.state().toJson());
    // The app's own settings, not selection parameters: θ and the decoding compression of Compare.
    for (const char* own : {"hit_threshold", "decode_budget", "decode_interval", "prefill_compression"}) app.erase(own);
    // The evaluation grid: its one configuration besides the full cache.
    const auto configs = snapkv::eval::expand_configs(snapkv::eval::GridAxes{});
    REQUIRE(configs.size() == 2);
    const json grid = snapkv::params_to_json(configs[1].params, configs[1].query_agnostic);
    std::string where;
    {
        const bool same = sameJson(cli, app, where);
        INFO("CLI vs app: " << where);
        CHECK(same);
    }
    {
        const bool same = sameJson(cli, grid, where);
        INFO("CLI vs evaluation grid: " << where);
        CHECK(same);
    }
    // And what the user sees everywhere: SnapKV, W 32, K 7, max pooling, C 1024, per KV head.
    CHECK(cli["policy"] == "snapkv");
    CHECK(cli["window"] == 32);
    CHECK(cli["kernel"] == 7);
    CHECK(cli["pooling"] == "max");
    CHECK(cli["budget"] == 1024);
    CHECK(cli["gqa"] == "kv-head");
    CHECK(cli["ratio"].is_null());
    // The app's Evaluate tab offers the same window, kernel, pooling, GQA mode and budget.
    auto w = makeWindow();
    studio::EvaluateView* ev = w->evaluateView();
    CHECK(ev->field("window") == QString::number(cli["window"].get<int>()));
    CHECK(ev->field("kernel") == QString::number(cli["kernel"].get<int>()));
    CHECK(ev->field("pooling") == QString::fromStdString(cli["pooling"].get<std::string>()));
    CHECK(ev->field("gqa") == QString::fromStdString(cli["gqa"].get<std::string>()));
    CHECK(ev->field("budgets").split(',').contains(QString::number(cli["budget"].get<int>())));
    CHECK(ev->field("policies").split(',').contains(QString::fromStdString(cli["policy"].get<std::string>())));
}

TEST_CASE("The app's data export and snapkv analyze write the same parameter and selection JSON", "[gui][policy]") {
    auto w = makeWindow(64);  // per query head, C 64 (see makeWindow)
    REQUIRE(runAndWait(*w).what == "finished");
    const json exported = studio::fromQtJson(studio::analysisJson(*w->state()));
    const QString doc = guiDataPath("short_story.txt");
    const json cli = runCli({"analyze", "--model", modelPath(), "--doc", doc, "--question",
                             "What did Lily find on the beach?", "--chat", "--budget", "64", "--gqa", "query-head",
                             "--json", "-"});
    REQUIRE(cli["n_prompt_tokens"] == exported["prefill"]["n_tokens"]);
    std::string where;
    json params = exported["params"];
    for (const char* own : {"hit_threshold", "decode_budget", "decode_interval", "prefill_compression"})
        params.erase(own);
    {
        const bool same = sameJson(params, cli["params"], where);
        INFO("params: " << where);
        CHECK(same);
    }
    // The app's "selection" is the object the CLI writes at its top level (beside tokens and params).
    const json& sel = exported["selection"];
    json cliSel = json::object();
    for (const auto& [k, v] : sel.items()) cliSel[k] = cli.value(k, json());
    {
        const bool same = sameJson(sel, cliSel, where);
        INFO("selection: " << where);
        CHECK(same);
    }
    CHECK(sel["layers"][0]["heads"][0].contains("kept"));
    CHECK(sel["kv_bytes"].contains("kept"));
    CHECK(sel["layers"][0].contains("sliding_window"));
}

TEST_CASE("Every row of the policy table is in the app's policy list and read back from its JSON", "[gui][policy]") {
    studio::ParameterPanel panel;
    const QStringList names = studio::policyNames();
    REQUIRE(static_cast<size_t>(names.size()) == snapkv::kPolicyCount);
    for (const auto& row : snapkv::kPolicyTable) {
        CAPTURE(row.name);
        CHECK(names.at(static_cast<int>(row.id)) == QString::fromLatin1(row.name));
        studio::ParamState s;
        s.sel.policy = row.id;
        CHECK(studio::ParamState::fromJson(s.toJson()) == s);
    }
}

TEST_CASE("Every policy of the table retunes in the app without a new prefill", "[gui][policy]") {
    auto w = makeWindow(64);
    REQUIRE(runAndWait(*w).what == "finished");
    auto* state = w->state();
    const int64_t L = state->prefill().n_tokens;
    for (const auto& row : snapkv::kPolicyTable) {
        CAPTURE(row.name);
        if (row.id != state->params().sel.policy)
            REQUIRE(editAndWait(*w, studio::ParameterPanel::FPolicy, static_cast<int>(row.id)).ok);
        const snapkv::Selection* sel = state->selection();
        REQUIRE(sel != nullptr);
        CHECK(sel->params.policy == row.id);
        CHECK(sel->window == row.window_of(state->params().sel.window));
        // The layer's C - W prefix positions per head (PyramidKV: its layer's C; AdaKV: on average).
        const int64_t k = sel->layers[0].budget - sel->window;
        int64_t kept = 0;
        for (const auto& h : sel->layers[0].heads) kept += static_cast<int64_t>(h.kept.size());
        CHECK(kept == k * static_cast<int64_t>(sel->layers[0].heads.size()));
        for (const auto& h : sel->layers[0].heads)
            for (int64_t pos : h.kept) CHECK((pos >= 0 && pos < L - sel->window));
    }
}
