// See eval_results.h.
#include "app/gui/state/eval_results.h"

#include <QFileInfo>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/common/errors.h"
#include "core/eval/results_file.h"
#include "core/snapkv/snapkv_params.h"

namespace studio {

using json = nlohmann::json;

std::vector<EvalMetric> needleMetrics() {
    return {{"found", "needle found (1) or missed (0)", true},
            {"agree_full", "agreement with the full-cache answer (word F1)", true},
            {"value_kept", "share of the needle value's tokens kept (all heads)", true},
            {"needle_kept", "share of the needle sentence's tokens kept (all heads)", true},
            {"kl_mean", "mean KL(full || compressed), nats", false}};
}

std::vector<EvalMetric> sweepMetrics() {
    return {{"agree_full", "agreement with the full-cache answer (word F1)", true},
            {"f1", "word F1 with the reference answer", true},
            {"contains", "reference answer contained (share of items)", true},
            {"kl_mean", "mean KL(full || compressed), nats", false},
            {"hit_rate", "hit rate (important positions kept)", true},
            {"kept_mass", "kept attention mass", true},
            {"timing.decode_tok_s", "decode speed, tokens/s", false}};
}

std::optional<double> metricValue(const json& row, const QString& key) {
    const json* v = &row;
    for (const QString& part : key.split('.')) {
        const std::string k = part.toStdString();
        if (!v->is_object() || !v->contains(k)) return std::nullopt;
        v = &(*v)[k];
    }
    if (v->is_boolean()) return v->get<bool>() ? 1.0 : 0.0;
    if (v->is_number()) return v->get<double>();
    return std::nullopt;
}

QString configLabel(const json& c, bool withBudget) {
    const std::string policy = c.value("policy", std::string("?"));
    if (policy == "full") return "full cache";
    // Labels name what differs from core's defaults (the grid's, the panel's and the CLI's).
    const snapkv::SelectionParams d = snapkv::default_params();
    QString s = QString::fromStdString(policy);
    if (withBudget && c.contains("budget") && c["budget"].is_number())
        s += QString(" C%1").arg(c["budget"].get<int64_t>());
    // kvpress's compression ratio (the budget is null then), printed as core's config_label does.
    if (withBudget && c.contains("ratio") && c["ratio"].is_number())
        s += QString(" r%1").arg(c["ratio"].get<double>(), 0, 'g', 6);
    // Decoding compression, as core's config_label writes it (prefill off, D<budget>/<interval>).
    if (c.value("prefill_compression", true) == false) s += " no-prefill";
    if (c.contains("decode_budget") && c["decode_budget"].is_number())
        s += QString(" D%1/%2").arg(c["decode_budget"].get<int64_t>()).arg(c.value("decode_interval", int64_t(0)));
    if (c.contains("window") && c["window"].is_number() && c["window"].get<int64_t>() != d.window)
        s += QString(" W%1").arg(c["window"].get<int64_t>());
    if (c.contains("kernel") && c["kernel"].is_number() && c["kernel"].get<int64_t>() != d.kernel)
        s += QString(" K%1").arg(c["kernel"].get<int64_t>());
    if (c.contains("pooling") && c["pooling"].is_string() && c["pooling"] != snapkv::pooling_name(d.pooling))
        s += " " + QString::fromStdString(c["pooling"].get<std::string>());
    if (c.contains("gqa") && c["gqa"].is_string() && c["gqa"] != snapkv::gqa_mode_name(d.gqa))
        s += " " + QString::fromStdString(c["gqa"].get<std::string>());
    if (c.value("query_agnostic", false) == true) s += " q-agnostic";
    return s;
}

void EvalResults::clear() {
    m_rows.clear();
    m_settings = json();
    m_path.clear();
    m_index.clear();
}

bool EvalResults::add(const json& row) {
    if (!row.contains("settings") || !row.contains("cell") || !row.contains("config")) return false;
    if (m_settings.is_null()) {
        m_settings = row["settings"];
        const int64_t n = expectedRows();
        m_index.assign(static_cast<size_t>(std::max<int64_t>(n, 0)), -1);
    } else if (row["settings"] != m_settings) {
        return false;
    }
    const int64_t n_configs = static_cast<int64_t>(m_settings.value("configs", json::array()).size());
    const int64_t key = row["cell"].get<int64_t>() * n_configs + row["config"].get<int64_t>();
    if (key >= 0 && key < static_cast<int64_t>(m_index.size())) {
        if (m_index[static_cast<size_t>(key)] >= 0) {  // a rerun of the same row replaces it
            m_rows[static_cast<size_t>(m_index[static_cast<size_t>(key)])] = row;
            return true;
        }
        m_index[static_cast<size_t>(key)] = static_cast<int64_t>(m_rows.size());
    }
    m_rows.push_back(row);
    return true;
}

void EvalResults::load(const QString& path) {
    const snapkv::eval::ResultsFile f = snapkv::eval::read_results(path.toStdString(), true);
    clear();
    for (size_t i = 0; i < f.rows.size(); ++i)
        if (!add(f.rows[i]))
            throw snapkv::InputError("'" + path.toStdString() + "' line " + std::to_string(f.lines[i]) +
                                     " belongs to another run (its settings differ from line " +
                                     std::to_string(f.lines.front()) + ")");
    m_path = path;
}

QString EvalResults::task() const {
    return m_settings.is_object() ? QString::fromStdString(m_settings.value("task", std::string())) : QString();
}

int64_t EvalResults::expectedRows() const { return snapkv::eval::expected_rows(m_settings); }

QStringList EvalResults::configLabels() const {
    QStringList out;
    if (!m_settings.is_object()) return out;
    for (const auto& c : m_settings["configs"]) out << configLabel(c);
    return out;
}

const json* EvalResults::configJson(int64_t config) const {
    if (!m_settings.is_object() || config < 0 || config >= static_cast<int64_t>(m_settings["configs"].size()))
        return nullptr;
    return &m_settings["configs"][static_cast<size_t>(config)];
}

std::vector<int64_t> EvalResults::lengths() const {
    if (task() != "needle") return {};
    return m_settings["needle"]["lengths"].get<std::vector<int64_t>>();
}

std::vector<double> EvalResults::depths() const {
    if (task() != "needle") return {};
    return m_settings["needle"]["depths"].get<std::vector<double>>();
}

const json* EvalResults::row(int64_t cell, int64_t config) const {
    const int64_t n_configs = static_cast<int64_t>(m_settings.is_object() ? m_settings["configs"].size() : 0);
    const int64_t key = cell * n_configs + config;
    if (key < 0 || key >= static_cast<int64_t>(m_index.size()) || m_index[static_cast<size_t>(key)] < 0) return nullptr;
    return &m_rows[static_cast<size_t>(m_index[static_cast<size_t>(key)])];
}

std::optional<double> EvalResults::value(int64_t cell, int64_t config, const QString& metric) const {
    const json* r = row(cell, config);
    return r ? metricValue(*r, metric) : std::nullopt;
}

std::pair<int, int> EvalResults::foundCount(int64_t config) const {
    int found = 0, n = 0;
    for (const auto& r : m_rows)
        if (r["config"].get<int64_t>() == config && r.contains("found")) {
            ++n;
            found += r["found"].get<bool>() ? 1 : 0;
        }
    return {found, n};
}

std::vector<SweepSeries> EvalResults::curves(const QString& metric, std::optional<double>* full) const {
    if (full) full->reset();
    std::vector<SweepSeries> out;
    if (!m_settings.is_object()) return out;
    const bool lowerIsBetter = metric == "kl_mean";
    bool bounded = false;
    for (const auto& m : sweepMetrics())
        if (m.key == metric) bounded = m.bounded01;
    // series label -> budget -> values (with their rows)
    std::map<QString, size_t> seriesIndex;
    std::vector<std::map<double, std::vector<const json*>>> groups;
    double fullSum = 0;
    int fullN = 0;
    for (const auto& r : m_rows) {
        const auto v = metricValue(r, metric);
        if (!v) continue;
        if (r.value("policy", std::string()) == "full") {
            fullSum += *v;
            ++fullN;
            continue;
        }
        const json* c = configJson(r["config"].get<int64_t>());
        if (!c || !(*c)["budget"].is_number()) continue;
        const QString label = configLabel(*c, false);
        auto it = seriesIndex.find(label);
        if (it == seriesIndex.end()) {
            it = seriesIndex.emplace(label, out.size()).first;
            SweepSeries s;
            s.label = label;
            s.policy = QString::fromStdString((*c)["policy"].get<std::string>());
            out.push_back(s);
            groups.emplace_back();
        }
        groups[it->second][(*c)["budget"].get<double>()].push_back(&r);
    }
    if (full && fullN > 0) *full = fullSum / fullN;
    for (size_t i = 0; i < out.size(); ++i) {
        for (const auto& [budget, rows] : groups[i]) {
            SweepPoint p;
            p.budget = budget;
            p.n = static_cast<int>(rows.size());
            double sum = 0, sum2 = 0;
            const json* worst = nullptr;
            double worstV = 0;
            for (const json* r : rows) {
                const double v = *metricValue(*r, metric);
                sum += v;
                sum2 += v * v;
                if (!worst || (lowerIsBetter ? v > worstV : v < worstV)) {
                    worst = r;
                    worstV = v;
                }
            }
            p.mean = sum / p.n;
            p.sd = p.n > 1 ? std::sqrt(std::max(0.0, (sum2 - sum * sum / p.n) / (p.n - 1))) : 0.0;
            p.lo = p.mean - p.sd;
            p.hi = p.mean + p.sd;
            if (bounded) {
                p.lo = std::clamp(p.lo, 0.0, 1.0);
                p.hi = std::clamp(p.hi, 0.0, 1.0);
            } else {
                p.lo = std::max(p.lo, 0.0);
            }
            p.worstCell = (*worst)["cell"].get<int64_t>();
            p.worstConfig = (*worst)["config"].get<int64_t>();
            p.worstId = QString::fromStdString(worst->value("item_id", std::string()));
            out[i].points.push_back(p);
        }
    }
    return out;
}

QString EvalResults::describe(const json& r) const {
    const json* c = configJson(r.value("config", int64_t(-1)));
    QString s = c ? configLabel(*c) : QString("?");
    if (r.contains("ruler_task"))
        s += QString(" · %1 #%2 · length %3")
                 .arg(QString::fromStdString(r["ruler_task"].get<std::string>()))
                 .arg(r.value("sample", int64_t(0)))
                 .arg(r.value("length", int64_t(0)));
    else if (r.contains("length"))
        s += QString(" · length %1 · depth %2%").arg(r["length"].get<int64_t>()).arg(r["depth"].get<double>());
    if (r.contains("item_id")) s += " · " + QString::fromStdString(r["item_id"].get<std::string>());
    if (auto v = metricValue(r, "score")) s += QString(" · score %1").arg(100.0 * *v, 0, 'f', 0);
    if (r.contains("found")) s += r["found"].get<bool>() ? " · found" : " · missed";
    if (r.contains("needle_value")) s += " (" + QString::fromStdString(r["needle_value"].get<std::string>()) + ")";
    if (auto v = metricValue(r, "agree_full")) s += QString("\nagreement with full %1").arg(*v, 0, 'f', 2);
    if (auto v = metricValue(r, "kl_mean")) s += QString(" · KL %1").arg(*v, 0, 'g', 3);
    if (auto v = metricValue(r, "value_kept")) s += QString(" · value kept %1").arg(*v, 0, 'f', 2);
    if (r.contains("reference")) s += "\nreference: " + QString::fromStdString(r["reference"].get<std::string>());
    if (r.contains("references") && r["references"].is_array()) {
        QStringList refs;
        for (const auto& x : r["references"]) refs << QString::fromStdString(x.get<std::string>());
        s += "\nreferences: " + refs.join(", ");
    }
    QString answer = QString::fromStdString(r.value("answer", std::string()));
    answer.replace('\n', QString::fromUtf8(" \u21b5 "));
    if (answer.size() > 160) answer = answer.left(157) + "...";
    s += "\nanswer: " + answer;
    return s;
}

}  // namespace studio
