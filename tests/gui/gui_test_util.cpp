// GUI test helpers.
#include "gui_test_util.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QProcess>
#include <QThread>
#include <QTimer>

#include "app/gui/state/analysis_state.h"
#include "app/gui/views/compare_view.h"
#include "app/gui/workers/run_controller.h"

namespace guitest {

QString dataPath(const QString& name) { return QString(SNAPKV_TEST_DATA) + "/" + name; }
QString guiDataPath(const QString& name) { return QString(SNAPKV_TEST_DATA) + "/../gui/data/" + name; }
QString modelPath() { return dataPath("stories260K.gguf"); }

QString storyText() {
    QFile f(guiDataPath("short_story.txt"));
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QString::fromUtf8(f.readAll());
}

std::unique_ptr<studio::MainWindow> makeWindow(int budget, bool interactive) {
    auto w = std::make_unique<studio::MainWindow>();
    w->setInteractive(interactive);
    w->setModelPath(modelPath());
    w->setDocumentText(storyText());
    w->setQuestion("What did Lily find on the beach?");
    // Per query head (official SnapKV), so that tests address query heads 0..7; the app's default
    // is per KV head ("The default setting shrinks the cache ...").
    studio::ParamState p;
    p.sel.budget = budget;
    p.sel.gqa = snapkv::GqaMode::QueryHead;
    w->parameterPanel()->setState(p, false);
    w->compareView()->setMaxTokens(8);
    w->resize(1400, 900);
    w->show();
    settle();
    return w;
}

namespace {

template <typename Setup>
Outcome waitFor(studio::MainWindow& w, int timeoutMs, Setup&& start, bool compare) {
    Outcome out{false, "timeout"};
    QEventLoop loop;
    auto* c = w.controller();
    QList<QMetaObject::Connection> cs;
    auto done = [&](bool ok, const QString& what) {
        out = {ok, what};
        loop.quit();
    };
    if (compare) {
        cs << QObject::connect(c, &studio::RunController::compareFinished, &loop, [&] { done(true, "finished"); });
    } else {
        cs << QObject::connect(c, &studio::RunController::runFinished, &loop, [&] { done(true, "finished"); });
    }
    cs << QObject::connect(c, &studio::RunController::failed, &loop,
                           [&](const QString& t, const QString& m) { done(false, "failed: " + t + ": " + m); });
    cs << QObject::connect(c, &studio::RunController::cancelled, &loop,
                           [&](const QString& t) { done(false, "cancelled: " + t); });
    cs << QObject::connect(c, &studio::RunController::contextExceeded, &loop, [&] { done(false, "context"); });
    QTimer::singleShot(timeoutMs, &loop, [&] { done(false, "timeout"); });
    start();
    if (out.what == "timeout") loop.exec();
    for (const auto& x : cs) QObject::disconnect(x);
    settle();
    return out;
}

}  // namespace

Outcome runAndWait(studio::MainWindow& w, int timeoutMs) {
    return waitFor(
        w, timeoutMs, [&] { w.run(); }, false);
}

Outcome waitRun(studio::MainWindow& w, int timeoutMs) {
    return waitFor(
        w, timeoutMs, [] {}, false);
}

Outcome generateAndWait(studio::MainWindow& w, int maxTokens, int timeoutMs) {
    return waitFor(
        w, timeoutMs, [&] { w.generate(maxTokens); }, true);
}

Outcome editAndWait(studio::MainWindow& w, studio::ParameterPanel::Field field, double value, int timeoutMs) {
    Outcome out{false, "timeout"};
    QEventLoop loop;
    auto* c = w.controller();
    auto a = QObject::connect(c, &studio::RunController::retuneApplied, &loop, [&] {
        out = {true, "finished"};
        loop.quit();
    });
    auto b = QObject::connect(c, &studio::RunController::retuneFailed, &loop, [&](const QString& m) {
        out = {false, "failed: " + m};
        loop.quit();
    });
    QTimer::singleShot(timeoutMs, &loop, [&] { loop.quit(); });
    const auto before = w.parameterPanel()->state();
    w.parameterPanel()->edit(field, value);
    if (w.parameterPanel()->state() == before) {
        out = {false, "no change"};
    } else {
        w.parameterPanel()->flush();
        loop.exec();
    }
    QObject::disconnect(a);
    QObject::disconnect(b);
    settle();
    return out;
}

QString studioPath() { return QString(SNAPKV_STUDIO_PATH); }

ProcessResult runStudio(const QStringList& args, const QString& configHome, int timeoutMs,
                        std::function<void()> childSetup) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    env.insert("XDG_CONFIG_HOME", configHome);
    env.remove("SNAPKV_MODEL");
    p.setProcessEnvironment(env);
    if (childSetup) p.setChildProcessModifier(childSetup);
    p.start(studioPath(), args);
    ProcessResult r;
    if (!p.waitForStarted(30000)) {
        r.err = "did not start: " + p.errorString();
        return r;
    }
    if (!p.waitForFinished(timeoutMs)) {
        r.hung = true;
        p.kill();
        p.waitForFinished(10000);
    } else if (p.exitStatus() == QProcess::NormalExit) {
        r.code = p.exitCode();
    }
    r.out = QString::fromLocal8Bit(p.readAllStandardOutput());
    r.err = QString::fromLocal8Bit(p.readAllStandardError());
    return r;
}

void settle() {
    for (int i = 0; i < 4; ++i) QApplication::processEvents(QEventLoop::AllEvents, 50);
}

bool settleUntil(const std::function<bool()>& done, int timeoutMs) {
    QElapsedTimer clock;
    clock.start();
    while (!done() && clock.elapsed() < timeoutMs) {
        settle();
        QThread::msleep(5);  // the worker's turn, without spinning on an empty event queue
    }
    return done();
}

}  // namespace guitest
