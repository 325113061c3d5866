// RunStatus: the status bar's text, timing, progress and Cancel (see run_status.h).
#include "app/gui/panels/run_status.h"

#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QStatusBar>
#include <QStyle>

#include <algorithm>

namespace studio {

RunStatus::RunStatus(QStatusBar* bar) : QObject(bar) {
    m_text = new QLabel("Ready.");
    m_timing = new QLabel;
    m_timing->setObjectName("timingLabel");
    m_forecast = new QLabel;
    m_forecast->setObjectName("forecastLabel");
    m_progress = new QProgressBar;
    m_progress->setFixedWidth(340);
    m_progress->setTextVisible(true);
    m_progress->hide();
    m_cancel = new QPushButton(bar->style()->standardIcon(QStyle::SP_MediaStop), "Cancel");
    m_cancel->setObjectName("cancelButton");
    m_cancel->hide();
    bar->addWidget(m_text, 1);
    bar->addPermanentWidget(m_forecast);
    bar->addPermanentWidget(m_timing);
    bar->addPermanentWidget(m_progress);
    bar->addPermanentWidget(m_cancel);
    connect(m_cancel, &QPushButton::clicked, this, &RunStatus::cancelRequested);
}

void RunStatus::setText(const QString& text) { m_text->setText(text); }
QString RunStatus::text() const { return m_text->text(); }
void RunStatus::setTiming(const QString& text) { m_timing->setText(text); }

void RunStatus::setForecast(const snapkv::RunForecast& f) {
    QString text = f.seconds >= 0 ? QString("about %1, ").arg(QString::fromStdString(snapkv::format_seconds(f.seconds)))
                                  : QString();
    text += QString("peak %1").arg(QString::fromStdString(snapkv::format_bytes(f.peak())));
    if (f.available.bytes >= 0)
        text += QString(" of %1 free")
                    .arg(QString::fromStdString(snapkv::format_bytes(f.available.bytes + f.memory.weights)));
    if (!f.fits()) text += " — does not fit";
    m_forecast->setText(text);
    m_forecast->setToolTip("Before the prefill: " + QString::fromStdString(f.summary()));
}

QString RunStatus::forecastText() const { return m_forecast->text(); }

void RunStatus::setBusy(bool busy, const QString& task) {
    m_progress->setVisible(busy);
    m_cancel->setVisible(busy);
    if (!busy) return;
    m_progress->setRange(0, 0);
    m_progress->setFormat(task);
    m_text->setText(QString("Working: %1…").arg(task));
}

void RunStatus::setProgress(const QString& stage, qint64 done, qint64 total) {
    if (stage != m_stage || done == 0 || !m_stageClock.isValid()) {
        m_stage = stage;
        m_stageClock.restart();
    }
    if (total > 0 && total < (qint64(1) << 30)) {
        m_progress->setRange(0, static_cast<int>(total));
        m_progress->setValue(static_cast<int>(std::min(done, total)));
        QString format = QString("%1 %p%").arg(stage);
        // Prefill counts prompt tokens: its speed and the time left, once there is a rate to go by.
        const double secs = m_stageClock.elapsed() / 1000.0;
        if (stage == "prefill" && done > 0 && done < total && secs >= 0.5) {
            const double rate = double(done) / secs;
            format += QString(" · %1 tok/s · %2 s left").arg(rate, 0, 'f', 0).arg((total - done) / rate, 0, 'f', 0);
        }
        m_progress->setFormat(format);
    } else {
        m_progress->setRange(0, 0);
        m_progress->setFormat(stage);
    }
}

}  // namespace studio
