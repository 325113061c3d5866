// The rows of one evaluation (a results file, or a run in progress) and what the Evaluate tab draws
// from them: needle heatmaps (one length x depth grid per configuration, full cache first) and
// sweep curves (a metric against the budget, one series per policy, mean and spread over the
// items, the full cache as a reference). RULER's leaderboard and table are in eval_ruler.h.
// Plain data: no widgets, no session.
#pragma once

#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace studio {

struct EvalMetric {
    QString key;     // row field: "found", "agree_full", ...
    QString label;   // axis / colour-scale label
    bool bounded01;  // values lie in [0, 1]
};
std::vector<EvalMetric> needleMetrics();
std::vector<EvalMetric> sweepMetrics();

struct SweepPoint {
    double budget = 0;
    double mean = 0;
    double sd = 0;  // standard deviation over the items
    double lo = 0;  // mean - sd, mean + sd (clamped to [0, 1] for bounded metrics)
    double hi = 0;
    int n = 0;
    int64_t worstCell = -1;  // the item with the lowest value (the highest for KL)
    int64_t worstConfig = -1;
    QString worstId;
};

struct SweepSeries {
    QString label;  // configuration without its budget: "snapkv", "streaming W64"
    QString policy;
    std::vector<SweepPoint> points;  // by budget, ascending
};

class EvalResults {
public:
    void clear();
    // Adds a row; the first row fixes the settings, a row of other settings is refused (false).
    bool add(const nlohmann::json& row);
    // Reads a results file (an unterminated last line is ignored); throws snapkv::Error.
    void load(const QString& path);

    bool empty() const { return m_rows.empty(); }
    size_t size() const { return m_rows.size(); }
    const std::vector<nlohmann::json>& rows() const { return m_rows; }
    const nlohmann::json& settings() const { return m_settings; }
    QString task() const;          // "needle" | "sweep" | "ruler" | ""
    int64_t expectedRows() const;  // cells x configurations, -1 if unknown
    QString path() const { return m_path; }

    // Configurations in grid order: labels ("full", "snapkv C256") and JSON.
    QStringList configLabels() const;
    const nlohmann::json* configJson(int64_t config) const;

    // Needle: axes from the settings; the metric of one cell of one configuration (nullopt: not run).
    std::vector<int64_t> lengths() const;
    std::vector<double> depths() const;
    const nlohmann::json* row(int64_t cell, int64_t config) const;
    std::optional<double> value(int64_t cell, int64_t config, const QString& metric) const;
    // Found share of a configuration: (found, rows).
    std::pair<int, int> foundCount(int64_t config) const;

    // Sweep: the curves of a metric; `full` gets the full cache's mean (nullopt when absent).
    std::vector<SweepSeries> curves(const QString& metric, std::optional<double>* full = nullptr) const;

    // The hover text of a row: configuration, scores, the answer.
    QString describe(const nlohmann::json& row) const;

private:
    std::vector<nlohmann::json> m_rows;
    nlohmann::json m_settings;
    QString m_path;
    std::vector<int64_t> m_index;  // (cell * n_configs + config) -> row index, -1 if absent
};

// The value of a metric in a row as a number (booleans 0/1), nullopt when absent or null.
std::optional<double> metricValue(const nlohmann::json& row, const QString& key);
// "snapkv C256" or "snapkv r0.5" from a configuration's JSON (EvalConfig labels, without depending
// on core/eval); withBudget false leaves the size (budget or ratio) out.
QString configLabel(const nlohmann::json& config, bool withBudget = true);

}  // namespace studio
