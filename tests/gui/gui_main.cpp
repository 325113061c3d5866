// Catch2 v2 main for the GUI tests: the apps' runtime set-up, then one QApplication (offscreen
// unless QT_QPA_PLATFORM says otherwise) and settings in a scratch folder, never the user's.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <QApplication>
#include <QTemporaryDir>

#include "app/gui/state/gui_types.h"
#include "core/session/runtime.h"

int main(int argc, char** argv) {
    snapkv::init_runtime(argc, argv);
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QTemporaryDir config;
    qputenv("XDG_CONFIG_HOME", config.path().toLocal8Bit());
    Q_INIT_RESOURCE(studio);
    QApplication app(argc, argv);
    QApplication::setOrganizationName("SnapKV-tests");
    QApplication::setApplicationName("SnapKV Studio tests");
    studio::registerMetaTypes();
    return Catch::Session().run(argc, argv);
}
