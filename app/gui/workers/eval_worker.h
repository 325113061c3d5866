// The Evaluate tab's worker thread: its own snapkv::Session (the main views keep theirs) runs a
// needle grid, a sweep or RULER's synthetic tasks with core/eval, writes every finished row to the
// results file and sends a copy to the GUI; it also rebuilds one cell's prompt when the user
// clicks it. EvalController is
// the GUI side: it owns the thread, queues jobs, and turns the worker's signals into its own.
// Before the first cell the worker forecasts the grid's largest cell (core/eval/eval_plan.h,
// as `snapkv needle` does) and sends the plan text; a largest cell that does not fit fails the run
// with the cheaper choices instead of starting it. Values cross threads (shared pointers to const
// copies); exceptions never do.
#pragma once

#include <QElapsedTimer>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QThread>

#include <atomic>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/eval/eval_grid.h"
#include "core/eval/eval_runner.h"
#include "core/session/session.h"

namespace studio {

using EvalCancelPtr = std::shared_ptr<std::atomic<bool>>;
using EvalRowPtr = std::shared_ptr<const nlohmann::json>;
using EvalSourcePtr = std::shared_ptr<const snapkv::eval::CellPrompt>;  // a cell's prompt and needle span

struct EvalJob {
    QString task = "needle";  // "needle" | "sweep" | "ruler"
    QString modelPath;
    snapkv::LoadOptions load;
    // needle
    std::vector<int64_t> lengths;
    std::vector<double> depths;
    QString needle = "passkey";
    QString needlesFile;   // "" = the bundled one
    QStringList haystack;  // files or folders; empty = the bundled essays
    // sweep
    QString setPath;
    // ruler (the essays and word lists are the bundled ones; the answer length is each task's own)
    QString rulerTasks = "all";  // "all" or a comma list
    std::vector<int64_t> rulerLengths;
    int64_t samples = 10;
    snapkv::eval::GridAxes axes;
    int64_t maxTokens = 32;
    int64_t klSteps = 32;
    bool chat = true;  // when the model has a template
    QString outPath;
};

// A cell of a results file to open in the main views.
struct EvalCellJob {
    QString modelPath;
    snapkv::LoadOptions load;
    nlohmann::json settings;  // the results' settings
    nlohmann::json row;       // the clicked row (cell, config, per-head stats)
    QStringList haystack;     // as in EvalJob
    QString setPath;
};

struct EvalCellPrompt {
    snapkv::PromptSpec prompt;
    bool full = false;               // the full-cache row: no selection to apply
    snapkv::SelectionParams params;  // params.ratio >= 0: a compression ratio, not a budget
    bool queryAgnostic = false;
    int64_t markFirst = -1;  // needle tokens [first, last) in the prompt
    int64_t markLast = -1;
    struct Mark {
        int64_t first = -1;  // prompt tokens [first, last)
        int64_t last = -1;
        QString label;  // "needle" | "answer"
    };
    std::vector<Mark> marks;  // every span to mark (the needle first); RULER: all needles and answers
    int focusLayer = -1;      // the head that kept the least of the needle
    int focusHead = -1;
    // Focus instead the head that keeps the least of all the "needle" marks, once the main views
    // hold the selection (a RULER row records the first needle's heads only).
    bool focusLeastKept = false;
    QString title;  // "length 2048, depth 30%: snapkv C256 missed"
};
using EvalCellPtr = std::shared_ptr<const EvalCellPrompt>;

// What opening `row` shows: the cell's prompt, the row's configuration, the needle marked, the
// head that kept least of it focused. Throws snapkv::Error for a row the settings do not describe.
EvalCellPrompt makeCellPrompt(const snapkv::eval::CellPrompt& source, const nlohmann::json& settings,
                              const nlohmann::json& row);
// The (layer, head) of `sel` that kept the smallest share of the tokens of the marks labelled
// "needle" (the first such, layer-major); (-1, -1) when there are none.
std::pair<int, int> leastKeptHead(const snapkv::Selection& sel, const std::vector<EvalCellPrompt::Mark>& marks);

struct EvalStatsValue {
    int64_t rowsWritten = 0;
    int64_t cellsRun = 0;
    int64_t cellsSkipped = 0;
    double wallMs = 0;
    double prefillMs = 0;
    double referenceMs = 0;
    double compressedMs = 0;
    double savedMs = 0;
};

class EvalWorker : public QObject {
    Q_OBJECT
public:
    EvalWorker();
    ~EvalWorker() override;
    void run(const EvalJob& job, const EvalCancelPtr& cancel);
    void prepareCell(const EvalCellJob& job);
    void shutdown();

Q_SIGNALS:
    // The plan of the run (its largest cell's memory and time, the cells to run), before started().
    void planned(const QString& plan);
    void started(const QString& outPath, qint64 cellsInShard, qint64 rowsPresent);
    void rowFinished(const studio::EvalRowPtr& row, const studio::EvalSourcePtr& source);
    void cellsProgressed(qint64 done, qint64 total);
    void progressed(const QString& stage, qint64 done, qint64 total);
    void finished(const studio::EvalStatsValue& stats);
    void cellPrepared(const studio::EvalCellPtr& cell);
    void failed(const QString& task, const QString& message);
    void cancelled(const QString& task);

private:
    snapkv::Session& session(const QString& modelPath, const snapkv::LoadOptions& load);
    template <typename Fn>
    void guarded(const QString& task, Fn&& fn);

    std::unique_ptr<snapkv::Session> m_session;
    QString m_loaded;  // model path + device + dtype of m_session
    QElapsedTimer m_progressClock;
};

class EvalController : public QObject {
    Q_OBJECT
public:
    explicit EvalController(QObject* parent = nullptr);
    ~EvalController() override;
    void run(const EvalJob& job);
    void openCell(const EvalCellJob& job);
    void cancel();
    void shutdown();  // cancel, then wait for the worker; idempotent
    bool busy() const { return m_busy; }

Q_SIGNALS:
    void busyChanged(bool busy);
    void planned(const QString& plan);
    void started(const QString& outPath, qint64 cellsInShard, qint64 rowsPresent);
    void rowFinished(const studio::EvalRowPtr& row, const studio::EvalSourcePtr& source);
    void cellsProgressed(qint64 done, qint64 total);
    void progressed(const QString& stage, qint64 done, qint64 total);
    void finished(const studio::EvalStatsValue& stats);
    void cellPrepared(const studio::EvalCellPtr& cell);
    void failed(const QString& task, const QString& message);
    void cancelled(const QString& task);

private:
    void setBusy(bool busy);

    QThread m_thread;
    EvalWorker* m_worker = nullptr;
    EvalCancelPtr m_cancel;
    bool m_busy = false;
    bool m_shutDown = false;
};

}  // namespace studio

Q_DECLARE_METATYPE(studio::EvalJob)
Q_DECLARE_METATYPE(studio::EvalCellJob)
Q_DECLARE_METATYPE(studio::EvalRowPtr)
Q_DECLARE_METATYPE(studio::EvalSourcePtr)
Q_DECLARE_METATYPE(studio::EvalCellPtr)
Q_DECLARE_METATYPE(studio::EvalStatsValue)
