// Sessions and exports: a saved session re-loads into the same selections; plots and data export
// to every format.
#include <catch2/catch.hpp>

#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include "app/gui/analysis_state.h"
#include "app/gui/compare_view.h"
#include "app/gui/session_file.h"
#include "gui_test_util.h"

using namespace guitest;
using F = studio::ParameterPanel::Field;

TEST_CASE("A saved session re-loads into the same parameters and selections", "[gui]") {
    QTemporaryDir dir;
    const QString path = dir.filePath("demo.snapkv.json");
    std::vector<std::vector<std::vector<int64_t>>> keptA;
    studio::ParamState paramsA;
    {
        auto a = makeWindow(80);
        REQUIRE(runAndWait(*a).what == "finished");
        REQUIRE(editAndWait(*a, F::FKernel, 5).ok);
        REQUIRE(editAndWait(*a, F::FPooling, 1).ok);
        studio::DisplaySettings d = a->state()->display();
        d.colorMap = studio::ColorMapKind::Cividis;
        d.hideSinks = 2;
        a->state()->setDisplay(d);
        a->state()->setFocus(2, 3);
        a->showView("document");
        REQUIRE(a->saveSession(path));
        paramsA = a->state()->params();
        for (const auto& l : a->state()->selection()->layers) {
            keptA.emplace_back();
            for (const auto& h : l.heads) keptA.back().push_back(h.kept);
        }
    }
    QString error;
    const auto file = studio::SessionFile::read(path, &error);
    REQUIRE(file.has_value());
    CHECK(file->params == paramsA);
    CHECK(file->display.colorMap == studio::ColorMapKind::Cividis);
    CHECK(file->ran);

    auto b = std::make_unique<studio::MainWindow>();
    b->setInteractive(false);
    b->show();
    REQUIRE(b->loadSession(path));   // loading a session that had results runs it again
    REQUIRE(waitRun(*b).what == "finished");
    auto* s = b->state();
    CHECK(s->params() == paramsA);
    CHECK(s->display().hideSinks == 2);
    CHECK(s->layer() == 2);
    CHECK(s->head() == 3);
    CHECK(b->currentViewName() == "document");
    REQUIRE(s->selection()->layers.size() == keptA.size());
    for (size_t l = 0; l < keptA.size(); ++l)
        for (size_t h = 0; h < keptA[l].size(); ++h) CHECK(s->selection()->layers[l].heads[h].kept == keptA[l][h]);
}

TEST_CASE("A bad session file is reported in plain words", "[gui]") {
    QTemporaryDir dir;
    const QString path = dir.filePath("bad.json");
    QFile f(path);
    REQUIRE(f.open(QIODevice::WriteOnly));
    f.write("{\"format\": \"something-else\"}");
    f.close();
    auto w = makeWindow();
    CHECK_FALSE(w->loadSession(path));
    CHECK(w->lastError().contains("not a SnapKV Studio session"));
}

TEST_CASE("Plots export as PNG, SVG and PDF, data as CSV and JSON", "[gui]") {
    QTemporaryDir dir;
    auto w = makeWindow(64);
    REQUIRE(runAndWait(*w).what == "finished");
    for (const char* view : {"overview", "head", "document"}) {
        REQUIRE(w->showView(view));
        settle();
        for (const char* ext : {"png", "svg", "pdf"}) {
            const QString p = dir.filePath(QString("%1.%2").arg(view, ext));
            INFO(p.toStdString());
            REQUIRE(w->exportCurrentPlot(p));
            CHECK(QFileInfo(p).size() > 200);
        }
        CHECK_FALSE(QImage(dir.filePath(QString("%1.png").arg(view))).isNull());
    }
    const QString csv = dir.filePath("head.csv");
    REQUIRE(w->exportCurrentData(csv));
    QFile c(csv);
    REQUIRE(c.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(c.readAll()).split('\n', Qt::SkipEmptyParts);
    CHECK(lines.first() == "position,token_id,piece,vote,pooled,rank,status");
    // One record per prompt token (pieces with line breaks are quoted, so count records by the last).
    CHECK(lines.last().startsWith(QString::number(w->state()->prefill().n_tokens - 1) + ","));
    CHECK(lines.filter(",kept").size() == 32);
    CHECK(lines.filter(",window").size() == 32);

    REQUIRE(generateAndWait(*w, 4).ok);
    const QString json = dir.filePath("all.json");
    REQUIRE(w->exportCurrentData(json));
    QFile j(json);
    REQUIRE(j.open(QIODevice::ReadOnly));
    const QJsonObject o = QJsonDocument::fromJson(j.readAll()).object();
    CHECK(o["selection"].toObject()["layers"].toArray().size() == w->state()->model().config.n_layer);
    CHECK(o["focused_head"].toObject()["kept"].toArray().size() == 32);
    CHECK(o["comparison"].toObject()["full"].toObject()["ids"].toArray().size() == 4);
    CHECK(o["comparison"].toObject()["steps"].toArray().size() == 4);
    CHECK_FALSE(w->exportCurrentData(dir.filePath("x.xlsx")));
    CHECK(w->lastError().contains("use .csv or .json"));
}
