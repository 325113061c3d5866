// What the installed app needs beyond the build folder: a file handed over by the desktop entry
// (%f) opens as the model or the session, the man page is made from the options --help prints,
// and Help > Get a Model names where the default model goes and finds the fetch script.
#include <catch2/catch.hpp>

#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>

#include "app/gui/app_options.h"
#include "app/gui/panels/model_fetch.h"
#include "app/gui/state/app_paths.h"

using namespace studio;

TEST_CASE("A file given on the command line opens as the model or the session", "[gui]") {
    SECTION("a GGUF file is the model") {
        const AppOptions o = parseOptions({"snapkv-studio", "/m/x.gguf"});
        CHECK(o.error.isEmpty());
        CHECK(o.model == "/m/x.gguf");
        CHECK(o.session.isEmpty());
    }
    SECTION("a .snapkv.json file is the session") {
        const AppOptions o = parseOptions({"snapkv-studio", "/s/run.snapkv.json"});
        CHECK(o.error.isEmpty());
        CHECK(o.session == "/s/run.snapkv.json");
        CHECK(o.model.isEmpty());
    }
    SECTION("a folder is a model (Hugging Face)") {
        const AppOptions o = parseOptions({"snapkv-studio", "--document", "d.txt", "/m/hf-folder"});
        CHECK(o.error.isEmpty());
        CHECK(o.model == "/m/hf-folder");
        CHECK(o.document == "d.txt");
    }
    SECTION("two files are refused, naming the second") {
        const AppOptions o = parseOptions({"snapkv-studio", "a.gguf", "b.gguf"});
        CHECK(o.error.contains("\"b.gguf\""));
    }
    SECTION("a file and --model that both name the model are refused") {
        const AppOptions o = parseOptions({"snapkv-studio", "--model", "a.gguf", "b.gguf"});
        CHECK(o.error.contains("--model"));
    }
    SECTION("a session file with --document is refused") {
        const AppOptions o = parseOptions({"snapkv-studio", "--document", "d.txt", "s.snapkv.json"});
        CHECK(o.error.contains("session"));
    }
    SECTION("--weights takes native, native-q8 or f32 and refuses others, naming them") {
        CHECK(parseOptions({"snapkv-studio", "--weights", "native-q8"}).weights == "native-q8");
        CHECK(parseOptions({"snapkv-studio", "--weights", "native-q8"}).overridesSettings());
        const AppOptions bad = parseOptions({"snapkv-studio", "--weights", "q4"});
        CHECK(bad.error.contains("--weights"));
        CHECK(bad.error.contains("native-q8"));
    }
    SECTION("--get-model is read") {
        CHECK(parseOptions({"snapkv-studio", "--get-model"}).getModel);
        CHECK_FALSE(parseOptions({"snapkv-studio"}).getModel);
    }
}

TEST_CASE("The man page lists every option --help prints", "[gui]") {
    const QString page = manPage("9.8.7");
    CHECK(page.startsWith(".TH SNAPKV\\-STUDIO 1"));
    CHECK(page.contains("snapkv\\-studio 9.8.7"));
    for (const QCommandLineOption& o : applicationOptions()) {
        INFO(o.names().first().toStdString());
        QString name = o.names().first();
        name.replace("-", "\\-");
        CHECK(page.contains("\\fB\\-\\-" + name + "\\fR"));
    }
    // No line may start with a dot or quote that roff would take for a request, except ours.
    for (const QString& line : page.split('\n'))
        if (line.startsWith('.')) CHECK(QRegularExpression("^\\.(TH|SH|TP|PP|B|br) ?").match(line).hasMatch());
}

TEST_CASE("Get a Model names the destination and can run the fetch script", "[gui]") {
    // In the source tree the script is datasets/fetch_model.sh and the model goes to <tree>/models.
    const QString script = fetchScriptPath();
    REQUIRE(script.endsWith("datasets/fetch_model.sh"));
    CHECK(fetchDestination(script).endsWith("/models"));
    CHECK(QFileInfo(fetchDestination(script)).dir().exists("CMakeLists.txt"));
    // Anywhere else (an installed copy) it goes to the user's data folder.
    CHECK(fetchDestination("/usr/share/snapkv-studio/datasets/fetch_model.sh") == userModelsDir());
    CHECK(userModelsDir().endsWith("snapkv-studio/models"));
    GetModelDialog dialog;
    QString text;
    for (auto* l : dialog.findChildren<QLabel*>()) text += l->text();
    CHECK(text.contains("SmolLM2-135M-Instruct"));
    CHECK(text.contains(fetchDestination(script).toHtmlEscaped()));
    bool downloadEnabled = false;
    for (auto* b : dialog.findChildren<QPushButton*>())
        if (b->text() == "&Download") downloadEnabled = b->isEnabled();
    CHECK(downloadEnabled);
}
