// EvaluateView's runner glue: starting a run from the form, and turning the worker's signals
// (planned, started, rows, progress, finished, failed, cancelled, a cell prepared) into the status
// line, the progress bar and redraws. The worker itself is eval_worker.cpp; the drawing is elsewhere.
#include <QFileInfo>

#include <algorithm>
#include <tuple>

#include "app/gui/views/evaluate_form.h"
#include "app/gui/views/evaluate_view.h"

namespace studio {

namespace {

QString fmtDuration(double ms) {
    const qint64 s = static_cast<qint64>(ms / 1000.0 + 0.5);
    if (s < 60) return QString("%1 s").arg(s);
    if (s < 3600) return QString("%1 min %2 s").arg(s / 60).arg(s % 60);
    return QString("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}

}  // namespace

void EvaluateView::connectController() {
    connect(m_controller, &EvalController::planned, this, [this](const QString& plan) {
        m_plan = plan;
        m_form->setStatus(plan);
    });
    connect(m_controller, &EvalController::started, this, &EvaluateView::onStarted);
    connect(m_controller, &EvalController::rowFinished, this, &EvaluateView::onRow);
    connect(m_controller, &EvalController::cellsProgressed, this, &EvaluateView::onCellsProgressed);
    connect(m_controller, &EvalController::busyChanged, this, &EvaluateView::onBusyChanged);
    connect(m_controller, &EvalController::progressed, this, [this](const QString& stage, qint64 d, qint64 t) {
        m_stage = QString("%1 %2/%3").arg(stage).arg(d).arg(t);
        onCellsProgressed(m_cellsDone, m_cellsTotal);
    });
    connect(m_controller, &EvalController::finished, this, [this](const EvalStatsValue& v) {
        QString s = QString("Done: %1 rows written to %2 (%3 cells run, %4 already there) in %5.")
                        .arg(v.rowsWritten)
                        .arg(QFileInfo(m_form->outPath()).fileName())
                        .arg(v.cellsRun)
                        .arg(v.cellsSkipped)
                        .arg(fmtDuration(v.wallMs));
        if (v.cellsRun > 0)
            s += QString(" Prefill %1, full decode %2, compressed %3; one prefill per document saved ~%4.")
                     .arg(fmtDuration(v.prefillMs), fmtDuration(v.referenceMs), fmtDuration(v.compressedMs),
                          fmtDuration(v.savedMs));
        m_form->setStatus(s);
        markDirty();
        Q_EMIT runFinished();
    });
    connect(m_controller, &EvalController::failed, this, [this](const QString& task, const QString& msg) {
        m_form->setStatus(QString("%1 failed: %2").arg(task, msg));
        Q_EMIT errorOccurred(task == "open cell" ? "Cannot open the cell" : "Evaluation failed", msg);
        if (task == "evaluation") Q_EMIT runFinished();
    });
    connect(m_controller, &EvalController::cancelled, this, [this](const QString& task) {
        m_form->setStatus(QString("Cancelled: %1 rows are kept in %2; Run again with the same file resumes.")
                              .arg(m_results.size())
                              .arg(QFileInfo(m_form->outPath()).fileName()));
        markDirty();
        if (task == "evaluation") Q_EMIT runFinished();
    });
    connect(m_controller, &EvalController::cellPrepared, this,
            [this](const EvalCellPtr& cell) { Q_EMIT openCellRequested(*cell); });
}

EvalJob EvaluateView::jobFromForm() const {
    QString modelPath;
    snapkv::LoadOptions load;
    if (m_modelProvider) std::tie(modelPath, load) = m_modelProvider();
    return m_form->job(modelPath, load);
}

bool EvaluateView::startRun(QString* error) {
    if (m_controller->busy()) {
        if (error) *error = "an evaluation is already running";
        return false;
    }
    EvalJob job;
    try {
        job = jobFromForm();
    } catch (const snapkv::Error& e) {
        if (error) *error = QString::fromUtf8(e.what());
        m_form->setStatus(QString::fromUtf8(e.what()));
        return false;
    }
    if (job.outPath.isEmpty()) {
        job.outPath = m_form->defaultOutPath();
        m_form->setOutPath(job.outPath);
    }
    // Rows already in the file show at once; a file of another grid fails in the worker.
    m_results.clear();
    m_sources.clear();
    if (QFileInfo::exists(job.outPath)) {
        try {
            m_results.load(job.outPath);
        } catch (const snapkv::Error&) {
            m_results.clear();
        }
    }
    m_runTask = job.task;
    m_cellsDone = m_cellsTotal = m_cellsRun = 0;
    m_cellHadRows = false;
    m_stage = "loading model";
    m_plan.clear();
    m_form->setStatus("Starting…");
    m_controller->run(job);
    fillMetricCombo();
    markDirty();
    return true;
}

void EvaluateView::cancel() { m_controller->cancel(); }

void EvaluateView::onStarted(const QString& outPath, qint64 cells, qint64 present) {
    m_runClock.start();
    m_cellsTotal = cells;
    m_form->setStatus(QString("Running %1 cells into %2%3.")
                          .arg(cells)
                          .arg(QFileInfo(outPath).fileName())
                          .arg(present ? QString(" (%1 rows already there are kept)").arg(present) : QString()) +
                      (m_plan.isEmpty() ? QString() : " " + m_plan));
}

void EvaluateView::onRow(const EvalRowPtr& row, const EvalSourcePtr& source) {
    if (!m_results.add(*row)) {  // the file held another run: show this run's rows only
        m_results.clear();
        m_results.add(*row);
    }
    if (source) m_sources[(*row)["cell"].get<int64_t>()] = source;
    m_cellHadRows = true;
    scheduleRedraw();
}

void EvaluateView::onCellsProgressed(qint64 done, qint64 total) {
    if (done > m_cellsDone && m_cellHadRows) ++m_cellsRun, m_cellHadRows = false;
    m_cellsDone = done;
    m_cellsTotal = total;
    if (!m_controller->busy()) return;
    QString s = QString("%1 / %2 cells").arg(done).arg(total);
    if (m_cellsRun > 0 && m_runClock.isValid() && done < total)
        s += " · about " + fmtDuration(m_runClock.elapsed() / double(m_cellsRun) * double(total - done)) + " left";
    if (!m_stage.isEmpty()) s += " · " + m_stage;
    if (m_cellsRun == 0 && !m_plan.isEmpty()) s += " · " + m_plan;  // until a cell's own time is known
    m_form->setStatus(s);
    m_form->setProgress(done, total);
}

void EvaluateView::onBusyChanged(bool busy) { m_form->setBusy(busy); }

}  // namespace studio
