// See eval_export.h.
#include "app/gui/files/eval_export.h"

#include <QFileInfo>

#include <algorithm>

#include "core/common/errors.h"
#include "core/eval/results_file.h"

namespace studio {

namespace se = snapkv::eval;

bool exportEvalRows(std::vector<nlohmann::json> rows, const QString& path, QString* error) {
    std::stable_sort(rows.begin(), rows.end(), se::row_less);
    const QString suffix = QFileInfo(path).suffix().toLower();
    try {
        if (suffix == "csv") {
            se::write_file_atomic(path.toStdString(), se::rows_to_csv(rows));
        } else if (suffix == "jsonl") {
            std::string content;
            for (const auto& r : rows) content += se::row_line(r);
            se::write_file_atomic(path.toStdString(), content);
        } else {
            if (error) *error = QString("unknown format \".%1\": use .csv or .jsonl").arg(suffix);
            return false;
        }
    } catch (const snapkv::Error& e) {
        if (error) *error = QString::fromUtf8(e.what());
        return false;
    }
    return true;
}

}  // namespace studio
