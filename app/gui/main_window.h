// The SnapKV Studio main window: menus, toolbar, docks (prompt, parameters, display options,
// walkthrough), the four linked views in tabs, status bar with progress and Cancel. It wires
// widgets to RunController and AnalysisState; it holds no inference logic.
#pragma once

#include <QElapsedTimer>
#include <QMainWindow>
#include <QPointer>

#include <QUrl>
#include <optional>
#include <vector>

#include "app/gui/state/param_state.h"

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QMessageBox;
class QProgressBar;
class QPushButton;
class QTabWidget;

namespace studio {

class AnalysisState;
class CompareView;
class DisplayPanel;
class DocumentView;
class EvaluateView;
struct EvalCellPrompt;
class HeadView;
class OverviewView;
class ParameterPanel;
class PromptPanel;
class PromptTextView;
class RunController;
class Walkthrough;
struct WalkthroughStep;
struct SessionFile;

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
    bool showView(const QString& name);  // overview | head | document | compare
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

    AnalysisState* state() const { return m_state; }
    RunController* controller() const { return m_controller; }
    ParameterPanel* parameterPanel() const { return m_params; }
    PromptPanel* promptPanel() const { return m_prompt; }
    OverviewView* overviewView() const { return m_overview; }
    HeadView* headView() const { return m_head; }
    PromptTextView* promptTextView() const { return m_promptText; }
    QDockWidget* promptTextDock() const { return m_promptTextDock; }
    // Shows "Prompt as the model sees it" in front of the docks it shares a tab bar with.
    void showPromptText();
    DocumentView* documentView() const { return m_document; }
    CompareView* compareView() const { return m_compare; }
    EvaluateView* evaluateView() const { return m_evaluate; }
    // Opens an evaluation cell: its document and question, its configuration, prefill, then the
    // document view with the needle marked and the head that kept least of it focused.
    void openEvalCell(const EvalCellPrompt& cell);
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
    // Slider change to repainted views: selectMs in the worker, totalMs from the first edit
    // (debounce included) to the visible view redrawn.
    void retuneTimed(double selectMs, double totalMs);

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void buildActions();
    void buildMenus();
    void buildDocks();
    void buildStatusBar();
    void connectController();
    void restoreSettings();
    void saveSettings() const;
    void addRecent(const QString& key, const QString& path);
    void rebuildRecentMenu(QMenu* menu, const QString& key);
    void rebuildModelMenu();
    SessionFile currentSession() const;
    void applySession(const SessionFile& s);

    void showError(const QString& title, const QString& message);
    void showInfo(const QString& message, int ms = 6000);
    void showNote(const QString& title, const QString& message);
    void onBusyChanged(bool busy, const QString& task);
    void onProgress(const QString& stage, qint64 done, qint64 total);
    void onParamsChanged(const ParamState& params);
    void onModelLoaded();
    void onPrefillChanged();
    void onContextExceeded(qint64 nTokens, qint64 nCtx, qint64 reserve);
    void onRetuneApplied(double ms, const ParamState& params);
    void onWalkthroughStep(const WalkthroughStep& step);
    void updateTitle();
    void showBanner(const QString& text);
    void updateActions();
    bool runWith(bool truncateToFit);

    void onOpenModel();
    void onOpenDocument();
    void onSaveSession();
    void onLoadSession();
    void onExportPlot();
    void onExportData();

    AnalysisState* m_state;
    RunController* m_controller;
    ParameterPanel* m_params;
    DisplayPanel* m_displayPanel;
    PromptPanel* m_prompt;
    OverviewView* m_overview;
    HeadView* m_head;
    DocumentView* m_document;
    CompareView* m_compare;
    EvaluateView* m_evaluate;
    Walkthrough* m_walk;
    QTabWidget* m_tabs;
    QDockWidget* m_promptDock;
    QDockWidget* m_paramsDock;
    QDockWidget* m_displayDock;
    QDockWidget* m_walkDock;
    PromptTextView* m_promptText;
    QDockWidget* m_promptTextDock;
    QProgressBar* m_progress;
    QElapsedTimer m_stageClock;  // since the current progress stage began (rate and time left)
    QString m_stage;
    QPushButton* m_cancelButton;
    QLabel* m_statusText;
    QLabel* m_timing;
    QMenu* m_recentModels;
    QMenu* m_modelMenu;
    QAction* m_actOpenModelFolder;
    QMenu* m_recentDocuments;
    QMenu* m_recentSessions;
    QPointer<QMessageBox> m_dialog;

    QAction* m_actOpenModel;
    QAction* m_actOpenDocument;
    QAction* m_actSaveSession;
    QAction* m_actLoadSession;
    QAction* m_actExportPlot;
    QAction* m_actExportData;
    QAction* m_actQuit;
    QAction* m_actRun;
    QAction* m_actGenerate;
    QAction* m_actCancel;
    QAction* m_actUndo;
    QAction* m_actRedo;
    QAction* m_actViews[4];
    QAction* m_actEvaluate;
    QAction* m_actWalkthrough;
    QAction* m_actShortcuts;
    QAction* m_actAbout;

    bool m_interactive = true;
    bool m_autoTruncate = false;
    bool m_persist = true;
    bool m_closing = false;
    QString m_lastError;
    QString m_lastNote;
    double m_pendingEditMs = 0;
    QElapsedTimer m_retuneClock;
    std::optional<ParamState> m_editParams;  // the edit being timed, until its result is drawn
    int m_pendingLayer = -1;                 // focus restored from a session once its run has finished
    int m_pendingHead = -1;
    // An evaluation cell's needle (RULER: needles and answers), marked once its run finished; with
    // m_pendingLeastKept the head that kept least of the needles is focused then.
    struct PendingMark {
        int64_t first = -1, last = -1;
        QString label;
    };
    std::vector<PendingMark> m_pendingMarks;
    bool m_pendingLeastKept = false;
    QWidget* m_banner;
    QLabel* m_bannerText;
};

}  // namespace studio
