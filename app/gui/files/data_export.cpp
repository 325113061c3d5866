// Plot and data export: everything is rendered into memory first, then written by saveBytes
// (temporary file + rename), so a failed export never leaves a cut file in place of a good one.
// Parameters and the selection are core's JSON (params_json.h), the same objects the CLI writes.
#include "app/gui/files/data_export.h"

#include <QBuffer>
#include <QFileInfo>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <QWidget>

#include <qcustomplot.h>

#include <cmath>

#include "app/gui/files/atomic_write.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/state/head_stats.h"
#include "app/gui/state/json_fields.h"
#include "core/session/compare_json.h"
#include "core/snapkv/params_json.h"

namespace studio {

namespace {

QString csvField(QString s) {
    if (s.contains(',') || s.contains('"') || s.contains('\n') || s.contains('\r')) {
        s.replace("\"", "\"\"");
        s = "\"" + s + "\"";
    }
    return s;
}

QJsonArray floats(const std::vector<float>& v) {
    QJsonArray a;
    for (float x : v) a.append(std::isfinite(x) ? QJsonValue(double(x)) : QJsonValue());
    return a;
}

template <typename T>
QJsonArray ints(const std::vector<T>& v) {
    QJsonArray a;
    for (T x : v) a.append(static_cast<qint64>(x));
    return a;
}

}  // namespace

namespace {

// Renders into memory with `draw(painter, device)`; the caller saves the bytes atomically.
template <typename Draw>
bool renderPdf(QSizeF pagePoints, QByteArray* out, Draw&& draw) {
    QBuffer buffer(out);
    if (!buffer.open(QIODevice::WriteOnly)) return false;
    QPdfWriter pdf(&buffer);
    pdf.setCreator("SnapKV Studio");
    pdf.setPageLayout(QPageLayout(QPageSize(pagePoints, QPageSize::Point, QString(), QPageSize::ExactMatch),
                                  QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
    return draw(pdf);
}

template <typename Draw>
bool renderSvg(QSize size, QByteArray* out, Draw&& draw) {
    QBuffer buffer(out);
    if (!buffer.open(QIODevice::WriteOnly)) return false;
    QSvgGenerator gen;
    gen.setOutputDevice(&buffer);
    gen.setSize(size);
    gen.setViewBox(QRect(QPoint(0, 0), size));
    gen.setTitle("SnapKV Studio plot");
    return draw(gen);
}

}  // namespace

bool exportPlot(QCustomPlot* plot, const QString& path, QString* error, int width, int height) {
    if (!plot) {
        *error = "this view has no plot to export";
        return false;
    }
    const QString suffix = QFileInfo(path).suffix().toLower();
    const int w = width > 0 ? width : plot->width();
    const int h = height > 0 ? height : plot->height();
    QByteArray bytes;
    bool ok = false;
    if (suffix == "png") {
        QBuffer buffer(&bytes);
        ok = buffer.open(QIODevice::WriteOnly) && plot->toPixmap(w, h, 2.0).save(&buffer, "PNG");
    } else if (suffix == "pdf") {
        ok = renderPdf(QSizeF(w, h), &bytes, [&](QPdfWriter& pdf) {
            QCPPainter painter;
            if (!painter.begin(&pdf)) return false;
            painter.setMode(QCPPainter::pmVectorized);
            painter.setMode(QCPPainter::pmNoCaching);
            painter.setMode(QCPPainter::pmNonCosmetic);  // line widths scale with the page
            painter.setWindow(0, 0, w, h);               // plot pixels onto the whole page
            plot->toPainter(&painter, w, h);
            return painter.end();
        });
    } else if (suffix == "svg") {
        ok = renderSvg(QSize(w, h), &bytes, [&](QSvgGenerator& gen) {
            QCPPainter painter;
            if (!painter.begin(&gen)) return false;
            plot->toPainter(&painter, w, h);
            return painter.end();
        });
    } else {
        *error = QString("unknown plot format \".%1\": use .png, .svg or .pdf").arg(suffix);
        return false;
    }
    if (!ok) {
        *error = QString("cannot render the plot for %1").arg(path);
        return false;
    }
    return saveBytes(path, bytes, error);
}

bool exportWidget(QWidget* widget, const QString& path, QString* error) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    QByteArray bytes;
    bool ok = false;
    if (suffix == "png") {
        QBuffer buffer(&bytes);
        ok = buffer.open(QIODevice::WriteOnly) && widget->grab().save(&buffer, "PNG");
    } else if (suffix == "svg") {
        ok = renderSvg(widget->size(), &bytes, [&](QSvgGenerator& gen) {
            QPainter p;
            if (!p.begin(&gen)) return false;
            widget->render(&p);
            return p.end();
        });
    } else if (suffix == "pdf") {
        ok = renderPdf(QSizeF(widget->size()), &bytes, [&](QPdfWriter& pdf) {
            QPainter p;
            if (!p.begin(&pdf)) return false;
            const double s = double(pdf.width()) / std::max(1, widget->width());
            p.scale(s, s);
            widget->render(&p);
            return p.end();
        });
    } else {
        *error = QString("unknown format \".%1\": use .png, .svg or .pdf").arg(suffix);
        return false;
    }
    if (!ok) {
        *error = QString("cannot render the view for %1").arg(path);
        return false;
    }
    return saveBytes(path, bytes, error);
}

QString focusedHeadCsv(const AnalysisState& state) {
    QString out = "position,token_id,piece,vote,pooled,rank,status\n";
    if (!state.hasPrefill()) return out;
    const auto& pre = state.prefill();
    const auto* sel = state.selection();
    const auto* hs = state.focusedHead();
    const auto* ls = state.focusedLayer();
    std::vector<int64_t> rank;
    if (hs && !hs->pooled.empty()) rank = ranks(hs->pooled);
    std::vector<char> kept(pre.pieces.size(), 0);
    if (hs)
        for (int64_t p : hs->kept)
            if (p >= 0 && p < static_cast<int64_t>(kept.size())) kept[p] = 1;
    const int64_t L = sel ? sel->n_tokens : 0;
    const int64_t P = sel ? std::max<int64_t>(0, L - sel->window) : 0;
    for (size_t i = 0; i < pre.pieces.size(); ++i) {
        const int64_t p = static_cast<int64_t>(i);
        QString status = "evicted";
        if (!sel) status = "";
        else if (p >= L) status = "question";
        else if (p >= P) status = "window";
        else if (kept[i] || (ls && !ls->compressed)) status = "kept";
        QStringList row;
        row << QString::number(p) << QString::number(i < pre.ids.size() ? pre.ids[i] : -1)
            << csvField(QString::fromStdString(pre.pieces[i]))
            << (hs && i < hs->votes.size() ? QString::number(hs->votes[i], 'g', 6) : QString())
            << (hs && i < hs->pooled.size() ? QString::number(hs->pooled[i], 'g', 6) : QString())
            << (i < rank.size() ? QString::number(rank[i] + 1) : QString()) << status;
        out += row.join(',') + "\n";
    }
    return out;
}

QJsonObject analysisJson(const AnalysisState& state) {
    QJsonObject o;
    o["generator"] = "SnapKV Studio";
    if (state.hasModel()) {
        const auto& m = state.model();
        QJsonObject model;
        model["path"] = QString::fromStdString(m.path);
        model["name"] = QString::fromStdString(m.config.name);
        model["n_layer"] = static_cast<qint64>(m.config.n_layer);
        model["n_head"] = static_cast<qint64>(m.config.n_head);
        model["n_head_kv"] = static_cast<qint64>(m.config.n_head_kv);
        o["model"] = model;
    }
    o["params"] = state.params().toJson();
    o["display"] = state.display().toJson();
    if (state.hasPrefill()) {
        const auto& p = state.prefill();
        QJsonObject pre;
        pre["n_tokens"] = static_cast<qint64>(p.n_tokens);
        pre["n_context"] = static_cast<qint64>(p.n_context);
        pre["prefill_ms"] = p.prefill_ms;
        pre["kv_bytes_full"] = static_cast<qint64>(p.kv_bytes_full);
        pre["ids"] = ints(p.ids);
        o["prefill"] = pre;
    }
    if (const auto* sel = state.selection()) {
        // Core's selection JSON, the object `snapkv analyze` writes.
        snapkv::SelectionBytes bytes;
        if (auto r = state.retune()) bytes = {r->kvBytesFull, r->kvBytesKept, r->cacheNote.toStdString()};
        o["selection"] = toQtJson(snapkv::selection_to_json(*sel, bytes));
    }
    if (const auto* hs = state.focusedHead()) {
        QJsonObject f;
        f["layer"] = state.layer();
        f["head"] = state.head();
        f["votes"] = floats(hs->votes);
        f["pooled"] = floats(hs->pooled);
        f["kept"] = ints(hs->kept);
        o["focused_head"] = f;
    }
    if (const auto* c = state.comparison()) {
        // Core's comparison JSON, the object `snapkv compare --json` writes.
        const std::string cacheNote = state.retune() ? state.retune()->cacheNote.toStdString() : std::string();
        o["comparison"] = toQtJson(snapkv::compare_to_json(*c, state.params().hitThreshold, cacheNote));
    }
    return o;
}

bool exportData(const AnalysisState& state, const QString& path, QString* error) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == "csv") return saveBytes(path, focusedHeadCsv(state).toUtf8(), error);
    if (suffix == "json")
        return saveBytes(path, QJsonDocument(analysisJson(state)).toJson(QJsonDocument::Indented), error);
    *error = QString("unknown data format \".%1\": use .csv or .json").arg(suffix);
    return false;
}

}  // namespace studio
