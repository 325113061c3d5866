// Command-line options of snapkv-studio and where to find the default model and the bundled
// sample document when none is given. No widgets.
#pragma once

#include <QCommandLineOption>
#include <QList>
#include <QString>
#include <QStringList>

#include <optional>

namespace studio {

struct AppOptions {
    QString model;
    QString document;  // path
    QString question;  // path of a text file, or the question itself
    QString session;
    bool run = false;
    QString screenshot;       // save a 1600x1000 screenshot of the window after the run, then exit
    QString view;             // overview | head | document | compare | evaluate
    QString results;          // evaluation results file shown in the Evaluate tab
    bool getModel = false;    // open Help > Get a Model at start (the desktop entry's action)
    QString system;           // --system: the system message of the chat template
    bool showPrompt = false;  // --show-prompt: open "Prompt as the model sees it"
    int maxTokens = 32;       // generation length for --view compare in headless mode
    std::optional<int> budget;
    std::optional<int> window;
    std::optional<int> kernel;
    QString pooling;
    QString policy;
    QString gqa;              // query-head | kv-head
    QString tieBreak;         // earlier | later
    int walkthroughStep = 0;  // 1-based: open the walkthrough at this step after the run
    int benchRetune = 0;      // hidden: time N budget changes after the run and print the timings
    bool maxTokensSet = false;
    QString error;  // set when the command line is invalid

    // A headless run: a screenshot or a benchmark, no person watching.
    bool headless() const { return !screenshot.isEmpty() || benchRetune > 0; }
    // Whether options other than files decide what the window shows (parameters, a session):
    // such runs must not overwrite the settings a plain start restores.
    bool overridesSettings() const;
};

// The option definitions --help prints; the man page is made from the same list.
QString applicationDescription();
QList<QCommandLineOption> applicationOptions();
QString fileArgumentHelp();
// snapkv-studio(1) in roff, from applicationOptions() (`snapkv-studio --man-page`, run by the build).
QString manPage(const QString& version);

// Parses QCoreApplication::arguments(); prints --help/--version itself and exits there. Every value
// is checked here (ranges, names), so that a bad one is refused before anything loads.
AppOptions parseOptions(const QStringList& arguments);

// Default model: $SNAPKV_MODEL, then models/<default> under the working directory, next to the
// executable (../ and ../../, and the build tree's source dir), then userModelsDir(). Empty if none.
QString defaultModelPath();
// Where snapkv-fetch-model (and Help > Get a Model) puts models: ~/.local/share/snapkv-studio/models.
QString userModelsDir();
QString defaultModelFileName();
// The models/ folders (working directory, next to the executable, the source tree) and
// userModelsDir(): those that exist, canonical, each once, in that order. The Model menu lists
// their models.
QStringList modelFolders();
// A file under datasets/: core's lookup (SNAPKV_DATASETS, ./datasets, the installed copy, the
// source tree), then next to the executable; empty if not found.
QString findDatasetFile(const QString& name);
// Reads a UTF-8 text file; nullopt with *error on failure (missing, a folder, unreadable, binary).
std::optional<QString> readTextFile(const QString& path, QString* error);

}  // namespace studio
