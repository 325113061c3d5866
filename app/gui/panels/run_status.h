// The status bar's contents: a line of text, the retune timing, the forecast of the last run
// (time and peak memory before its prefill starts), the progress of the running job (its stage,
// and for prefill the speed and time left) and its Cancel button. It shows what it is
// told and emits cancelRequested; it holds no results and never talks to a worker.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QString>

#include "core/session/run_forecast.h"

class QLabel;
class QProgressBar;
class QPushButton;
class QStatusBar;

namespace studio {

class RunStatus : public QObject {
    Q_OBJECT
public:
    // Puts its widgets into `bar`.
    explicit RunStatus(QStatusBar* bar);

    void setText(const QString& text);
    QString text() const;
    void setTiming(const QString& text);
    // "about 41 s, peak 1.1 GiB of 18.2 GiB free" (the whole forecast in the tooltip).
    void setForecast(const snapkv::RunForecast& forecast);
    QString forecastText() const;
    // A job started (the progress bar spins with the task's name) or every job ended.
    void setBusy(bool busy, const QString& task);
    // total <= 0: no count (a spinning bar with the stage's name).
    void setProgress(const QString& stage, qint64 done, qint64 total);

Q_SIGNALS:
    void cancelRequested();

private:
    QLabel* m_text;
    QLabel* m_timing;
    QLabel* m_forecast;
    QProgressBar* m_progress;
    QPushButton* m_cancel;
    QElapsedTimer m_stageClock;  // since the current progress stage began (rate and time left)
    QString m_stage;
};

}  // namespace studio
