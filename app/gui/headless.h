// Start-up configuration from the command line, and the headless driver behind --run and
// --screenshot: load -> prefill -> select (-> generate for the compare view), then save a
// 1600x1000 screenshot of the whole window and quit with 0, or print the error and quit with 1.
// --bench-retune N times N budget changes from edit to repainted view.
#pragma once

#include <QObject>

#include "app/gui/app_options.h"

namespace studio {

class MainWindow;

// Model, document, question, session and parameter overrides; falls back to the default model and
// the bundled sample document/question. Returns false (and shows the error) on a bad argument.
bool configureWindow(MainWindow& w, const AppOptions& o);

class HeadlessDriver : public QObject {
    Q_OBJECT
public:
    HeadlessDriver(MainWindow* window, const AppOptions& options, QObject* parent = nullptr);
    void start();

Q_SIGNALS:
    void finished(int exitCode);

private:
    void onRunFinished();
    void finish();
    void fail(const QString& message);
    void benchStep();

    MainWindow* m_window;
    AppOptions m_options;
    bool m_done = false;
    int m_benchLeft = 0;
    QList<double> m_benchTotals;
    QList<double> m_benchSelects;
    QList<double> m_benchAllViews;
};

}  // namespace studio
