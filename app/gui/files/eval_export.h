// Export of an evaluation's rows (the Evaluate tab's Export rows): by the path's suffix, .csv (one
// row per line, core/eval's columns) or .jsonl (the results file's own lines), in core/eval's row
// order, written whole or not at all. It neither reads results files (core/eval) nor draws.
#pragma once

#include <QString>

#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace studio {

// False with *error for an unknown suffix or a failed write.
bool exportEvalRows(std::vector<nlohmann::json> rows, const QString& path, QString* error);

}  // namespace studio
