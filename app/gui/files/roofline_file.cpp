// See roofline_file.h.
#include "app/gui/files/roofline_file.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace studio {

QString rooflineSummaryHtml(const QString& path) {
    const QString hint =
        "Run <tt>snapkv bench --roofline --model M</tt> to measure how close each phase comes to this "
        "machine's limits; the last figures show here.";
    if (path.isEmpty()) return hint;
    QFile f(path);
    if (!f.exists()) return hint;
    if (!f.open(QIODevice::ReadOnly))
        return QString("The last roofline figures (%1) cannot be read: %2").arg(path, f.errorString());
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
    if (!doc.isObject())
        return QString("The last roofline figures (%1) are not valid JSON: %2").arg(path, err.errorString());
    const QJsonObject o = doc.object();
    QString html = QString(
                       "<b>Last roofline</b> (%1, %2, CPU path %3, %4 threads): FMA peak %5 GFLOP/s (%6), read "
                       "bandwidth %7 GB/s.")
                       .arg(o["measured_at"].toString(), o["model"].toString().section('/', -1),
                            o["kernel_path"].toString())
                       .arg(o["threads"].toInt())
                       .arg(o["fma_peak_gflops"].toDouble(), 0, 'f', 1)
                       .arg(o["fma_path"].toString())
                       .arg(o["read_bandwidth_gbs"].toDouble(), 0, 'f', 1);
    // Figures written before the weights were recorded were taken with native ones.
    if (o["weights"].toString() == "native-q8") html += " Weights native-q8: decode's products took 8-bit inputs.";
    html += "<table cellspacing=4>";
    for (const QJsonValue& v : o["rows"].toArray()) {
        const QJsonObject r = v.toObject();
        html += QString(
                    "<tr><td>%1</td><td align=right>%2 tokens</td><td align=right>%3 %4</td><td "
                    "align=right><b>%5%</b></td></tr>")
                    .arg(r["phase"].toString())
                    .arg(r["tokens"].toInt())
                    .arg(r["reached"].toDouble(), 0, 'f', 1)
                    .arg(r["unit"].toString())
                    .arg(100.0 * r["share"].toDouble(), 0, 'f', 0);
    }
    return html + "</table>";
}

}  // namespace studio
