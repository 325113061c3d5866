// See eval_ruler.h.
#include "app/gui/state/eval_ruler.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace studio {

using json = nlohmann::json;

namespace {

// The rows of one length: config -> task index -> sample -> row.
using SampleRows = std::map<int64_t, const json*>;
using RulerIndex = std::map<int64_t, std::vector<SampleRows>>;

RulerIndex indexRows(const EvalResults& results, int64_t length, const QStringList& tasks) {
    RulerIndex index;
    for (const auto& r : results.rows()) {
        if (!r.contains("ruler_task") || r.value("length", int64_t(-1)) != length) continue;
        const int t = tasks.indexOf(QString::fromStdString(r["ruler_task"].get<std::string>()));
        if (t < 0) continue;
        auto& perTask = index[r["config"].get<int64_t>()];
        perTask.resize(static_cast<size_t>(tasks.size()));
        perTask[static_cast<size_t>(t)][r.value("sample", int64_t(0))] = &r;
    }
    return index;
}

// Whether row a is a worse example than row b: a lower value, then less of its needle kept.
bool worse(double va, const json& a, double vb, const json& b) {
    if (va != vb) return va < vb;
    const double ka = metricValue(a, "needle_kept").value_or(2.0), kb = metricValue(b, "needle_kept").value_or(2.0);
    return ka < kb;
}

struct Worst {
    const json* row = nullptr;
    double value = 0;
    void offer(const json* r, double v) {
        if (!row || worse(v, *r, value, *row)) row = r, value = v;
    }
    void into(RulerStat& s) const {
        if (!row) return;
        s.worstCell = (*row)["cell"].get<int64_t>();
        s.worstConfig = (*row)["config"].get<int64_t>();
    }
};

double populationSd(const std::vector<double>& v, double mean) {
    if (v.size() < 2) return 0.0;
    double s2 = 0;
    for (double x : v) s2 += (x - mean) * (x - mean);
    return std::sqrt(s2 / static_cast<double>(v.size()));
}

RulerStat taskStat(const SampleRows& rows, const QString& metric) {
    RulerStat s;
    std::vector<double> values;
    Worst worst;
    for (const auto& [sample, r] : rows) {
        const auto v = metricValue(*r, metric);
        if (!v) continue;
        values.push_back(100.0 * *v);
        worst.offer(r, 100.0 * *v);
    }
    if (values.empty()) return s;
    s.n = static_cast<int>(values.size());
    for (double v : values) s.mean += v;
    s.mean /= static_cast<double>(values.size());
    s.sd = populationSd(values, s.mean);
    worst.into(s);
    return s;
}

// Over tasks: the mean of the task means, the s.d. over samples of the per-sample mean over tasks.
RulerStat configStat(const std::vector<SampleRows>& perTask, const QString& metric) {
    RulerStat s;
    double sumMeans = 0;
    int nTasks = 0;
    std::map<int64_t, std::pair<double, int>> bySample;  // sample -> (sum over tasks, tasks)
    Worst worst;
    for (const SampleRows& rows : perTask) {
        const RulerStat t = taskStat(rows, metric);
        if (t.n == 0) continue;
        sumMeans += t.mean;
        ++nTasks;
        for (const auto& [sample, r] : rows)
            if (const auto v = metricValue(*r, metric)) {
                bySample[sample].first += 100.0 * *v;
                ++bySample[sample].second;
                worst.offer(r, 100.0 * *v);
            }
    }
    if (nTasks == 0) return s;
    s.mean = sumMeans / nTasks;
    std::vector<double> samples;
    double sampleMean = 0;
    for (const auto& [sample, acc] : bySample) {
        samples.push_back(acc.first / acc.second);
        sampleMean += samples.back();
    }
    sampleMean /= static_cast<double>(samples.size());
    s.sd = populationSd(samples, sampleMean);
    s.n = static_cast<int>(samples.size());
    worst.into(s);
    return s;
}

}  // namespace

std::vector<EvalMetric> rulerMetrics() {
    return {{"score", "RULER score (0-100)", true},
            {"agree_full", "agreement with the full-cache answer (word F1, x100)", true},
            {"needle_kept", "share of the first needle's tokens kept, all heads (%)", true},
            {"value_kept", "share of the first answer's tokens kept, all heads (%)", true}};
}

QString configAxis(const json& c) {
    if (c.value("policy", std::string()) == "full") return QString();
    if (c.contains("ratio") && c["ratio"].is_number()) return "ratio";
    if (c.contains("budget") && c["budget"].is_number()) return "budget";
    return QString();
}

double configSize(const json& c) {
    const QString axis = configAxis(c);
    return axis.isEmpty() ? 0.0 : c[axis.toStdString()].get<double>();
}

std::vector<int64_t> rulerLengths(const EvalResults& results) {
    const json& st = results.settings();
    if (!st.is_object() || !st.contains("ruler")) return {};
    return st["ruler"].value("lengths", std::vector<int64_t>{});
}

QStringList rulerTasks(const EvalResults& results) {
    QStringList out;
    const json& st = results.settings();
    if (!st.is_object() || !st.contains("ruler")) return out;
    for (const auto& t : st["ruler"].value("tasks", json::array())) out << QString::fromStdString(t.get<std::string>());
    return out;
}

QStringList rulerAxes(const EvalResults& results) {
    bool ratio = false, budget = false;
    const json& st = results.settings();
    if (st.is_object())
        for (const auto& c : st.value("configs", json::array())) {
            const QString a = configAxis(c);
            ratio = ratio || a == "ratio";
            budget = budget || a == "budget";
        }
    QStringList out;
    if (ratio) out << "ratio";
    if (budget) out << "budget";
    return out;
}

std::vector<double> rulerSizes(const EvalResults& results, const QString& axis) {
    std::vector<double> out;
    const json& st = results.settings();
    if (!st.is_object()) return out;
    for (const auto& c : st.value("configs", json::array()))
        if (configAxis(c) == axis && std::find(out.begin(), out.end(), configSize(c)) == out.end())
            out.push_back(configSize(c));
    std::sort(out.begin(), out.end());
    return out;
}

RulerBoard rulerBoard(const EvalResults& results, int64_t length, const QString& axis, const QString& metric) {
    RulerBoard board;
    board.axis = axis;
    const QStringList tasks = rulerTasks(results);
    const RulerIndex index = indexRows(results, length, tasks);
    const json& configs = results.settings().value("configs", json::array());
    std::map<QString, size_t> seriesOf;
    for (size_t k = 0; k < configs.size(); ++k) {
        const json& c = configs[k];
        const auto it = index.find(static_cast<int64_t>(k));
        if (c.value("policy", std::string()) == "full") {
            board.fullConfig = static_cast<int64_t>(k);
            if (it != index.end()) {
                const RulerStat s = configStat(it->second, metric);
                if (s.n > 0) board.full = s;
            }
            continue;
        }
        if (configAxis(c) != axis) continue;
        const QString label = configLabel(c, false);
        auto [si, fresh] = seriesOf.emplace(label, board.series.size());
        if (fresh) board.series.push_back({label, {}});
        if (it == index.end()) continue;
        RulerPoint p;
        p.x = configSize(c);
        p.config = static_cast<int64_t>(k);
        p.stat = configStat(it->second, metric);
        if (p.stat.n > 0) board.series[si->second].points.push_back(p);
    }
    for (auto& s : board.series)
        std::sort(s.points.begin(), s.points.end(), [](const RulerPoint& a, const RulerPoint& b) { return a.x < b.x; });
    return board;
}

RulerTable rulerTable(const EvalResults& results, int64_t length, const QString& axis, double size,
                      const QString& metric) {
    RulerTable table;
    table.tasks = rulerTasks(results);
    const RulerIndex index = indexRows(results, length, table.tasks);
    const json& configs = results.settings().value("configs", json::array());
    std::map<QString, int> seriesOf;  // the leaderboard's series order, whatever the size
    for (size_t k = 0; k < configs.size(); ++k) {
        const json& c = configs[k];
        const bool full = c.value("policy", std::string()) == "full";
        if (!full && configAxis(c) != axis) continue;
        int series = -1;
        if (!full) {
            series = seriesOf.emplace(configLabel(c, false), static_cast<int>(seriesOf.size())).first->second;
            if (configSize(c) != size) continue;
        }
        table.columns << (full ? QString("full cache") : configLabel(c, true));
        table.headers << (full ? QString("full") : configLabel(c, false));
        table.configs.push_back(static_cast<int64_t>(k));
        table.seriesIndex.push_back(series);
    }
    table.cells.assign(static_cast<size_t>(table.tasks.size()), std::vector<RulerStat>(table.configs.size()));
    table.average.assign(table.configs.size(), RulerStat{});
    for (size_t col = 0; col < table.configs.size(); ++col) {
        const auto it = index.find(table.configs[col]);
        if (it == index.end()) continue;
        for (size_t t = 0; t < it->second.size(); ++t) table.cells[t][col] = taskStat(it->second[t], metric);
        table.average[col] = configStat(it->second, metric);
    }
    return table;
}

}  // namespace studio
