// Command-line options of snapkv-studio: what --help and the man page print, and the parsed,
// checked values. No widgets; where the default model and the sample document are found is
// state/app_paths.h, which view names --view accepts is the view registry's.
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
    QString view;             // a name of the view registry (view_registry.h)
    QString results;          // evaluation results file shown in the Evaluate tab
    bool getModel = false;    // open Help > Get a Model at start (the desktop entry's action)
    QString system;           // --system: the system message of the chat template
    bool showPrompt = false;  // --show-prompt: open "Prompt as the model sees it"
    int maxTokens = 32;       // generation length for --view compare in headless mode
    std::optional<int> budget;
    std::optional<int> window;
    std::optional<int> kernel;
    std::optional<int> decodeBudget;    // --decode-budget: compress while generating (0: off)
    std::optional<int> decodeInterval;  // --decode-interval
    QString pooling;
    QString policy;
    QString gqa;              // query-head | kv-head
    QString tieBreak;         // earlier | later
    QString weights;          // native | native-q8 | f32: how the model's weights are held (LoadOptions)
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

}  // namespace studio
