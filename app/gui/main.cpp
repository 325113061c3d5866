// snapkv-studio entry point: runtime set-up, command line, main window, optional headless run.
#include <QApplication>
#include <QTimer>

#include <cstdio>
#include <cstring>

#include "app/gui/headless.h"
#include "app/gui/main_window.h"
#include "app/gui/panels/model_fetch.h"
#include "app/gui/panels/prompt_panel.h"
#include "app/gui/panels/walkthrough.h"
#include "core/session/runtime.h"

#ifndef SNAPKV_VERSION
#define SNAPKV_VERSION "0.0.0"
#endif

int main(int argc, char** argv) {
    // The build writes the man page from the option definitions; no display is needed for that.
    if (argc == 2 && std::strcmp(argv[1], "--man-page") == 0) {
        std::fputs(studio::manPage(SNAPKV_VERSION).toUtf8().constData(), stdout);
        return 0;
    }
    snapkv::init_runtime(argc, argv);
    Q_INIT_RESOURCE(studio);
    // Read the command line before QApplication does: it consumes "-session"/"--session" (X11
    // session management), which is also our --session option.
    QStringList rawArgs;
    for (int i = 0; i < argc; ++i) rawArgs << QString::fromLocal8Bit(argv[i]);
    QApplication app(argc, argv);
    QApplication::setOrganizationName("SnapKV");
    QApplication::setApplicationName("SnapKV Studio");
    QApplication::setApplicationVersion(SNAPKV_VERSION);
    // Wayland compositors and docks match the window to the installed .desktop entry by this name.
    QGuiApplication::setDesktopFileName("org.snapkv.Studio");

    const studio::AppOptions options = studio::parseOptions(rawArgs);
    if (!options.error.isEmpty()) {
        std::fprintf(stderr, "snapkv-studio: %s\n", options.error.toLocal8Bit().constData());
        return 2;
    }
    const bool headless = options.headless();
    studio::MainWindow window;
    window.setInteractive(!headless);
    window.setAutoTruncate(headless);
    // Runs driven by command-line options leave the saved settings and recent files alone.
    window.setPersistSettings(!options.overridesSettings());
    if (headless) {
        // The driver listens before anything is loaded, so every error (a bad document, a broken
        // session) ends the run with its reason on stderr and exit code 1.
        studio::HeadlessDriver driver(&window, options);
        if (!driver.configure()) return 1;
        window.resize(1600, 1000);
        window.show();
        QObject::connect(&driver, &studio::HeadlessDriver::finished, &app, [&](int code) {
            window.close();
            QApplication::exit(code);
        });
        QTimer::singleShot(0, &driver, &studio::HeadlessDriver::start);
        return app.exec();
    }
    // Bad files show in the window; parameters that clash are only said here (the defaults stay).
    if (QString error; !studio::configureWindow(window, options, &error))
        std::fprintf(stderr, "snapkv-studio: %s\n", error.toLocal8Bit().constData());
    window.resize(1600, 1000);
    window.show();
    if (options.getModel) QTimer::singleShot(0, &window, &studio::MainWindow::showGetModel);
    if (options.walkthroughStep > 0) {
        // The walkthrough runs the pipeline itself when nothing is prefilled yet.
        const int step = options.walkthroughStep - 1;
        QTimer::singleShot(0, &window, [&window, step] {
            window.startWalkthrough();
            window.walkthrough()->setStep(step);
        });
    } else if (options.run) {
        QTimer::singleShot(0, &window, &studio::MainWindow::run);
    } else if (!window.promptPanel()->modelPath().isEmpty()) {
        // Load the model right away so that Run only has to prefill.
        const QString model = window.promptPanel()->modelPath();
        QTimer::singleShot(0, &window, [&window, model] { window.openModel(model); });
    }
    return app.exec();
}
