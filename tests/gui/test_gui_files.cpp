// Sessions and exports: a saved session re-loads into the same selections; plots and data export
// to every format; a failed write keeps the old file; session files are read strictly.
#include <catch2/catch.hpp>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <sys/resource.h>
#include <csignal>
#include <functional>

#include "app/gui/files/roofline_file.h"
#include "app/gui/files/session_file.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/view_registry.h"
#include "app/gui/views/compare_view.h"
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
    const auto file = studio::SessionFile::read(path, studio::viewNames(), &error);
    REQUIRE(file.has_value());
    CHECK(file->params == paramsA);
    CHECK(file->display.colorMap == studio::ColorMapKind::Cividis);
    CHECK(file->ran);

    auto b = std::make_unique<studio::MainWindow>();
    b->setInteractive(false);
    b->show();
    REQUIRE(b->loadSession(path));  // loading a session that had results runs it again
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

namespace {

QByteArray fileBytes(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// While alive, writes past `bytes` in any file fail with EFBIG, as on a full disk.
class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes) {
        getrlimit(RLIMIT_FSIZE, &m_old);
        m_oldHandler = std::signal(SIGXFSZ, SIG_IGN);
        const rlimit lim{bytes, m_old.rlim_max};
        setrlimit(RLIMIT_FSIZE, &lim);
    }
    ~FileSizeLimit() {
        setrlimit(RLIMIT_FSIZE, &m_old);
        std::signal(SIGXFSZ, m_oldHandler);
    }

private:
    rlimit m_old{};
    void (*m_oldHandler)(int) = nullptr;
};

}  // namespace

TEST_CASE("A failed export or session save says why and leaves the previous file untouched", "[gui]") {
    QTemporaryDir dir;
    auto w = makeWindow(64);
    REQUIRE(runAndWait(*w).what == "finished");
    REQUIRE(w->showView("overview"));
    settle();
    struct Target {
        QString path;
        std::function<bool(const QString&)> write;
    };
    const std::vector<Target> targets = {
        {dir.filePath("plot.png"), [&](const QString& p) { return w->exportCurrentPlot(p); }},
        {dir.filePath("plot.svg"), [&](const QString& p) { return w->exportCurrentPlot(p); }},
        {dir.filePath("plot.pdf"), [&](const QString& p) { return w->exportCurrentPlot(p); }},
        {dir.filePath("data.json"), [&](const QString& p) { return w->exportCurrentData(p); }},
        {dir.filePath("head.csv"), [&](const QString& p) { return w->exportCurrentData(p); }},
        {dir.filePath("s.snapkv.json"), [&](const QString& p) { return w->saveSession(p); }},
    };
    // Good files first, each well above the limit below.
    std::vector<QByteArray> good;
    for (const Target& t : targets) {
        REQUIRE(t.write(t.path));
        good.push_back(fileBytes(t.path));
        REQUIRE(good.back().size() > 2048);
    }
    const int filesBefore = QDir(dir.path()).entryList(QDir::Files).size();
    {
        const FileSizeLimit full(1024);
        for (size_t i = 0; i < targets.size(); ++i) {
            INFO(targets[i].path.toStdString());
            CHECK_FALSE(targets[i].write(targets[i].path));
            CHECK(w->lastError().contains(targets[i].path));
            CHECK(fileBytes(targets[i].path) == good[i]);
        }
    }
    CHECK(QDir(dir.path()).entryList(QDir::Files).size() == filesBefore);  // no temporary files left
    // A folder that does not exist: the reason names the path.
    CHECK_FALSE(w->exportCurrentPlot(dir.filePath("missing/plot.png")));
    CHECK(w->lastError().contains("missing/plot.png"));
}

TEST_CASE("Session files are read strictly and wrong types or names or ranges are refused by name", "[gui]") {
    QTemporaryDir dir;
    const QString path = dir.filePath("s.snapkv.json");
    QJsonObject o{{"format", "snapkv-studio-session"},
                  {"version", 1},
                  {"model", QJsonObject{{"path", modelPath()}, {"device", "cpu"}, {"dtype", "float32"}}},
                  {"prompt", QJsonObject{{"document", "Some text."}, {"question", "Q?"}}},
                  {"params", QJsonObject{{"window", 8}, {"tie_break", "earlier"}, {"gqa", "query-head"}}}};
    auto readWith = [&](const QJsonObject& doc, QString* error) {
        QFile f(path);
        REQUIRE(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(QJsonDocument(doc).toJson());
        f.close();
        return studio::SessionFile::read(path, studio::viewNames(), error);
    };
    QString error;
    const auto ok = readWith(o, &error);
    REQUIRE(ok.has_value());
    CHECK(ok->params.sel.window == 8);
    CHECK(ok->params.sel.tie_break == snapkv::TieBreak::Earlier);
    CHECK(ok->params.sel.gqa == snapkv::GqaMode::QueryHead);
    auto refused = [&](const char* section, const char* key, const QJsonValue& v) {
        QJsonObject bad = o;
        QJsonObject inner = bad[section].toObject();
        inner[key] = v;
        bad[section] = inner;
        QString e;
        CHECK_FALSE(readWith(bad, &e).has_value());
        return e;
    };
    CHECK(refused("params", "window", "abc").contains("params.window: \"abc\" is not a whole number"));
    CHECK(refused("params", "window", 0).contains("window: 0 is out of range"));
    CHECK(refused("params", "window", 1000).contains("window: 1000 is out of range; allowed 1..128"));
    CHECK(refused("params", "budget", 2.5).contains("params.budget"));
    CHECK(refused("params", "tie_break", "first").contains("params.tie_break"));
    CHECK(refused("params", "use_ratio", "yes").contains("params.use_ratio: \"yes\" is not true or false"));
    CHECK(refused("params", "hit_threshold", 0).contains("hit_threshold: 0 is out of range"));
    CHECK(refused("model", "device", "bogus").contains("model.device: \"bogus\""));
    CHECK(refused("model", "dtype", "int8").contains("model.dtype: \"int8\" is not allowed; allowed: float32"));
    CHECK(refused("prompt", "document", 42).contains("prompt.document: 42 is not a string"));
    QJsonObject badView = o;
    badView["view"] = "everything";
    CHECK_FALSE(readWith(badView, &error).has_value());
    CHECK(error.contains("view: \"everything\" is not allowed"));
}

TEST_CASE("A session is never saved over the document it holds", "[gui]") {
    // Outputs never replace inputs (here through a symlink to the document, too): the user's text
    // would be lost.
    QTemporaryDir dir;
    const QString doc = dir.filePath("doc.txt");
    const QByteArray text = "Lily went to the beach. She found a shell.\n";
    {
        QFile f(doc);
        REQUIRE(f.open(QIODevice::WriteOnly));
        f.write(text);
    }
    REQUIRE(QFile::link(doc, dir.filePath("link.snapkv.json")));
    auto w = makeWindow();
    REQUIRE(w->openDocument(doc));
    for (const QString& target : {doc, dir.filePath("link.snapkv.json")}) {
        INFO(target.toStdString());
        CHECK_FALSE(w->saveSession(target));
        CHECK(w->lastError().contains("is the document"));
    }
    QFile f(doc);
    REQUIRE(f.open(QIODevice::ReadOnly));
    CHECK(f.readAll() == text);
}

TEST_CASE("A session's format and version are quoted at most 100 characters", "[gui]") {
    // Messages quote at most ~100 bytes of a value from a file: a corrupt one can be megabytes.
    QString error;
    CHECK_FALSE(studio::SessionFile::fromJson(QJsonObject{{"format", QString(5000, 'f')}}, QString(),
                                              studio::viewNames(), &error));
    CHECK(error.contains("... (5000 characters)"));
    CHECK(error.size() < 300);
}

TEST_CASE("The About box shows the last roofline figures, or how to get them", "[gui]") {
    QTemporaryDir dir;
    const QString path = dir.filePath("roofline.json");
    CHECK(studio::rooflineSummaryHtml(path).contains("snapkv bench --roofline"));  // not measured yet
    QFile f(path);
    REQUIRE(f.open(QIODevice::WriteOnly));
    f.write(R"({"measured_at": "2026-12-04 16:40", "model": "/m/SmolLM2.gguf", "kernel_path": "avx2",
        "threads": 2, "fma_peak_gflops": 177.0, "fma_path": "avx2", "read_bandwidth_gbs": 18.2,
        "rows": [{"phase": "prefill attention", "tokens": 512, "reached": 75.0, "unit": "GF/s", "share": 0.42},
                 {"phase": "decode 32 after 512", "tokens": 32, "reached": 7.1, "unit": "GB/s", "share": 0.39}]})");
    f.close();
    const QString html = studio::rooflineSummaryHtml(path);
    CHECK(html.contains("SmolLM2.gguf"));
    CHECK(html.contains("FMA peak 177.0 GFLOP/s"));
    CHECK(html.contains("prefill attention"));
    CHECK(html.contains("<b>42%</b>"));
    CHECK(html.contains("<b>39%</b>"));
    CHECK_FALSE(html.contains("8-bit inputs"));
    REQUIRE(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(R"({"measured_at": "2026-12-05 09:50", "model": "/m/1b.gguf", "kernel_path": "avx2", "threads": 2,
        "weights": "native-q8", "rows": []})");
    f.close();
    CHECK(studio::rooflineSummaryHtml(path).contains("Weights native-q8: decode's products took 8-bit inputs."));
    REQUIRE(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write("{not json");
    f.close();
    CHECK(studio::rooflineSummaryHtml(path).contains("not valid JSON"));
}
