// The dialog shown when a run does not fit the free memory: what it would take against what is
// free, and the forecast's cheaper choices as buttons ("Use q8_0 cache (peak 2.1 GiB)", "Cut the
// document to 12,000 tokens (41 %)") beside Cancel, instead of only refusing. It emits the choice;
// the window re-runs with it. It computes nothing itself: the choices come from run_forecast.h.
#pragma once

#include <QDialog>
#include <QString>

#include "core/session/run_forecast.h"

namespace studio {

// "The run needs 3.2 GiB at its peak (weights 92.1 MiB + run 3.1 GiB) but 2.0 GiB is free
// (MemAvailable in /proc/meminfo)." and what helps, or that nothing does.
QString doesNotFitMessage(const snapkv::RunForecast& forecast);
// A choice as its button reads.
QString choiceButtonText(const snapkv::CheaperChoice& choice);

class CheaperChoicesDialog : public QDialog {
    Q_OBJECT
public:
    explicit CheaperChoicesDialog(const snapkv::RunForecast& forecast, QWidget* parent = nullptr);

Q_SIGNALS:
    void choiceMade(const snapkv::CheaperChoice& choice);
};

}  // namespace studio
