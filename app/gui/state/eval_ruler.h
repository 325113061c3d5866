// What the Evaluate tab shows of a RULER results file (core/eval/ruler_runner.h), as plain values:
// the leaderboard (one series per policy: a metric against the compression ratio or the budget,
// mean over tasks, +-1 s.d. over samples; the full cache apart) and the task x configuration table
// at one size, each entry with the sample that scored worst. Scores are shown 0-100 as RULER
// reports them. No widgets, no session: the plot and the table draw from these.
#pragma once

#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>
#include <vector>

#include "app/gui/state/eval_results.h"

namespace studio {

// The metrics a RULER row carries, all shares in [0, 1] (shown x100).
std::vector<EvalMetric> rulerMetrics();

// Mean and spread of a metric over samples (x100), and the row a click opens.
struct RulerStat {
    double mean = 0;
    double sd = 0;           // population s.d. over the samples (as core's ruler_scores)
    int n = 0;               // samples; 0 = nothing run yet
    int64_t worstCell = -1;  // the lowest value; ties: the one that kept least of its needle
    int64_t worstConfig = -1;
};

struct RulerPoint {
    double x = 0;  // the ratio or the budget
    int64_t config = -1;
    RulerStat stat;  // mean over tasks of the task means; s.d. over samples of the
                     // per-sample mean over tasks; worst over all tasks and samples
};

struct RulerSeries {
    QString label;                   // the configuration without its size: "snapkv", "streaming W16"
    std::vector<RulerPoint> points;  // by size, ascending
};

struct RulerBoard {
    QString axis;  // "ratio" | "budget"
    std::vector<RulerSeries> series;
    std::optional<RulerStat> full;  // the full cache
    int64_t fullConfig = -1;
};

struct RulerTable {
    QStringList tasks;                          // rows, in the run's order
    QStringList columns;                        // "full cache", then each series at the size ("snapkv r0.5")
    QStringList headers;                        // the same without the size ("full", "snapkv"): the table's header
    std::vector<int64_t> configs;               // per column
    std::vector<int> seriesIndex;               // per column: the leaderboard series (-1 for the full cache)
    std::vector<std::vector<RulerStat>> cells;  // [task][column]
    std::vector<RulerStat> average;             // per column: the mean over tasks (the leaderboard's point)
};

// The run's lengths and tasks (from the settings), the size axes present ("ratio" before "budget")
// and the sizes of one axis, ascending.
std::vector<int64_t> rulerLengths(const EvalResults& results);
QStringList rulerTasks(const EvalResults& results);
QStringList rulerAxes(const EvalResults& results);
std::vector<double> rulerSizes(const EvalResults& results, const QString& axis);
// "ratio" or "budget" for a compressed configuration's JSON, "" for the full cache.
QString configAxis(const nlohmann::json& config);
double configSize(const nlohmann::json& config);

RulerBoard rulerBoard(const EvalResults& results, int64_t length, const QString& axis, const QString& metric);
RulerTable rulerTable(const EvalResults& results, int64_t length, const QString& axis, double size,
                      const QString& metric);

}  // namespace studio
