// The view registry is the one list of views: every row becomes a tab with its title, a View-menu
// entry with its shortcut (in the shortcuts dialog too), a name showView, session files and --view
// accept, and --help names; a name outside the registry is refused everywhere.
#include <catch2/catch.hpp>

#include <QAction>
#include <QMenu>
#include <QMenuBar>
#include <QTemporaryDir>

#include "app/gui/app_options.h"
#include "app/gui/files/session_file.h"
#include "app/gui/panels/walkthrough.h"
#include "app/gui/view_registry.h"
#include "app/gui/view_tabs.h"
#include "app/gui/views/lazy_view.h"
#include "gui_test_util.h"

using namespace guitest;

namespace {

QMenu* viewMenu(studio::MainWindow& w) {
    for (QAction* a : w.menuBar()->actions())
        if (a->text() == "&View") return a->menu();
    return nullptr;
}

}  // namespace

TEST_CASE("Every registered view is a tab with a View-menu entry and its shortcut", "[gui]") {
    auto w = makeWindow(64);
    const auto& specs = studio::viewSpecs();
    studio::ViewTabs* tabs = w->views();
    REQUIRE(tabs->count() == static_cast<int>(specs.size()));
    REQUIRE(tabs->viewActions().size() == static_cast<int>(specs.size()));
    QMenu* menu = viewMenu(*w);
    REQUIRE(menu != nullptr);
    const QList<QAction*> shortcuts = w->shortcutActions();
    for (int i = 0; i < static_cast<int>(specs.size()); ++i) {
        const studio::ViewSpec& spec = specs[i];
        INFO("view " << spec.name);
        CHECK(tabs->tabText(i) == spec.title);
        QAction* a = tabs->viewActions()[i];
        CHECK(a->text() == spec.menuText);
        CHECK(a->shortcut() == QKeySequence(spec.shortcut));
        CHECK(menu->actions().contains(a));
        CHECK(shortcuts.contains(a));
        a->trigger();
        CHECK(w->currentViewName() == spec.name);
        CHECK(tabs->currentWidget() == tabs->views()[i]);
        for (QAction* other : tabs->viewActions()) CHECK(other->isChecked() == (other == a));
    }
}

TEST_CASE("A view's name shows it, and a name outside the registry is refused", "[gui]") {
    auto w = makeWindow(64);
    for (const QString& name : studio::viewNames()) {
        INFO("view " << name.toStdString());
        REQUIRE(w->showView(name));
        CHECK(w->currentViewName() == name);
    }
    const QString before = w->currentViewName();
    CHECK_FALSE(w->showView("nonesuch"));
    CHECK(w->currentViewName() == before);
}

TEST_CASE("The --view option accepts exactly the registry's names and --help lists them", "[gui]") {
    for (const QString& name : studio::viewNames()) {
        const studio::AppOptions o = studio::parseOptions({"snapkv-studio", "--view", name});
        INFO("view " << name.toStdString());
        CHECK(o.error.isEmpty());
        CHECK(o.view == name);
    }
    const studio::AppOptions bad = studio::parseOptions({"snapkv-studio", "--view", "nonesuch"});
    CHECK(bad.error.contains("--view \"nonesuch\" is not allowed; allowed: " + studio::viewNames().join(", ")));
    QString help;
    for (const QCommandLineOption& o : studio::applicationOptions())
        if (o.names().contains("view")) help = o.description();
    CHECK(help == QString("View to show: %1.").arg(studio::viewNamesText()));
    for (const QString& name : studio::viewNames()) CHECK(help.contains(name));
}

TEST_CASE("A session file keeps the current view and refuses one the registry lacks", "[gui]") {
    auto w = makeWindow(64);
    QTemporaryDir dir;
    const QString path = dir.filePath("views.snapkv.json");
    const QString last = studio::viewNames().last();
    REQUIRE(w->showView(last));
    REQUIRE(w->saveSession(path));
    REQUIRE(w->showView(studio::viewNames().first()));
    REQUIRE(w->loadSession(path));
    CHECK(w->currentViewName() == last);

    studio::SessionFile s;
    s.view = "nonesuch";
    QString error;
    CHECK_FALSE(studio::SessionFile::fromJson(s.toJson(), QString(), studio::viewNames(), &error));
    CHECK(error.contains("view"));
    CHECK(error.contains("nonesuch"));
    studio::SessionFile none;  // no view saved: the first view
    const auto back = studio::SessionFile::fromJson(none.toJson(), QString(), studio::viewNames(), &error);
    REQUIRE(back.has_value());
    CHECK(back->view == studio::viewNames().first());
}

TEST_CASE("Every walkthrough step shows a registered view", "[gui]") {
    for (const studio::WalkthroughStep& step : studio::walkthroughSteps()) {
        INFO(step.title.toStdString());
        CHECK(studio::findViewSpec(step.view) != nullptr);
    }
}
