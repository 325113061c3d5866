// The SnapKV Studio main window, a frame: the view tabs (ViewTabs, from the view registry), the
// docks (prompt, parameters, display, walkthrough, the prompt as the model sees it), the banner, the
// menus (MainMenus), the status bar (RunStatus). It turns the panels' values into runs for
// RunController and shows what comes back; file work is FileActions', the views' list is the
// registry's. It holds no inference logic.
#pragma once

#include <QMainWindow>
#include <QPointer>
#include <QUrl>

#include "app/gui/state/param_state.h"

class QDockWidget;
class QMessageBox;

namespace studio {

class AnalysisState;
class CompareView;
class DocumentView;
class EvaluateView;
struct EvalCellPrompt;
class FileActions;
class HeadView;
class MainMenus;
class NoticeBanner;
class OverviewView;
class ParameterPanel;
class PromptPanel;
class PromptTextView;
class RunController;
class RunStatus;
class ViewTabs;
class Walkthrough;
struct WalkthroughStep;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Interactive windows show dialogs (non-modal); headless runs only emit errorShown.
    void setInteractive(bool on) { m_interactive = on; }
    bool interactive() const { return m_interactive; }
    // Headless: a prompt longer than the context is truncated without asking.
    void setAutoTruncate(bool on) { m_autoTruncate = on; }
    // Whether closing saves parameters, display and layout to QSettings and opening files adds them
    // to the recent lists. Off for runs driven by command-line options (headless runs, parameter
    // overrides, --session): they must not change what the next plain start restores.
    void setPersistSettings(bool on) { m_persist = on; }
    bool persistSettings() const { return m_persist; }

    // Actions, callable from tests and the headless driver.
    void setModelPath(const QString& path);
    void openModel(const QString& path);  // sets the path and loads now
    bool openDocument(const QString& path);
    void setDocumentText(const QString& text);
    void setQuestion(const QString& question);
    bool setQuestionFromArg(const QString& textOrPath);
    // run() and generate() return false when they refused at once (no model, empty document,
    // nothing prefilled): the error has been shown (errorShown) and no job was queued. True means
    // a job was queued and will end in runFinished/compareFinished, failed, cancelled or
    // contextExceeded.
    bool run();
    void cancel();
    bool generate(int maxTokens = -1);
    bool showView(const QString& name);  // a name of the view registry; false for another
    QString currentViewName() const;
    bool saveSession(const QString& path);
    bool loadSession(const QString& path);
    bool exportCurrentPlot(const QString& path);
    bool exportCurrentData(const QString& path);
    void startWalkthrough();
    // Help > Get a Model: where to get a model, and the fetch script on request (model_fetch.h).
    void showGetModel();
    // Drag & drop: model files/folders load, *snapkv*.json sessions open, anything else is a document.
    void openDroppedUrls(const QList<QUrl>& urls);
    // Opens an evaluation cell: its document and question, its configuration, prefill, then the
    // document view with the needle marked and the head that kept least of it focused.
    void openEvalCell(const EvalCellPrompt& cell);

    // Messages: the status line, and in an interactive window a non-modal dialog. Errors emit
    // errorShown, notes noteShown; info only sets the status line.
    void showError(const QString& title, const QString& message);
    void showNote(const QString& title, const QString& message);
    void showInfo(const QString& message);
    // The title names the model and the document.
    void updateTitle();

    AnalysisState* state() const { return m_state; }
    RunController* controller() const { return m_controller; }
    ParameterPanel* parameterPanel() const { return m_params; }
    PromptPanel* promptPanel() const { return m_prompt; }
    ViewTabs* views() const { return m_views; }
    OverviewView* overviewView() const;
    HeadView* headView() const;
    DocumentView* documentView() const;
    CompareView* compareView() const;
    EvaluateView* evaluateView() const;
    PromptTextView* promptTextView() const { return m_promptText; }
    QDockWidget* promptTextDock() const { return m_promptTextDock; }
    // Shows "Prompt as the model sees it" in front of the docks it shares a tab bar with.
    void showPromptText();
    Walkthrough* walkthrough() const { return m_walk; }
    QString lastError() const { return m_lastError; }
    QString lastNote() const { return m_lastNote; }
    QList<QAction*> shortcutActions() const;

Q_SIGNALS:
    // Every error the window shows (dialog or not): what went wrong and the dialog's title.
    void errorShown(const QString& message, const QString& title);
    // Something the user must know that stops nothing (a session's device is not available here
    // and another is used): shown in the status bar and, in an interactive window, a dialog.
    void noteShown(const QString& message);

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    QList<QDockWidget*> buildDocks();
    void connectController();
    void showDialog(int icon, const QString& title, const QString& message, const char* name);
    void onModelLoaded();
    void onRunFinished();
    void onPrefillChanged();
    void onContextExceeded(qint64 nTokens, qint64 nCtx, qint64 reserve);
    void onRetuneApplied();
    void onWalkthroughStep(const WalkthroughStep& step);
    void updateActions();
    bool runWith(bool truncateToFit);

    AnalysisState* m_state;
    RunController* m_controller;
    ViewTabs* m_views;
    ParameterPanel* m_params;
    PromptPanel* m_prompt;
    Walkthrough* m_walk;
    QDockWidget* m_walkDock;
    PromptTextView* m_promptText;
    QDockWidget* m_promptTextDock;
    NoticeBanner* m_banner;
    RunStatus* m_status;
    FileActions* m_files;
    MainMenus* m_menus;
    QPointer<QMessageBox> m_dialog;

    bool m_interactive = true;
    bool m_autoTruncate = false;
    bool m_persist = true;
    bool m_closing = false;
    QString m_lastError;
    QString m_lastNote;
};

}  // namespace studio
