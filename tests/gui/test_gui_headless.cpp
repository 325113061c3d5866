// snapkv-studio run headless as scripts run it (a separate process, offscreen, its own settings
// folder): a run never waits for a person, every failure says why on stderr in one line with a
// non-zero exit, a failed screenshot leaves the old file alone, and runs driven by command-line
// options leave the saved settings alone.
#include <catch2/catch.hpp>

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>
#include <QTemporaryDir>

#include <sys/resource.h>
#include <csignal>
#include <functional>

#include "app/gui/panels/prompt_panel.h"
#include "app/gui/view_registry.h"
#include "core/session/session.h"
#include "gui_test_util.h"

using namespace guitest;

namespace {

// Long enough for a stories260K run on a loaded 2-core machine; a hang is what it guards against.
constexpr int kTimeoutMs = 90000;

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    REQUIRE(f.open(QIODevice::WriteOnly));
    REQUIRE(f.write(bytes) == bytes.size());
}

QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// A valid session on stories260K; tests break one field at a time.
QJsonObject goodSession(const QString& document = "Lily went to the beach. She found a shell.") {
    QJsonObject model{{"path", modelPath()}, {"device", "cpu"}, {"dtype", "float32"}};
    QJsonObject prompt{{"document", document}, {"question", "What did Lily find?"}, {"chat", false}};
    QJsonObject params{{"window", 8}, {"kernel", 5}, {"budget", 24}, {"pooling", "max"}, {"policy", "snapkv"}};
    return QJsonObject{{"format", "snapkv-studio-session"},
                       {"version", 1},
                       {"model", model},
                       {"prompt", prompt},
                       {"params", params},
                       {"ran", true}};
}

QByteArray json(const QJsonObject& o) { return QJsonDocument(o).toJson(); }

// The app's own output on stderr is one line, "snapkv-studio: ..." (Qt may add warnings of its own,
// such as the offscreen plugin's).
bool oneLine(const QString& err) {
    int ours = 0;
    for (const QString& line : err.split('\n'))
        if (line.startsWith("snapkv-studio: ")) ++ours;
    return ours == 1;
}

}  // namespace

TEST_CASE("A headless run on an empty document ends with the reason and exit code 1 for every view", "[gui]") {
    QTemporaryDir dir;
    const QString empty = dir.filePath("empty.txt");
    writeFile(empty, QByteArray());
    const QString shot = dir.filePath("out.png");
    const QString config = dir.filePath("config");

    SECTION("an empty document file") {
        // Every view of the run's results, as the view registry lists them.
        for (const studio::ViewSpec& spec : studio::viewSpecs()) {
            if (!spec.drawsAnalysis) continue;
            INFO("view " << spec.name);
            const ProcessResult r = runStudio({"--model", modelPath(), "--document", empty, "--question", "Q", "--run",
                                               "--view", spec.name, "--screenshot", shot},
                                              config, kTimeoutMs);
            INFO(r.err.toStdString());
            REQUIRE_FALSE(r.hung);
            CHECK(r.code == 1);
            CHECK(r.err.contains("document"));
            CHECK(r.err.contains("empty"));
            CHECK(oneLine(r.err));
            CHECK_FALSE(QFile::exists(shot));
        }
    }
    SECTION("a document of blanks") {
        const QString blank = dir.filePath("blank.txt");
        writeFile(blank, "  \n\n\t \n");
        const ProcessResult r = runStudio(
            {"--model", modelPath(), "--document", blank, "--question", "Q", "--view", "head", "--screenshot", shot},
            config, kTimeoutMs);
        INFO(r.err.toStdString());
        REQUIRE_FALSE(r.hung);
        CHECK(r.code == 1);
        CHECK(r.err.contains("empty"));
    }
    SECTION("a session whose document is empty, saved after a run") {
        const QString session = dir.filePath("empty.snapkv.json");
        writeFile(session, json(goodSession(QString())));
        const QString view = GENERATE(as<QString>{}, "overview", "compare");
        const ProcessResult r = runStudio({"--session", session, "--view", view, "--screenshot", shot}, config,
                                          kTimeoutMs);
        INFO(r.err.toStdString());
        REQUIRE_FALSE(r.hung);
        CHECK(r.code == 1);
        CHECK(r.err.contains("empty"));
        CHECK(oneLine(r.err));
    }
}

TEST_CASE("Headless runs refuse bad files and values with a one-line reason on stderr", "[gui]") {
    QTemporaryDir dir;
    const QString shot = dir.filePath("out.png");
    const QString config = dir.filePath("config");
    const QString story = guiDataPath("short_story.txt");
    struct Case {
        const char* what;
        std::function<QStringList()> args;  // made inside the test: files are written there
        int code;
        QStringList needles;
    };
    auto session = [&](const QByteArray& bytes) {
        const QString path = dir.filePath("s.snapkv.json");
        writeFile(path, bytes);
        return QStringList{"--session", path, "--screenshot", shot};
    };
    auto broken = [&](const std::function<void(QJsonObject&)>& edit) {
        QJsonObject o = goodSession();
        edit(o);
        return session(json(o));
    };
    auto sub = [](QJsonObject& o, const char* key, const char* field, const QJsonValue& v) {
        QJsonObject inner = o[key].toObject();
        inner[field] = v;
        o[key] = inner;
    };
    auto withDoc = [&](const QString& doc, const QString& question) {
        return QStringList{"--model", modelPath(), "--document", doc, "--question", question, "--screenshot", shot};
    };
    const std::vector<Case> cases = {
        {"a missing document",
         [&] { return withDoc("/nonexistent/doc.txt", "Q"); },
         1,
         {"/nonexistent/doc.txt", "no such file"}},
        {"a folder as the document", [&] { return withDoc(dir.path(), "Q"); }, 1, {"folder"}},
        {"a binary question file",
         [&] {
             const QString bin = dir.filePath("question.bin");
             writeFile(bin, QByteArray("Wh\0at?", 6));
             return withDoc(story, bin);
         },
         1,
         {"question.bin", "binary"}},
        {"a missing session",
         [&] {
             return QStringList{"--session", "/nonexistent/s.json", "--screenshot", shot};
         },
         1,
         {"/nonexistent/s.json"}},
        {"a folder as the session",
         [&] {
             return QStringList{"--session", dir.path(), "--screenshot", shot};
         },
         1,
         {"folder"}},
        {"a session that is not JSON", [&] { return session("{not json"); }, 1, {"not valid JSON"}},
        {"an empty session", [&] { return session(""); }, 1, {"empty"}},
        {"a session holding an array", [&] { return session("[1, 2, 3]"); }, 1, {"array"}},
        {"a session of another format",
         [&] { return broken([](QJsonObject& o) { o["format"] = "other"; }); },
         1,
         {"not a SnapKV Studio session", "other"}},
        {"a session of another version",
         [&] { return broken([](QJsonObject& o) { o["version"] = 7; }); },
         1,
         {"version 7"}},
        {"a session with a bad pooling",
         [&] { return broken([&](QJsonObject& o) { sub(o, "params", "pooling", "median"); }); },
         1,
         {"params.pooling", "median", "max, avg, none"}},
        {"a session with a bad policy",
         [&] { return broken([&](QJsonObject& o) { sub(o, "params", "policy", "lru"); }); },
         1,
         {"params.policy", "lru"}},
        {"a session with a window that is not a number",
         [&] { return broken([&](QJsonObject& o) { sub(o, "params", "window", "abc"); }); },
         1,
         {"params.window", "abc", "whole number"}},
        {"a session with an even kernel",
         [&] { return broken([&](QJsonObject& o) { sub(o, "params", "kernel", 4); }); },
         1,
         {"kernel", "odd"}},
        {"a session with an unknown device",
         [&] { return broken([&](QJsonObject& o) { sub(o, "model", "device", "bogus"); }); },
         1,
         {"model.device", "bogus", "cpu, cuda, cuda:N"}},
        {"a session with an unknown dtype",
         [&] { return broken([&](QJsonObject& o) { sub(o, "model", "dtype", "int8"); }); },
         1,
         {"model.dtype", "int8", "float32, float16, bfloat16"}},
        {"a session with negative max tokens",
         [&] { return broken([](QJsonObject& o) { o["max_tokens"] = -5; }); },
         1,
         {"max_tokens", "-5"}},
        {"--max-tokens -5",
         [&] {
             return withDoc(story, "Q") << "--max-tokens"
                                        << "-5";
         },
         2,
         {"--max-tokens", "-5"}},
        {"--walkthrough 99",
         [&] {
             return withDoc(story, "Q") << "--walkthrough"
                                        << "99";
         },
         2,
         {"--walkthrough", "99", "1..8"}},
        {"--window 100000",
         [&] {
             return withDoc(story, "Q") << "--window"
                                        << "100000";
         },
         2,
         {"--window", "100000"}},
        {"--window ''",
         [&] {
             return withDoc(story, "Q") << "--window"
                                        << "";
         },
         2,
         {"--window"}},
        {"--kernel 4",
         [&] {
             return withDoc(story, "Q") << "--kernel"
                                        << "4";
         },
         2,
         {"--kernel", "odd"}},
        {"--tie-break first",
         [&] {
             return withDoc(story, "Q") << "--tie-break"
                                        << "first";
         },
         2,
         {"--tie-break", "earlier"}},
        {"--gqa both",
         [&] {
             return withDoc(story, "Q") << "--gqa"
                                        << "both";
         },
         2,
         {"--gqa", "kv-head"}},
    };
    for (const Case& c : cases) {
        SECTION(c.what) {
            const ProcessResult r = runStudio(c.args(), config, kTimeoutMs);
            INFO("stderr: " << r.err.toStdString());
            REQUIRE_FALSE(r.hung);
            CHECK(r.code == c.code);
            CHECK(oneLine(r.err));
            for (const QString& n : c.needles) {
                INFO("expected in stderr: " << n.toStdString());
                CHECK(r.err.contains(n));
            }
            CHECK_FALSE(QFile::exists(shot));
        }
    }
}

TEST_CASE("A failed screenshot says why and exits 1 leaving the old file untouched", "[gui]") {
    QTemporaryDir dir;
    const QString shot = dir.filePath("shot.png");
    const QByteArray old = "an older screenshot that must survive";
    writeFile(shot, old);
    // The file-size limit makes every write past 4 KiB fail (EFBIG), as a full disk would.
    const ProcessResult r = runStudio(
        {"--model", modelPath(), "--document", guiDataPath("short_story.txt"), "--question", "Who was in the story?",
         "--budget", "64", "--view", "overview", "--screenshot", shot},
        dir.filePath("config"), kTimeoutMs, [] {
            std::signal(SIGXFSZ, SIG_IGN);
            const rlimit lim{4096, 4096};
            setrlimit(RLIMIT_FSIZE, &lim);
        });
    INFO(r.err.toStdString());
    REQUIRE_FALSE(r.hung);
    CHECK(r.code == 1);
    CHECK(r.err.contains("screenshot"));
    CHECK(r.err.contains(shot));
    CHECK(readFile(shot) == old);
    CHECK(QDir(dir.path()).entryList(QDir::Files).size() == 1);  // no temporary file left behind
}

TEST_CASE("Runs driven by command-line options leave the saved settings alone", "[gui]") {
    QTemporaryDir dir;
    const QString config = dir.filePath("config");
    const QString file = config + "/SnapKV/SnapKV Studio.conf";
    {
        QSettings s(file, QSettings::IniFormat);
        s.setValue(
            "params",
            QJsonDocument(QJsonObject{{"window", 16}, {"budget", 333}, {"kernel", 5}}).toJson(QJsonDocument::Compact));
        s.setValue("compare/max_tokens", 48);
    }
    const QByteArray before = readFile(file);
    REQUIRE_FALSE(before.isEmpty());
    const QStringList base = {"--model",      modelPath(),
                              "--document",   guiDataPath("short_story.txt"),
                              "--question",   "Who was in the story?",
                              "--screenshot", dir.filePath("out.png")};
    SECTION("a successful headless run with overrides") {
        const ProcessResult r = runStudio(base + QStringList{"--budget", "77", "--window", "8", "--max-tokens", "5"},
                                          config, kTimeoutMs);
        INFO(r.err.toStdString());
        REQUIRE(r.code == 0);
    }
    SECTION("a failed headless run") {
        // A kernel longer than the prompt's prefix: refused when selecting, after the prefill.
        const ProcessResult r = runStudio(base + QStringList{"--window", "100", "--budget", "5000", "--kernel", "1001"},
                                          config, kTimeoutMs);
        INFO(r.err.toStdString());
        REQUIRE_FALSE(r.hung);
        REQUIRE(r.code == 1);
        CHECK(r.err.contains("kernel"));
    }
    CHECK(readFile(file) == before);
}

TEST_CASE("A session saved for a device this machine lacks says which device it uses instead", "[gui]") {
    // Such a session used to open on the CPU without a word, so its timings were misread.
    if (snapkv::Session::cuda_available()) {
        WARN("CUDA is available here, so a cuda session loads as saved; this case needs a machine without it");
        return;
    }
    QTemporaryDir dir;
    const QString shot = dir.filePath("out.png");
    QJsonObject o = goodSession();
    QJsonObject model = o["model"].toObject();
    model["device"] = "cuda";
    model["dtype"] = "float16";
    o["model"] = model;
    const QString path = dir.filePath("cuda.snapkv.json");
    writeFile(path, json(o));
    SECTION("headless: a note on stderr, then the run on the CPU") {
        const ProcessResult r = runStudio({"--session", path, "--view", "overview", "--screenshot", shot},
                                          dir.filePath("config"), kTimeoutMs);
        INFO("stderr: " << r.err.toStdString());
        REQUIRE_FALSE(r.hung);
        CHECK(r.code == 0);
        CHECK(
            r.err.contains("snapkv-studio: note: The session was saved for cuda (float16), which is not "
                           "available here"));
        CHECK(r.err.contains("using cpu (float32)"));
        CHECK(QFile::exists(shot));
    }
    SECTION("in the window: the status bar and lastNote say it") {
        auto w = makeWindow();
        QStringList notes;
        QObject::connect(w.get(), &studio::MainWindow::noteShown, [&](const QString& n) { notes << n; });
        REQUIRE(w->loadSession(path));
        REQUIRE(notes.size() == 1);
        CHECK(w->lastNote().contains("saved for cuda (float16)"));
        CHECK(w->promptPanel()->loadOptions().device == "cpu");
        CHECK(w->promptPanel()->loadOptions().dtype == "float32");
        waitRun(*w);
    }
}

TEST_CASE("A screenshot that names an input is refused before the run", "[gui]") {
    // Outputs never replace inputs (the same path, or a symlink to it): the CLI once overwrote a
    // user's document with its results this way.
    QTemporaryDir dir;
    const QString doc = dir.filePath("doc.txt");
    const QByteArray text = "Lily went to the beach. She found a shell.\n";
    writeFile(doc, text);
    REQUIRE(QFile::link(doc, dir.filePath("link.png")));
    for (const QString& shot : {doc, dir.filePath("link.png")}) {
        const ProcessResult r = runStudio(
            {"--model", modelPath(), "--document", doc, "--question", "Q", "--screenshot", shot},
            dir.filePath("config"), kTimeoutMs);
        INFO("stderr: " << r.err.toStdString());
        REQUIRE_FALSE(r.hung);
        CHECK(r.code == 2);
        CHECK(oneLine(r.err));
        CHECK(r.err.contains("is the document (--document)"));
        CHECK(readFile(doc) == text);
    }
}
