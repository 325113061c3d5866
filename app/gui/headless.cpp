// Command-line configuration and the headless run/screenshot/bench driver.
#include "app/gui/headless.h"

#include <QApplication>
#include <QFileInfo>
#include <QImage>
#include <QTimer>

#include <algorithm>
#include <cstdio>

#include "app/gui/analysis_state.h"
#include "app/gui/compare_view.h"
#include "app/gui/document_view.h"
#include "app/gui/evaluate_view.h"
#include "app/gui/head_view.h"
#include "app/gui/main_window.h"
#include "app/gui/overview_view.h"
#include "app/gui/parameter_panel.h"
#include "app/gui/prompt_panel.h"
#include "app/gui/run_controller.h"
#include "app/gui/walkthrough.h"

namespace studio {

namespace {
constexpr int kShotWidth = 1600;
constexpr int kShotHeight = 1000;

void say(const QString& s) {
    std::fprintf(stderr, "snapkv-studio: %s\n", s.toLocal8Bit().constData());
    std::fflush(stderr);
}
}  // namespace

bool configureWindow(MainWindow& w, const AppOptions& o) {
    if (!o.session.isEmpty()) {
        if (!w.loadSession(o.session)) return false;
    } else {
        const QString model = !o.model.isEmpty() ? o.model : defaultModelPath();
        w.setModelPath(model.isEmpty() ? QString() : QFileInfo(model).absoluteFilePath());
        const QString doc = !o.document.isEmpty() ? o.document : findDatasetFile("sample_document.md");
        if (!doc.isEmpty() && !w.openDocument(doc)) return false;
        if (!o.question.isEmpty()) {
            if (!w.setQuestionFromArg(o.question)) return false;
        } else if (const QString q = findDatasetFile("sample_question.txt"); !q.isEmpty()) {
            w.setQuestionFromArg(q);
        }
    }
    ParamState p = w.parameterPanel()->state();
    try {
        if (o.budget) p.sel.budget = *o.budget, p.useRatio = false;
        if (o.window) p.sel.window = *o.window;
        if (o.kernel) p.sel.kernel = *o.kernel;
        if (!o.pooling.isEmpty()) p.sel.pooling = snapkv::parse_pooling(o.pooling.toStdString());
        if (!o.policy.isEmpty()) p.sel.policy = snapkv::parse_policy(o.policy.toStdString());
    } catch (const snapkv::Error& e) {
        say(QString::fromUtf8(e.what()));
        return false;
    }
    if (p != w.parameterPanel()->state()) w.parameterPanel()->setState(p, false);
    if (!o.results.isEmpty()) {
        QString error;
        if (!w.evaluateView()->loadResults(o.results, &error)) {
            say("cannot show the results: " + error);
            return false;
        }
        w.showView("evaluate");
    }
    if (!o.view.isEmpty()) w.showView(o.view);
    if (o.maxTokens > 0) w.compareView()->setMaxTokens(o.maxTokens);
    return true;
}

HeadlessDriver::HeadlessDriver(MainWindow* window, const AppOptions& options, QObject* parent)
    : QObject(parent), m_window(window), m_options(options) {
    auto* c = m_window->controller();
    connect(c, &RunController::runFinished, this, &HeadlessDriver::onRunFinished);
    connect(c, &RunController::compareFinished, this, &HeadlessDriver::finish);
    connect(c, &RunController::failed, this, [this](const QString& task, const QString& msg) {
        fail(QString("%1 failed: %2").arg(task, msg));
    });
    connect(c, &RunController::cancelled, this, [this](const QString& task) { fail(task + " cancelled"); });
    connect(c, &RunController::noteIssued, this, [](const QString& note) { say(note); });
    connect(m_window, &MainWindow::retuneTimed, this, [this](double select, double total) {
        if (m_benchLeft <= 0) return;
        QElapsedTimer t;
        t.start();
        // Worst case: every view redrawn, not just the visible one.
        m_window->overviewView()->refreshNow();
        m_window->headView()->refreshNow();
        m_window->documentView()->refreshNow();
        m_window->compareView()->refreshNow();
        m_benchSelects << select;
        m_benchTotals << total;
        m_benchAllViews << total + t.nsecsElapsed() / 1e6;
        --m_benchLeft;
        QTimer::singleShot(0, this, &HeadlessDriver::benchStep);
    });
}

void HeadlessDriver::start() {
    if (m_window->promptPanel()->modelPath().isEmpty()) {
        fail(QString("no model: pass --model or put %1 under models/").arg(defaultModelFileName()));
        return;
    }
    // A session that had results is already running again (MainWindow::loadSession).
    if (m_window->controller()->busy()) return;
    if (m_options.run) m_window->run();
    else finish();
}

void HeadlessDriver::onRunFinished() {
    if (m_done) return;
    if (m_options.benchRetune > 0 && m_benchLeft == 0 && m_benchTotals.isEmpty()) {
        m_benchLeft = m_options.benchRetune;
        benchStep();
        return;
    }
    if (m_options.view == "compare") {
        m_window->generate(m_options.maxTokens);
        return;
    }
    finish();
}

void HeadlessDriver::benchStep() {
    if (m_benchLeft <= 0) {
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
        std::printf("{\"tokens\": %d, \"changes\": %d, \"select_ms_median\": %.1f, "
                    "\"edit_to_visible_view_ms_median\": %.1f, \"edit_to_all_views_ms_median\": %.1f, "
                    "\"throttle_ms\": %d, \"samples_select_visible_all\": [%s]}\n",
                    n, static_cast<int>(m_benchTotals.size()), median(m_benchSelects), median(m_benchTotals),
                    median(m_benchAllViews), m_window->parameterPanel()->debounceMs(),
                    samples.join(", ").toLocal8Bit().constData());
        std::fflush(stdout);
        m_benchTotals << -1;   // mark done
        onRunFinished();
        return;
    }
    // Alternate between two budgets below the prompt length so every change re-selects.
    auto* panel = m_window->parameterPanel();
    const int64_t L = m_window->state()->prefill().n_tokens;
    const int64_t b = (m_benchLeft % 2) ? std::max<int64_t>(64, L / 4) : std::max<int64_t>(96, L / 2);
    panel->edit(ParameterPanel::FBudget, static_cast<double>(b));
    panel->flush();
}

void HeadlessDriver::fail(const QString& message) {
    if (m_done) return;
    m_done = true;
    say(message);
    Q_EMIT finished(1);
}

void HeadlessDriver::finish() {
    if (m_done) return;
    m_done = true;
    if (!m_options.view.isEmpty()) m_window->showView(m_options.view);
    if (m_options.walkthroughStep > 0) {
        m_window->startWalkthrough();
        m_window->walkthrough()->setStep(m_options.walkthroughStep - 1);
    }
    if (m_options.screenshot.isEmpty()) {
        Q_EMIT finished(0);
        return;
    }
    m_window->resize(kShotWidth, kShotHeight);
    // Let layouts settle and the lazy views redraw at their final size before grabbing.
    for (int i = 0; i < 5; ++i) QApplication::processEvents();
    m_window->overviewView()->refreshNow();
    m_window->headView()->refreshNow();
    m_window->documentView()->refreshNow();
    m_window->compareView()->refreshNow();
    m_window->evaluateView()->refreshNow();
    QTimer::singleShot(50, this, [this] {
        QApplication::processEvents();
        const QImage img = m_window->grab().toImage();
        if (img.isNull() || !img.save(m_options.screenshot)) {
            say(QString("cannot write the screenshot %1").arg(m_options.screenshot));
            Q_EMIT finished(1);
            return;
        }
        say(QString("screenshot %1 (%2x%3)").arg(m_options.screenshot).arg(img.width()).arg(img.height()));
        Q_EMIT finished(0);
    });
}

}  // namespace studio
