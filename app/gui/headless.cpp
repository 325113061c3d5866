// Command-line configuration and the headless run/screenshot/bench driver (see headless.h for the
// rule that keeps it from ever waiting on nothing).
#include "app/gui/headless.h"

#include <QApplication>
#include <QDockWidget>
#include <QFileInfo>
#include <QImage>
#include <QTimer>

#include <algorithm>
#include <cstdio>

#include "app/gui/files/atomic_write.h"
#include "app/gui/main_window.h"
#include "app/gui/panels/parameter_panel.h"
#include "app/gui/panels/prompt_panel.h"
#include "app/gui/panels/walkthrough.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/state/app_paths.h"
#include "app/gui/view_registry.h"
#include "app/gui/view_tabs.h"
#include "app/gui/views/compare_view.h"
#include "app/gui/views/evaluate_view.h"
#include "app/gui/views/lazy_view.h"
#include "app/gui/views/prompt_text_view.h"
#include "app/gui/workers/run_controller.h"

namespace studio {

namespace {
constexpr int kShotWidth = 1600;
constexpr int kShotHeight = 1000;

// One line on stderr: newlines inside a message (a library's text) become spaces.
void say(QString s) {
    s.replace('\n', ' ');
    std::fprintf(stderr, "snapkv-studio: %s\n", s.toLocal8Bit().constData());
    std::fflush(stderr);
}
// Whether a headless screenshot of `view` generates with both caches first (the registry says).
bool screenshotGenerates(const QString& view) {
    const ViewSpec* spec = findViewSpec(view);
    return spec && spec->screenshotGenerates;
}
}  // namespace

bool configureWindow(MainWindow& w, const AppOptions& o, QString* error) {
    // Every refusal below goes through MainWindow::showError (errorShown); *error keeps the text.
    auto failed = [&] {
        *error = w.lastError();
        return false;
    };
    if (!o.session.isEmpty()) {
        if (!w.loadSession(o.session)) return failed();
    } else {
        const QString model = !o.model.isEmpty() ? o.model : defaultModelPath();
        w.setModelPath(model.isEmpty() ? QString() : QFileInfo(model).absoluteFilePath());
        const QString doc = !o.document.isEmpty() ? o.document : findDatasetFile("sample_document.md");
        if (!doc.isEmpty() && !w.openDocument(doc)) return failed();
        if (!o.question.isEmpty()) {
            if (!w.setQuestionFromArg(o.question)) return failed();
        } else if (const QString q = findDatasetFile("sample_question.txt"); !q.isEmpty()) {
            if (!w.setQuestionFromArg(q)) return failed();
        }
    }
    // Names and ranges were checked by parseOptions; parse_* cannot throw on them.
    ParamState p = w.parameterPanel()->state();
    if (o.budget) p.sel.budget = *o.budget, p.useRatio = false;
    if (o.window) p.sel.window = *o.window;
    if (o.kernel) p.sel.kernel = *o.kernel;
    if (o.decodeBudget) p.decodeBudget = *o.decodeBudget;
    if (o.decodeInterval) p.decodeInterval = *o.decodeInterval;
    if (!o.pooling.isEmpty()) p.sel.pooling = snapkv::parse_pooling(o.pooling.toStdString());
    if (!o.policy.isEmpty()) p.sel.policy = snapkv::parse_policy(o.policy.toStdString());
    if (!o.gqa.isEmpty()) p.sel.gqa = snapkv::parse_gqa_mode(o.gqa.toStdString());
    if (!o.tieBreak.isEmpty()) p.sel.tie_break = snapkv::parse_tie_break(o.tieBreak.toStdString());
    if (!o.weights.isEmpty()) {
        snapkv::LoadOptions load = w.promptPanel()->loadOptions();
        load.weights = o.weights.toStdString();
        w.promptPanel()->setLoadOptions(load);
    }
    if (const QString problem = p.check(); !problem.isEmpty()) {
        // E.g. a --window larger than the saved budget: say which values clash.
        *error = "the parameters do not fit together: " + problem;
        return false;
    }
    if (p != w.parameterPanel()->state()) w.parameterPanel()->setState(p, false);
    if (!o.results.isEmpty()) {
        QString why;
        if (!w.evaluateView()->loadResults(o.results, &why)) {
            *error = "cannot show the results: " + why;
            return false;
        }
        w.showView("evaluate");
    }
    if (!o.view.isEmpty()) w.showView(o.view);
    if (o.maxTokensSet) w.compareView()->setMaxTokens(o.maxTokens);
    if (!o.system.isEmpty()) w.promptPanel()->setSystemPrompt(o.system);
    if (o.showPrompt) w.showPromptText();
    return true;
}

HeadlessDriver::HeadlessDriver(MainWindow* window, const AppOptions& options, QObject* parent)
    : QObject(parent), m_window(window), m_options(options) {
    auto* c = m_window->controller();
    // Errors: everything the window shows, and cancellations (which it only notes).
    connect(m_window, &MainWindow::errorShown, this, [this](const QString& message, const QString& title) {
        fail(title.isEmpty() ? message : title + ": " + message);
    });
    connect(c, &RunController::cancelled, this, [this](const QString& task) { fail(task + " cancelled"); });
    connect(m_window, &MainWindow::noteShown, this, [](const QString& note) { say("note: " + note); });
    // Completions.
    connect(c, &RunController::runFinished, this, &HeadlessDriver::onRunFinished);
    connect(c, &RunController::compareFinished, this, &HeadlessDriver::onCompareFinished);
    connect(c, &RunController::noteIssued, this, [](const QString& note) { say(note); });
    connect(c, &RunController::retuneTimed, this, [this](double select, double total) {
        if (m_stage != Stage::Benchmarking || m_benchLeft <= 0) return;
        QElapsedTimer t;
        t.start();
        // Worst case: every view of the run's results redrawn, not just the visible one.
        for (LazyView* v : m_window->views()->analysisViews()) v->refreshNow();
        m_benchSelects << select;
        m_benchTotals << total;
        m_benchAllViews << total + t.nsecsElapsed() / 1e6;
        --m_benchLeft;
        QTimer::singleShot(0, this, &HeadlessDriver::benchStep);
    });
}

bool HeadlessDriver::configure() {
    QString error;
    if (!configureWindow(*m_window, m_options, &error)) {
        fail(error.isEmpty() ? QString("the command line could not be applied") : error);
        return false;
    }
    return !m_done;  // an error shown while configuring (errorShown) has ended the run already
}

void HeadlessDriver::start() {
    if (m_done) return;
    if (!m_options.run) {  // e.g. a results file in the Evaluate tab: nothing to prefill
        finish();
        return;
    }
    if (m_window->promptPanel()->modelPath().isEmpty()) {
        fail(QString("no model: pass --model or put %1 under models/").arg(defaultModelFileName()));
        return;
    }
    m_stage = Stage::Running;
    // A session that had results is running again already (MainWindow::loadSession).
    if (m_window->controller()->busy()) return;
    if (!m_window->run()) {
        fail("the run was refused");  // the reason was printed through errorShown
        return;
    }
    expectBusy("the run");
}

void HeadlessDriver::expectBusy(const QString& what) {
    if (m_done) return;
    if (!m_window->controller()->busy())
        fail(QString("internal error: %1 started no work, so nothing would end this run").arg(what));
}

void HeadlessDriver::onRunFinished() {
    if (m_done || m_stage != Stage::Running) return;
    if (m_options.benchRetune > 0) {
        startBench();
        return;
    }
    if (screenshotGenerates(m_options.view)) {
        m_stage = Stage::Generating;
        if (!m_window->generate(m_options.maxTokens)) {
            fail("generation was refused");
            return;
        }
        expectBusy("generate");
        return;
    }
    finish();
}

void HeadlessDriver::onCompareFinished() {
    if (m_done || m_stage != Stage::Generating) return;
    finish();
}

void HeadlessDriver::startBench() {
    m_stage = Stage::Benchmarking;
    m_benchLeft = m_options.benchRetune;
    benchStep();
}

void HeadlessDriver::benchStep() {
    if (m_done) return;
    if (m_benchLeft <= 0) {
        printBench();
        if (screenshotGenerates(m_options.view)) {
            m_stage = Stage::Running;  // the generating screenshot after the timings
            onRunFinished();
            return;
        }
        finish();
        return;
    }
    // Alternate between two budgets below the prompt length so every change re-selects.
    auto* panel = m_window->parameterPanel();
    const int64_t L = m_window->state()->prefill().n_tokens;
    const int64_t b = (m_benchLeft % 2) ? std::max<int64_t>(64, L / 4) : std::max<int64_t>(96, L / 2);
    const ParamState before = panel->state();
    panel->edit(ParameterPanel::FBudget, static_cast<double>(b));
    if (panel->state() == before) {
        fail(
            QString("bench-retune: setting the budget to %1 changed nothing (budget %2)").arg(b).arg(before.sel.budget));
        return;
    }
    panel->flush();
    if (!m_done && !m_window->controller()->retunePending())
        fail("internal error: a budget edit queued no retune, so nothing would end this run");
}

void HeadlessDriver::printBench() {
    auto median = [](QList<double> v) {
        std::sort(v.begin(), v.end());
        return v.isEmpty() ? 0.0 : v[v.size() / 2];
    };
    const int n = m_window->state()->hasPrefill() ? static_cast<int>(m_window->state()->prefill().n_tokens) : 0;
    QStringList samples;
    for (int i = 0; i < m_benchTotals.size(); ++i)
        samples << QString("[%1, %2, %3]")
                       .arg(m_benchSelects[i], 0, 'f', 1)
                       .arg(m_benchTotals[i], 0, 'f', 1)
                       .arg(m_benchAllViews[i], 0, 'f', 1);
    std::printf(
        "{\"tokens\": %d, \"changes\": %d, \"select_ms_median\": %.1f, "
        "\"edit_to_visible_view_ms_median\": %.1f, \"edit_to_all_views_ms_median\": %.1f, "
        "\"throttle_ms\": %d, \"samples_select_visible_all\": [%s]}\n",
        n, static_cast<int>(m_benchTotals.size()), median(m_benchSelects), median(m_benchTotals),
        median(m_benchAllViews), m_window->parameterPanel()->debounceMs(),
        samples.join(", ").toLocal8Bit().constData());
    std::fflush(stdout);
}

void HeadlessDriver::fail(const QString& message) {
    if (m_done) return;
    m_done = true;
    m_stage = Stage::Done;
    say("error: " + message);
    Q_EMIT finished(1);
}

void HeadlessDriver::finish() {
    if (m_done) return;
    m_stage = Stage::Saving;
    if (!m_options.view.isEmpty()) m_window->showView(m_options.view);
    if (m_options.walkthroughStep > 0) {
        m_window->startWalkthrough();
        m_window->walkthrough()->setStep(m_options.walkthroughStep - 1);
    }
    if (m_options.screenshot.isEmpty()) {
        m_done = true;
        m_stage = Stage::Done;
        Q_EMIT finished(0);
        return;
    }
    m_window->resize(kShotWidth, kShotHeight);
    // Let layouts settle and the lazy views redraw at their final size before grabbing.
    for (int i = 0; i < 5; ++i) QApplication::processEvents();
    m_window->views()->refreshAll();
    if (!m_window->promptTextDock()->isHidden()) {  // shown, perhaps behind another tab
        m_window->showPromptText();
        m_window->promptTextView()->refreshNow();
    }
    QTimer::singleShot(50, this, [this] {
        if (m_done) return;
        QApplication::processEvents();
        const QImage img = m_window->grab().toImage();
        QString error;
        if (!saveImage(img, m_options.screenshot, &error)) {
            fail("cannot save the screenshot: " + error);
            return;
        }
        m_done = true;
        m_stage = Stage::Done;
        say(QString("screenshot %1 (%2x%3)").arg(m_options.screenshot).arg(img.width()).arg(img.height()));
        Q_EMIT finished(0);
    });
}

}  // namespace studio
