// See results_file.h.
#include "core/eval/results_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/common/atomic_file.h"
#include "core/common/errors.h"
#include "core/eval/param_error.h"

namespace snapkv::eval {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string where(const std::string& path, int64_t line) { return "'" + path + "' line " + std::to_string(line); }

std::string short_value(const json& v) {
    std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

}  // namespace

std::string row_line(const Row& row) { return row.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

ResultsFile read_results(const std::string& path, bool allow_incomplete_tail) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError("results file '" + path + "' cannot be opened");
    std::ostringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    ResultsFile f;
    f.path = path;
    size_t pos = 0;
    int64_t line_no = 0;
    while (pos < text.size()) {
        ++line_no;
        const size_t nl = text.find('\n', pos);
        const bool terminated = nl != std::string::npos;
        const std::string line = text.substr(pos, terminated ? nl - pos : std::string::npos);
        pos = terminated ? nl + 1 : text.size();
        if (!terminated) {
            if (line.find_first_not_of(" \t\r") == std::string::npos) break;
            if (allow_incomplete_tail) {
                f.incomplete_tail = true;
                break;
            }
            throw InputError(where(path, line_no) +
                             " is incomplete (no end of line: the run stopped while "
                             "writing it); resume that run (the same options and results file), then merge");
        }
        f.complete_bytes = pos;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        json row;
        try {
            row = json::parse(line);
        } catch (const json::parse_error& e) {
            throw InputError(where(path, line_no) + " is not valid JSON: " + e.what());
        }
        if (!row.is_object() || !row.contains("cell") || !row["cell"].is_number_integer() || !row.contains("config") ||
            !row["config"].is_number_integer() || !row.contains("settings") || !row["settings"].is_object())
            throw InputError(where(path, line_no) +
                             " is not a result row (it needs integer 'cell' and 'config' and a 'settings' object)");
        // Rows written before the KV cache type was recorded ran with the float32 cache.
        if (json& st = row["settings"];
            st.contains("model") && st["model"].is_object() && !st["model"].contains("cache_type"))
            st["model"]["cache_type"] = "f32";
        f.rows.push_back(std::move(row));
        f.lines.push_back(line_no);
    }
    return f;
}

std::string first_difference(const json& here, const json& there, const std::string& prefix) {
    if (here == there) return "";
    if (here.is_object() && there.is_object()) {
        for (const auto& [k, v] : here.items()) {
            const std::string name = prefix.empty() ? k : prefix + "." + k;
            if (!there.contains(k)) return name + ": " + short_value(v) + " here, absent there";
            if (std::string d = first_difference(v, there[k], name); !d.empty()) return d;
        }
        for (const auto& [k, v] : there.items())
            if (!here.contains(k))
                return (prefix.empty() ? k : prefix + "." + k) + ": absent here, " + short_value(v) + " there";
    }
    return (prefix.empty() ? std::string("settings") : prefix) + ": " + short_value(here) + " here, " +
           short_value(there) + " there";
}

std::set<RowKey> resume_rows(const std::string& path, const json& settings) {
    std::set<RowKey> keys;
    std::error_code ec;
    if (!fs::exists(path, ec)) return keys;
    ResultsFile f = read_results(path, true);
    for (size_t i = 0; i < f.rows.size(); ++i) {
        const json& r = f.rows[i];
        if (std::string d = first_difference(settings, r["settings"]); !d.empty())
            throw ParamError("out", where(path, f.lines[i]) + " was written with other settings (" + d +
                                        "); choose another results file, or the same options to resume it");
        keys.insert({r["cell"].get<int64_t>(), r["config"].get<int64_t>()});
    }
    if (f.incomplete_tail) {
        fs::resize_file(path, f.complete_bytes, ec);
        if (ec) throw InputError("cannot cut the incomplete last line of '" + path + "': " + ec.message());
    }
    return keys;
}

RowWriter::RowWriter(const std::string& path) : m_path(path) {
    create_parent_dirs(path);
    m_file = std::fopen(path.c_str(), "ab");
    if (!m_file) {
        const int err = errno;
        throw FileError(FileError::Kind::Io,
                        "cannot open results file '" + path + "' for writing: " + std::strerror(err));
    }
}

RowWriter::~RowWriter() {
    if (m_file) std::fclose(m_file);
}

void RowWriter::write(const Row& row) {
    const std::string line = row_line(row);
    errno = 0;
    if (std::fwrite(line.data(), 1, line.size(), m_file) != line.size() || std::fflush(m_file) != 0) {
        const int err = errno ? errno : EIO;
        throw FileError(FileError::Kind::Io, "cannot write results file '" + m_path + "': " + std::strerror(err));
    }
}

bool row_less(const Row& a, const Row& b) {
    const auto ka = std::make_pair(a["cell"].get<int64_t>(), a["config"].get<int64_t>());
    const auto kb = std::make_pair(b["cell"].get<int64_t>(), b["config"].get<int64_t>());
    return ka < kb;
}

int64_t expected_rows(const json& settings) {
    if (!settings.contains("cells") || !settings.contains("configs") || !settings["configs"].is_array()) return -1;
    return settings["cells"].get<int64_t>() * static_cast<int64_t>(settings["configs"].size());
}

MergeReport merge_results(const std::vector<std::string>& inputs, const std::string& out, bool allow_partial) {
    if (inputs.empty()) throw InputError("merge: no input files");
    std::vector<Row> rows;
    std::map<RowKey, std::string> seen;  // key -> "file line N"
    json settings;
    std::string settings_from;
    for (const auto& path : inputs) {
        ResultsFile f = read_results(path, false);
        for (size_t i = 0; i < f.rows.size(); ++i) {
            Row& r = f.rows[i];
            const std::string at = where(path, f.lines[i]);
            if (settings.is_null()) {
                settings = r["settings"];
                settings_from = at;
            } else if (std::string d = first_difference(settings, r["settings"]); !d.empty()) {
                throw InputError("merge: " + at + " was made with other settings than " + settings_from + " (" + d +
                                 "); only shards of one run can be merged");
            }
            const RowKey key{r["cell"].get<int64_t>(), r["config"].get<int64_t>()};
            if (auto [it, fresh] = seen.emplace(key, at); !fresh)
                throw InputError("merge: cell " + std::to_string(key.first) + ", configuration " +
                                 std::to_string(key.second) + " is in both " + it->second + " and " + at +
                                 " (a shard given twice, or overlapping shards)");
            rows.push_back(std::move(r));
        }
    }
    if (rows.empty()) throw InputError("merge: the input files hold no rows");
    MergeReport rep;
    rep.rows = static_cast<int64_t>(rows.size());
    rep.expected = expected_rows(settings);
    if (rep.expected > 0) {
        const int64_t n_configs = static_cast<int64_t>(settings["configs"].size());
        for (int64_t c = 0; c < settings["cells"].get<int64_t>(); ++c)
            for (int64_t k = 0; k < n_configs; ++k)
                if (!seen.count({c, k})) rep.missing.push_back({c, k});
    }
    if (!rep.missing.empty() && !allow_partial) {
        std::string first;
        for (size_t i = 0; i < std::min<size_t>(3, rep.missing.size()); ++i)
            first += (i ? ", " : "") + std::string("cell ") + std::to_string(rep.missing[i].first) + " config " +
                     std::to_string(rep.missing[i].second);
        throw ParamError("allow_partial", "merge: " + std::to_string(rep.missing.size()) + " of " +
                                              std::to_string(rep.expected) +
                                              " rows of the grid are in no input (first: " + first +
                                              "); run the missing shards, or allow a partial merge");
    }
    std::stable_sort(rows.begin(), rows.end(), row_less);
    std::string content;
    for (const auto& r : rows) content += row_line(r);
    write_file_atomic(out, content);
    return rep;
}

namespace {

std::string csv_cell(const json& v) {
    if (v.is_null()) return "";
    std::string s = v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, json::error_handler_t::replace);
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

void flatten(const json& row, const std::string& prefix, std::vector<std::pair<std::string, json>>& out) {
    for (const auto& [k, v] : row.items()) {
        if (prefix.empty() && k == "settings") continue;
        if (v.is_object()) {
            if (prefix.empty()) flatten(v, k + ".", out);
            continue;
        }
        if (v.is_array()) continue;
        out.emplace_back(prefix + k, v);
    }
}

}  // namespace

std::string rows_to_csv(const std::vector<Row>& rows) {
    std::vector<std::string> columns;
    std::map<std::string, size_t> index;
    std::vector<std::vector<std::pair<std::string, json>>> flat(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
        flatten(rows[i], "", flat[i]);
        for (const auto& [k, v] : flat[i])
            if (index.emplace(k, columns.size()).second) columns.push_back(k);
    }
    std::string out;
    for (size_t c = 0; c < columns.size(); ++c) out += (c ? "," : "") + csv_cell(columns[c]);
    out += "\n";
    for (const auto& f : flat) {
        std::vector<std::string> cells(columns.size());
        for (const auto& [k, v] : f) cells[index[k]] = csv_cell(v);
        for (size_t c = 0; c < cells.size(); ++c) out += (c ? "," : "") + cells[c];
        out += "\n";
    }
    return out;
}

}  // namespace snapkv::eval
