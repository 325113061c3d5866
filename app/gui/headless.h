// Start-up configuration from the command line, and the headless driver behind --screenshot and
// --bench-retune: load -> prefill -> select (-> generate, for a view the registry marks so), then save a
// 1600x1000 screenshot of the whole window and quit with 0, or print the reason on stderr and quit
// with 1. --bench-retune N times N budget changes from edit to repainted view.
//
// No person watches a headless run, so nothing may wait for one: every error the window shows
// (MainWindow::errorShown, which every refusal, failed job, failed retune, failed export and bad
// file goes through) and every cancellation ends the run with a message; and every step the
// driver takes either is refused at once or queues a job whose end is one of the signals above or
// a completion (runFinished, compareFinished, retuneTimed). After each step the driver checks that
// something is in flight; if not, it fails instead of waiting. No timers or watchdogs are needed.
#pragma once

#include <QList>
#include <QObject>

#include "app/gui/app_options.h"

namespace studio {

class MainWindow;

// Model, document, question, session and parameter overrides; falls back to the default model and
// the bundled sample document/question. Returns false on a bad argument: the window has shown the
// error (errorShown) and *error holds it too.
bool configureWindow(MainWindow& w, const AppOptions& o, QString* error);

class HeadlessDriver : public QObject {
    Q_OBJECT
public:
    HeadlessDriver(MainWindow* window, const AppOptions& options, QObject* parent = nullptr);
    // configureWindow with every error reported on stderr; false: the run is over (exit code 1).
    bool configure();
    void start();
    bool done() const { return m_done; }

Q_SIGNALS:
    void finished(int exitCode);

private:
    enum class Stage { Configuring, Running, Benchmarking, Generating, Saving, Done };

    void onRunFinished();
    void onCompareFinished();
    void startBench();
    void benchStep();
    void printBench();
    void finish();
    void fail(const QString& message);
    // After a step that queued work: fail unless a job is in flight (nothing would ever end the wait).
    void expectBusy(const QString& what);

    MainWindow* m_window;
    AppOptions m_options;
    Stage m_stage = Stage::Configuring;
    bool m_done = false;
    int m_benchLeft = 0;
    QList<double> m_benchTotals;
    QList<double> m_benchSelects;
    QList<double> m_benchAllViews;
};

}  // namespace studio
