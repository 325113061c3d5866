// The menu bar and the toolbar of the main window, and the actions that are not a file's or a
// view's: Run, Generate, Cancel, Undo/Redo of parameter edits, the walkthrough, the shortcuts
// dialog, About, Reset Zoom, Quit. The View menu lists the view registry's views (ViewTabs) and the
// docks. What the actions do is the window's; this object only builds and enables them.
#pragma once

#include <QList>
#include <QObject>

class QAction;
class QDockWidget;
class QMenu;

namespace studio {

class FileActions;
class MainWindow;

class MainMenus : public QObject {
    Q_OBJECT
public:
    // docks: the View menu's dock entries in order; promptText: the "as the model sees it" dock.
    MainMenus(MainWindow* window, FileActions* files, const QList<QDockWidget*>& docks, QDockWidget* promptText);

    // Every action with a shortcut, the main ones first (Help > Keyboard Shortcuts).
    QList<QAction*> shortcutActions() const;
    // Enables Cancel while a job runs and Generate once a prompt is prefilled.
    void update(bool busy, bool hasPrefill);

private:
    void buildActions();
    void buildMenus(const QList<QDockWidget*>& docks, QDockWidget* promptText);
    void rebuildModelMenu();

    MainWindow* m_w;
    FileActions* m_files;
    QMenu* m_modelMenu = nullptr;
    QAction* m_run;
    QAction* m_generate;
    QAction* m_cancel;
    QAction* m_undo;
    QAction* m_redo;
    QAction* m_walkthrough;
    QAction* m_shortcuts;
    QAction* m_about;
    QAction* m_resetZoom;
    QAction* m_quit;
};

}  // namespace studio
