// Helpers for the GUI tests: fixture paths, a MainWindow set up on stories260K with a short story,
// and waits on the controller's signals with a timeout (never a silent hang).
#pragma once

#include <QString>
#include <QStringList>

#include <functional>
#include <memory>

#include "app/gui/main_window.h"
#include "app/gui/panels/parameter_panel.h"

namespace guitest {

QString dataPath(const QString& name);     // tests/data/<name>
QString guiDataPath(const QString& name);  // tests/gui/data/<name>
QString storyText();
QString modelPath();  // tests/data/stories260K.gguf

// A shown, non-interactive window with the model path, the short story and a question set;
// budget C, one selection per query head, the other parameters at their defaults.
std::unique_ptr<studio::MainWindow> makeWindow(int budget = 64, bool interactive = false);

struct Outcome {
    bool ok = false;  // the awaited success signal came
    QString what;     // "finished", "failed: ...", "cancelled: ...", "context", "timeout"
};
// run() and wait for runFinished (or failure) up to timeoutMs.
Outcome runAndWait(studio::MainWindow& w, int timeoutMs = 120000);
Outcome waitRun(studio::MainWindow& w, int timeoutMs = 120000);
// generate() and wait for compareFinished.
Outcome generateAndWait(studio::MainWindow& w, int maxTokens, int timeoutMs = 120000);
// A programmatic parameter edit, flushed past the debounce, then wait for the retune to land.
Outcome editAndWait(studio::MainWindow& w, studio::ParameterPanel::Field field, double value, int timeoutMs = 60000);
// Process events until the lazy views have redrawn.
void settle();
// Process events until done() holds or timeoutMs have passed (wall time, not a count of rounds:
// a loaded machine delivers a worker's result later); returns done().
bool settleUntil(const std::function<bool()>& done, int timeoutMs = 30000);

// snapkv-studio run as a separate process (headless runs), with its settings under configHome.
struct ProcessResult {
    int code = -1;      // exit code; -1 when it crashed or hung
    bool hung = false;  // still running after the timeout (then killed)
    QString out;
    QString err;
};
// childSetup runs in the child between fork and exec (e.g. setrlimit); may be empty.
ProcessResult runStudio(const QStringList& args, const QString& configHome, int timeoutMs = 120000,
                        std::function<void()> childSetup = {});
QString studioPath();

}  // namespace guitest
