// The status bar's contents: a line of text, the retune timing, the progress of the running job
// (its stage, and for prefill the speed and time left) and its Cancel button. It shows what it is
// told and emits cancelRequested; it holds no results and never talks to a worker.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QString>

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
    // A job started (the progress bar spins with the task's name) or every job ended.
    void setBusy(bool busy, const QString& task);
    // total <= 0: no count (a spinning bar with the stage's name).
    void setProgress(const QString& stage, qint64 done, qint64 total);

Q_SIGNALS:
    void cancelRequested();

private:
    QLabel* m_text;
    QLabel* m_timing;
    QProgressBar* m_progress;
    QPushButton* m_cancel;
    QElapsedTimer m_stageClock;  // since the current progress stage began (rate and time left)
    QString m_stage;
};

}  // namespace studio
