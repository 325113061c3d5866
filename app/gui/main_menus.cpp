// MainMenus: the window's actions, menus and toolbar (see main_menus.h).
#include "app/gui/main_menus.h"

#include <QAction>
#include <QDockWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QToolBar>
#include <QUndoStack>

#include "app/gui/action_util.h"
#include "app/gui/file_actions.h"
#include "app/gui/files/roofline_file.h"
#include "app/gui/main_window.h"
#include "app/gui/panels/model_menu.h"
#include "app/gui/panels/parameter_panel.h"
#include "app/gui/panels/prompt_panel.h"
#include "app/gui/panels/shortcuts_dialog.h"
#include "app/gui/state/app_paths.h"
#include "app/gui/view_tabs.h"
#include "app/gui/views/head_view.h"
#include "core/session/runtime.h"

namespace studio {

MainMenus::MainMenus(MainWindow* window, FileActions* files, const QList<QDockWidget*>& docks, QDockWidget* promptText)
    : QObject(window), m_w(window), m_files(files) {
    buildActions();
    buildMenus(docks, promptText);
}

void MainMenus::buildActions() {
    MainWindow* w = m_w;
    m_quit = makeAction(w, "&Quit", {QKeySequence::Quit}, QStyle::SP_DialogCloseButton, "Quit SnapKV Studio");
    m_run = makeAction(w, "&Run", {QKeySequence("F5"), QKeySequence("Ctrl+R")}, QStyle::SP_MediaPlay,
                       "Load the model if needed, prefill the prompt, select");
    m_generate = makeAction(w, "&Generate && Compare", {QKeySequence("Ctrl+G")}, QStyle::SP_MediaSeekForward,
                            "Generate with the full and the compressed cache and compare");
    m_cancel = makeAction(w, "&Cancel", {QKeySequence("Esc")}, QStyle::SP_MediaStop, "Cancel the running job");
    m_undo = w->parameterPanel()->undoStack()->createUndoAction(this, "&Undo parameter change");
    m_undo->setShortcuts(QKeySequence::Undo);
    m_undo->setIcon(w->style()->standardIcon(QStyle::SP_ArrowBack));
    m_undo->setIconText("Undo");
    m_redo = w->parameterPanel()->undoStack()->createRedoAction(this, "&Redo parameter change");
    m_redo->setShortcuts({QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")});
    m_redo->setIcon(w->style()->standardIcon(QStyle::SP_ArrowForward));
    m_redo->setIconText("Redo");
    w->addAction(m_undo);
    w->addAction(m_redo);
    // The views' actions come from the registry (ViewTabs); the window owns their shortcuts too.
    for (QAction* a : w->views()->viewActions()) w->addAction(a);
    m_walkthrough = makeAction(w, "&Walkthrough", {QKeySequence("F2")}, QStyle::SP_MessageBoxInformation,
                               "Step through SnapKV: prefill, window, votes, pooling, top-k, cache, generation");
    m_shortcuts = makeAction(w, "&Keyboard Shortcuts", {QKeySequence::HelpContents}, QStyle::SP_DialogHelpButton,
                             "List the keyboard shortcuts");
    m_about = makeAction(w, "&About SnapKV Studio", {}, QStyle::SP_MessageBoxQuestion, "About");
    m_resetZoom = makeAction(w, "Reset &Zoom", {QKeySequence("Ctrl+0")}, QStyle::SP_BrowserReload,
                             "Show the whole prompt in the head view");

    connect(m_quit, &QAction::triggered, w, &QWidget::close);
    connect(m_run, &QAction::triggered, w, &MainWindow::run);
    connect(m_generate, &QAction::triggered, w, [w] { w->generate(); });
    connect(m_cancel, &QAction::triggered, w, &MainWindow::cancel);
    connect(m_walkthrough, &QAction::triggered, w, &MainWindow::startWalkthrough);
    connect(m_resetZoom, &QAction::triggered, w, [w] { w->headView()->resetZoom(); });
    connect(m_shortcuts, &QAction::triggered, w, [this, w] {
        auto* d = new ShortcutsDialog(shortcutActions(), w);
        d->setAttribute(Qt::WA_DeleteOnClose);
        d->open();
    });
    connect(m_about, &QAction::triggered, w, [w] {
        QMessageBox::about(w, "About SnapKV Studio",
                           "<b>SnapKV Studio</b><br>See and tune SnapKV KV-cache compression "
                           "(Li et al. 2024, arXiv:2404.14469): per-head attention of the observation window, "
                           "votes, pooling, kept clusters, and full vs compressed generation.<br><br>"
                           "Attention is not explanation: the views show what the cache keeps, not why "
                           "the model answers.<br><br>" +
                               rooflineSummaryHtml(QString::fromStdString(snapkv::roofline_state_path())));
    });
}

QList<QAction*> MainMenus::shortcutActions() const {
    QList<QAction*> l = {m_run, m_generate, m_cancel};
    const QList<QAction*> files = m_files->shortcutActions();
    l << files;
    l << m_undo << m_redo << m_w->views()->viewActions() << m_walkthrough << m_shortcuts << m_quit;
    for (QAction* a : m_w->actions())
        if (!l.contains(a) && !a->shortcuts().isEmpty()) l << a;
    return l;
}

void MainMenus::update(bool busy, bool hasPrefill) {
    m_cancel->setEnabled(busy);
    m_generate->setEnabled(!busy && hasPrefill);
}

void MainMenus::buildMenus(const QList<QDockWidget*>& docks, QDockWidget* promptText) {
    QMenuBar* bar = m_w->menuBar();
    m_files->fillFileMenu(bar->addMenu("&File"), m_quit);

    // Model: the models fetched into models/ (re-read each time the menu opens), then the dialogs.
    m_modelMenu = bar->addMenu("&Model");
    m_modelMenu->setObjectName("modelMenu");
    m_modelMenu->setToolTipsVisible(true);
    connect(m_modelMenu, &QMenu::aboutToShow, this, &MainMenus::rebuildModelMenu);
    rebuildModelMenu();

    QMenu* edit = bar->addMenu("&Edit");
    edit->addAction(m_undo);
    edit->addAction(m_redo);

    QMenu* runMenu = bar->addMenu("&Run");
    runMenu->addAction(m_run);
    runMenu->addAction(m_generate);
    runMenu->addAction(m_cancel);

    QMenu* view = bar->addMenu("&View");
    view->addActions(m_w->views()->viewActions());
    view->addSeparator();
    for (QDockWidget* d : docks) view->addAction(d->toggleViewAction());
    QAction* shown = promptText->toggleViewAction();
    shown->setText("&Prompt as the Model Sees It");
    shown->setShortcut(QKeySequence("Ctrl+Shift+P"));
    shown->setStatusTip("The prompt after the chat template, token by token, special tokens marked");
    view->addAction(shown);
    m_w->addAction(shown);

    QMenu* help = bar->addMenu("&Help");
    help->addAction(m_walkthrough);
    help->addAction(m_shortcuts);
    help->addAction("&Get a Model…", m_w, &MainWindow::showGetModel)
        ->setStatusTip("Where to get a model; downloads the default one (SmolLM2-135M) on request");
    help->addAction(m_about);

    QToolBar* tb = m_w->addToolBar("Main");
    tb->setObjectName("mainToolbar");
    tb->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    tb->addAction(m_run);
    tb->addAction(m_generate);
    tb->addAction(m_cancel);
    tb->addSeparator();
    tb->addAction(m_undo);
    tb->addAction(m_redo);
    tb->addSeparator();
    tb->addAction(m_files->openModelAction());
    tb->addAction(m_files->openDocumentAction());
    tb->addAction(m_files->exportPlotAction());
    tb->addSeparator();
    tb->addAction(m_walkthrough);
}

void MainMenus::rebuildModelMenu() {
    fillModelMenu(m_modelMenu, modelFolders(), m_w->promptPanel()->modelPath(),
                  [this](const QString& path) { m_w->openModel(path); });
    m_modelMenu->addSeparator();
    m_modelMenu->addAction(m_files->openModelAction());
    m_modelMenu->addAction(m_files->openModelFolderAction());
}

}  // namespace studio
