// The results files of `snapkv needle` / `snapkv sweep` and the Evaluate tab: JSON Lines, one row
// per (cell, configuration), each carrying the run's settings. Appending with a flush per row (a
// crash loses at most the row being written), resume (which rows exist, after checking that they
// were made with the same settings), merge of shards (no duplicates, one set of settings, rows in
// grid order, written through a temporary file + rename) and CSV export. Knows nothing of models.
#pragma once

#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/atomic_file.h"

namespace snapkv::eval {

using Row = nlohmann::json;
using RowKey = std::pair<int64_t, int64_t>;  // (cell, config)

struct ResultsFile {
    std::string path;
    std::vector<Row> rows;
    std::vector<int64_t> lines;    // 1-based line number of each row
    bool incomplete_tail = false;  // the last line had no newline (a run stopped while writing it)
    uint64_t complete_bytes = 0;   // bytes up to the end of the last complete line
};

// Every line must be a JSON object with integer "cell" and "config" and an object "settings";
// blank lines are skipped. Errors name the file and the line. An unterminated last line is an
// error unless allow_incomplete_tail (resume), where it is reported and left out.
ResultsFile read_results(const std::string& path, bool allow_incomplete_tail);

// The rows already in `path` (none when it does not exist), for resuming. Throws ParamError("out")
// when a row was made with other settings (naming the first difference). Cuts an unterminated last line
// off the file so that appending continues on a clean line.
std::set<RowKey> resume_rows(const std::string& path, const nlohmann::json& settings);

// Appends rows to a file (created with its parent folders), one flushed line per row.
class RowWriter {
public:
    explicit RowWriter(const std::string& path);
    ~RowWriter();
    RowWriter(const RowWriter&) = delete;
    RowWriter& operator=(const RowWriter&) = delete;
    void write(const Row& row);
    const std::string& path() const { return m_path; }

private:
    std::string m_path;
    std::FILE* m_file = nullptr;
};

struct MergeReport {
    int64_t rows = 0;
    int64_t expected = 0;         // cells x configurations, from the settings
    std::vector<RowKey> missing;  // grid rows in no input
};

// Joins result files into `out` (rows sorted by cell, then configuration). Refuses rows made with
// different settings, the same (cell, config) twice, and, unless allow_partial, an incomplete grid
// (ParamError("allow_partial"), so the CLI can name its flag).
MergeReport merge_results(const std::vector<std::string>& inputs, const std::string& out, bool allow_partial);

// Sort key and expected grid size of rows.
bool row_less(const Row& a, const Row& b);
int64_t expected_rows(const nlohmann::json& settings);

// "max_tokens: 32 here, 24 there" for the first key whose values differ ("" when equal).
std::string first_difference(const nlohmann::json& here, const nlohmann::json& there, const std::string& prefix = "");

// Whole files (merge_results, exports) are written by core/common's write_file_atomic, one atomic
// write for core and both apps; eval:: callers written before it was the only one still find it here.
using snapkv::write_file_atomic;
// One line per row; columns are the scalar fields in first-seen order, timing.* flattened;
// settings and per-layer arrays are left out.
std::string rows_to_csv(const std::vector<Row>& rows);
// Row as one JSONL line (invalid UTF-8 in generated text replaced, never fatal).
std::string row_line(const Row& row);

}  // namespace snapkv::eval
