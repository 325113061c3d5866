// MainWindow: construction (actions, menus, docks, status bar), settings, drag & drop, and the
// wiring between widgets, RunController and AnalysisState. File and run handlers live in
// main_window_actions.cpp.
#include "app/gui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QUndoStack>
#include <QVBoxLayout>

#include "app/gui/files/session_file.h"
#include "app/gui/panels/display_panel.h"
#include "app/gui/panels/model_menu.h"
#include "app/gui/panels/parameter_panel.h"
#include "app/gui/panels/prompt_panel.h"
#include "app/gui/panels/shortcuts_dialog.h"
#include "app/gui/panels/walkthrough.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/state/app_options.h"
#include "app/gui/views/compare_view.h"
#include "app/gui/views/document_view.h"
#include "app/gui/views/evaluate_view.h"
#include "app/gui/views/head_view.h"
#include "app/gui/views/overview_view.h"
#include "app/gui/views/prompt_text_view.h"
#include "app/gui/workers/run_controller.h"

namespace studio {

namespace {
const QStringList kViewNames = {"overview", "head", "document", "compare"};
constexpr int kMaxRecent = 8;
}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setObjectName("SnapKVStudio");
    setWindowIcon(QIcon(":/icons/snapkv-studio.svg"));
    setAcceptDrops(true);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
    m_state = new AnalysisState(this);
    m_controller = new RunController(m_state, this);

    m_overview = new OverviewView(m_state);
    m_head = new HeadView(m_state);
    m_document = new DocumentView(m_state);
    m_compare = new CompareView(m_state);
    m_tabs = new QTabWidget;
    m_tabs->setObjectName("viewTabs");
    m_tabs->addTab(m_overview, "Overview (layers x heads)");
    m_tabs->addTab(m_head, "Head detail");
    m_tabs->addTab(m_document, "Document");
    m_tabs->addTab(m_compare, "Compare full vs compressed");
    m_evaluate = new EvaluateView;
    m_tabs->addTab(m_evaluate, "Evaluate (needle, sweeps, RULER)");

    m_banner = new QWidget;
    m_banner->setStyleSheet("background:#fff4ce; border-bottom:1px solid #e0c96a");
    auto* bl = new QHBoxLayout(m_banner);
    bl->setContentsMargins(8, 4, 8, 4);
    m_bannerText = new QLabel;
    m_bannerText->setWordWrap(true);
    bl->addWidget(m_bannerText, 1);
    auto* bannerOpen = new QPushButton("Open Model…");
    bl->addWidget(bannerOpen);
    m_banner->hide();
    auto* central = new QWidget;
    auto* cl = new QVBoxLayout(central);
    cl->setContentsMargins(0, 0, 0, 0);
    cl->setSpacing(0);
    cl->addWidget(m_banner);
    cl->addWidget(m_tabs, 1);
    setCentralWidget(central);

    buildDocks();
    buildActions();
    buildMenus();
    buildStatusBar();
    connectController();
    connect(bannerOpen, &QPushButton::clicked, this, &MainWindow::onOpenModel);
    m_prompt->setCudaAvailable(snapkv::Session::cuda_available());
    restoreSettings();
    updateTitle();
    updateActions();
}

MainWindow::~MainWindow() { m_controller->shutdown(); }

void MainWindow::buildDocks() {
    m_params = new ParameterPanel;
    m_params->setObjectName("parameterPanel");
    m_displayPanel = new DisplayPanel(m_state);
    m_prompt = new PromptPanel;
    m_walk = new Walkthrough;

    auto dock = [this](const QString& title, const QString& name, QWidget* w, Qt::DockWidgetArea area) {
        auto* d = new QDockWidget(title, this);
        d->setObjectName(name);
        d->setWidget(w);
        d->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                       QDockWidget::DockWidgetClosable);
        addDockWidget(area, d);
        return d;
    };
    m_paramsDock = dock("Parameters (live)", "parametersDock", m_params, Qt::LeftDockWidgetArea);
    m_promptDock = dock("Prompt and model", "promptDock", m_prompt, Qt::LeftDockWidgetArea);
    m_displayDock = dock("Display", "displayDock", m_displayPanel, Qt::LeftDockWidgetArea);
    tabifyDockWidget(m_promptDock, m_displayDock);
    m_promptDock->raise();
    m_walkDock = dock("Walkthrough", "walkthroughDock", m_walk, Qt::BottomDockWidgetArea);
    m_walkDock->hide();
    // What the model really receives (the chat template's text and special tokens), at hand for
    // a demo but out of the way otherwise: View > Prompt as the Model Sees It, a tab next to the
    // prompt and display docks (drag it out to read it wider).
    m_promptText = new PromptTextView(m_state);
    m_promptTextDock = dock("Prompt as the model sees it", "promptTextDock", m_promptText, Qt::LeftDockWidgetArea);
    tabifyDockWidget(m_displayDock, m_promptTextDock);
    m_promptTextDock->hide();
    connect(m_promptTextDock->toggleViewAction(), &QAction::triggered, this, [this](bool on) {
        if (on) showPromptText();
    });
    resizeDocks({m_paramsDock}, {370}, Qt::Horizontal);
    resizeDocks({m_paramsDock, m_promptDock}, {470, 430}, Qt::Vertical);
}

void MainWindow::showPromptText() {
    m_promptTextDock->show();
    m_promptTextDock->raise();
    // raise() does not always make a tabified dock the current tab (seen offscreen): select it on
    // the dock area's tab bar by its title as well.
    for (QTabBar* bar : findChildren<QTabBar*>()) {
        if (bar->parent() != this) continue;  // the view tabs and others are not dock tab bars
        for (int i = 0; i < bar->count(); ++i)
            if (bar->tabText(i) == m_promptTextDock->windowTitle()) bar->setCurrentIndex(i);
    }
}

void MainWindow::buildActions() {
    auto make = [this](const QString& text, const QList<QKeySequence>& keys, QStyle::StandardPixmap icon,
                       const QString& tip) {
        auto* a = new QAction(style()->standardIcon(icon), text, this);
        a->setShortcuts(keys);
        a->setToolTip(keys.isEmpty() ? tip
                                     : QString("%1 (%2)").arg(tip, keys.first().toString(QKeySequence::NativeText)));
        a->setStatusTip(tip);
        addAction(a);
        return a;
    };
    m_actOpenModel = make("Open &Model…", {QKeySequence("Ctrl+Shift+O")}, QStyle::SP_DirOpenIcon,
                          "Open a model (GGUF file or Hugging Face folder)");
    m_actOpenDocument = make("Open &Document…", {QKeySequence::Open}, QStyle::SP_FileIcon,
                             "Open a text or markdown document");
    m_actLoadSession = make("Open &Session…", {QKeySequence("Ctrl+Alt+O")}, QStyle::SP_DialogOpenButton,
                            "Open a saved session");
    m_actSaveSession = make("&Save Session…", {QKeySequence::Save}, QStyle::SP_DialogSaveButton,
                            "Save model, document, question, parameters, display and layout");
    m_actExportPlot = make("Export &Plot…", {QKeySequence("Ctrl+E")}, QStyle::SP_DriveFDIcon,
                           "Export the current view's plot as PNG, SVG or PDF");
    m_actExportData = make("Export D&ata…", {QKeySequence("Ctrl+Shift+E")}, QStyle::SP_FileDialogDetailedView,
                           "Export votes, pooled scores, kept positions, generations and metrics as CSV or JSON");
    m_actQuit = make("&Quit", {QKeySequence::Quit}, QStyle::SP_DialogCloseButton, "Quit SnapKV Studio");
    m_actRun = make("&Run", {QKeySequence("F5"), QKeySequence("Ctrl+R")}, QStyle::SP_MediaPlay,
                    "Load the model if needed, prefill the prompt, select");
    m_actGenerate = make("&Generate && Compare", {QKeySequence("Ctrl+G")}, QStyle::SP_MediaSeekForward,
                         "Generate with the full and the compressed cache and compare");
    m_actCancel = make("&Cancel", {QKeySequence("Esc")}, QStyle::SP_MediaStop, "Cancel the running job");
    m_actUndo = m_params->undoStack()->createUndoAction(this, "&Undo parameter change");
    m_actUndo->setShortcuts(QKeySequence::Undo);
    m_actUndo->setIcon(style()->standardIcon(QStyle::SP_ArrowBack));
    m_actUndo->setIconText("Undo");
    m_actRedo = m_params->undoStack()->createRedoAction(this, "&Redo parameter change");
    m_actRedo->setShortcuts({QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")});
    m_actRedo->setIcon(style()->standardIcon(QStyle::SP_ArrowForward));
    m_actRedo->setIconText("Redo");
    addAction(m_actUndo);
    addAction(m_actRedo);
    const QStringList titles = {"&Overview", "&Head Detail", "&Document", "&Compare"};
    for (int i = 0; i < 4; ++i) {
        m_actViews[i] = make(titles[i], {QKeySequence(QString("Ctrl+%1").arg(i + 1))}, QStyle::SP_FileDialogListView,
                             QString("Show the %1 view").arg(kViewNames[i]));
        connect(m_actViews[i], &QAction::triggered, this, [this, i] { m_tabs->setCurrentIndex(i); });
    }
    m_actWalkthrough = make("&Walkthrough", {QKeySequence("F2")}, QStyle::SP_MessageBoxInformation,
                            "Step through SnapKV: prefill, window, votes, pooling, top-k, cache, generation");
    m_actShortcuts = make("&Keyboard Shortcuts", {QKeySequence::HelpContents}, QStyle::SP_DialogHelpButton,
                          "List the keyboard shortcuts");
    m_actAbout = make("&About SnapKV Studio", {}, QStyle::SP_MessageBoxQuestion, "About");
    auto* resetZoom = make("Reset &Zoom", {QKeySequence("Ctrl+0")}, QStyle::SP_BrowserReload,
                           "Show the whole prompt in the head view");

    connect(m_actOpenModel, &QAction::triggered, this, &MainWindow::onOpenModel);
    connect(m_actOpenDocument, &QAction::triggered, this, &MainWindow::onOpenDocument);
    connect(m_actLoadSession, &QAction::triggered, this, &MainWindow::onLoadSession);
    connect(m_actSaveSession, &QAction::triggered, this, &MainWindow::onSaveSession);
    connect(m_actExportPlot, &QAction::triggered, this, &MainWindow::onExportPlot);
    connect(m_actExportData, &QAction::triggered, this, &MainWindow::onExportData);
    connect(m_actQuit, &QAction::triggered, this, &QWidget::close);
    connect(m_actRun, &QAction::triggered, this, &MainWindow::run);
    connect(m_actGenerate, &QAction::triggered, this, [this] { generate(); });
    connect(m_actCancel, &QAction::triggered, this, &MainWindow::cancel);
    connect(m_actWalkthrough, &QAction::triggered, this, &MainWindow::startWalkthrough);
    connect(resetZoom, &QAction::triggered, this, [this] { m_head->resetZoom(); });
    m_actEvaluate = make("&Evaluate", {QKeySequence("Ctrl+5")}, QStyle::SP_FileDialogContentsView,
                         "Needle-in-a-haystack grids and budget sweeps");
    connect(m_actEvaluate, &QAction::triggered, this, [this] { m_tabs->setCurrentWidget(m_evaluate); });
    connect(m_actShortcuts, &QAction::triggered, this, [this] {
        auto* d = new ShortcutsDialog(shortcutActions(), this);
        d->setAttribute(Qt::WA_DeleteOnClose);
        d->open();
    });
    connect(m_actAbout, &QAction::triggered, this, [this] {
        QMessageBox::about(this, "About SnapKV Studio",
                           "<b>SnapKV Studio</b><br>See and tune SnapKV KV-cache compression "
                           "(Li et al. 2024, arXiv:2404.14469): per-head attention of the observation window, "
                           "votes, pooling, kept clusters, and full vs compressed generation.<br><br>"
                           "Attention is not explanation: the views show what the cache keeps, not why "
                           "the model answers.");
    });
}

QList<QAction*> MainWindow::shortcutActions() const {
    QList<QAction*> l = {m_actRun,          m_actGenerate,    m_actCancel,      m_actOpenModel,
                         m_actOpenDocument, m_actLoadSession, m_actSaveSession, m_actExportPlot,
                         m_actExportData,   m_actUndo,        m_actRedo};
    for (QAction* a : m_actViews) l << a;
    l << m_actWalkthrough << m_actShortcuts << m_actQuit;
    for (QAction* a : actions())
        if (!l.contains(a) && !a->shortcuts().isEmpty()) l << a;
    return l;
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu("&File");
    file->addAction(m_actOpenModel);
    m_actOpenModelFolder = file->addAction(style()->standardIcon(QStyle::SP_DirIcon), "Open Model &Folder…");
    m_actOpenModelFolder->setStatusTip("Open a Hugging Face model folder (config.json, tokenizer.json, *.safetensors)");
    connect(m_actOpenModelFolder, &QAction::triggered, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, "Open a Hugging Face model folder");
        if (!dir.isEmpty()) openModel(dir);
    });
    m_recentModels = file->addMenu("Recent &Models");
    file->addAction(m_actOpenDocument);
    m_recentDocuments = file->addMenu("Recent D&ocuments");
    file->addSeparator();
    file->addAction(m_actLoadSession);
    m_recentSessions = file->addMenu("Recent S&essions");
    file->addAction(m_actSaveSession);
    file->addSeparator();
    file->addAction(m_actExportPlot);
    file->addAction(m_actExportData);
    file->addSeparator();
    file->addAction(m_actQuit);

    // Model: the models fetched into models/ (re-read each time the menu opens), then the dialogs.
    m_modelMenu = menuBar()->addMenu("&Model");
    m_modelMenu->setObjectName("modelMenu");
    m_modelMenu->setToolTipsVisible(true);
    connect(m_modelMenu, &QMenu::aboutToShow, this, &MainWindow::rebuildModelMenu);
    rebuildModelMenu();

    QMenu* edit = menuBar()->addMenu("&Edit");
    edit->addAction(m_actUndo);
    edit->addAction(m_actRedo);

    QMenu* runMenu = menuBar()->addMenu("&Run");
    runMenu->addAction(m_actRun);
    runMenu->addAction(m_actGenerate);
    runMenu->addAction(m_actCancel);

    QMenu* view = menuBar()->addMenu("&View");
    for (QAction* a : m_actViews) view->addAction(a);
    view->addAction(m_actEvaluate);
    view->addSeparator();
    for (QDockWidget* d : {m_paramsDock, m_promptDock, m_displayDock, m_walkDock})
        view->addAction(d->toggleViewAction());
    QAction* promptText = m_promptTextDock->toggleViewAction();
    promptText->setText("&Prompt as the Model Sees It");
    promptText->setShortcut(QKeySequence("Ctrl+Shift+P"));
    promptText->setStatusTip("The prompt after the chat template, token by token, special tokens marked");
    view->addAction(promptText);
    addAction(promptText);

    QMenu* help = menuBar()->addMenu("&Help");
    help->addAction(m_actWalkthrough);
    help->addAction(m_actShortcuts);
    help->addAction("&Get a Model…", this, &MainWindow::showGetModel)
        ->setStatusTip("Where to get a model; downloads the default one (SmolLM2-135M) on request");
    help->addAction(m_actAbout);

    QToolBar* tb = addToolBar("Main");
    tb->setObjectName("mainToolbar");
    tb->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    tb->addAction(m_actRun);
    tb->addAction(m_actGenerate);
    tb->addAction(m_actCancel);
    tb->addSeparator();
    tb->addAction(m_actUndo);
    tb->addAction(m_actRedo);
    tb->addSeparator();
    tb->addAction(m_actOpenModel);
    tb->addAction(m_actOpenDocument);
    tb->addAction(m_actExportPlot);
    tb->addSeparator();
    tb->addAction(m_actWalkthrough);

    for (auto [menu, key] :
         {std::pair{m_recentModels, "recent/models"}, std::pair{m_recentDocuments, "recent/documents"},
          std::pair{m_recentSessions, "recent/sessions"}}) {
        QMenu* m = menu;
        const QString k = key;
        connect(m, &QMenu::aboutToShow, this, [this, m, k] { rebuildRecentMenu(m, k); });
        rebuildRecentMenu(m, k);
    }
}

void MainWindow::buildStatusBar() {
    m_statusText = new QLabel("Ready.");
    m_timing = new QLabel;
    m_timing->setObjectName("timingLabel");
    m_progress = new QProgressBar;
    m_progress->setFixedWidth(340);
    m_progress->setTextVisible(true);
    m_progress->hide();
    m_cancelButton = new QPushButton(style()->standardIcon(QStyle::SP_MediaStop), "Cancel");
    m_cancelButton->setObjectName("cancelButton");
    m_cancelButton->hide();
    statusBar()->addWidget(m_statusText, 1);
    statusBar()->addPermanentWidget(m_timing);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancelButton);
    connect(m_cancelButton, &QPushButton::clicked, this, &MainWindow::cancel);
}

void MainWindow::connectController() {
    connect(m_controller, &RunController::busyChanged, this, &MainWindow::onBusyChanged);
    connect(m_controller, &RunController::progressed, this, &MainWindow::onProgress);
    connect(m_controller, &RunController::failed, this, [this](const QString& task, const QString& msg) {
        const QString title = task == "load model" ? "Cannot load the model"
                              : task == "generate" ? "Generation failed"
                              : task == "prefill"  ? "Prefill failed"
                                                   : "Error";
        showError(title, msg);
    });
    connect(m_controller, &RunController::retuneFailed, this, [this](const QString& msg) {
        m_lastError = msg;
        m_statusText->setText("Parameters not applied: " + msg);
        Q_EMIT errorShown(msg, "Parameters not applied");
    });
    connect(m_controller, &RunController::cancelled, this, [this](const QString& task) {
        showInfo(QString("Cancelled (%1). The previous results are kept.").arg(task));
    });
    connect(m_controller, &RunController::contextExceeded, this, &MainWindow::onContextExceeded);
    connect(m_controller, &RunController::noteIssued, this, [this](const QString& n) { showInfo(n, 12000); });
    connect(m_controller, &RunController::modelLoaded, this, &MainWindow::onModelLoaded);
    connect(m_controller, &RunController::runFinished, this, [this] {
        if (m_pendingLeastKept && m_state->selection()) {
            std::vector<EvalCellPrompt::Mark> marks;
            for (const auto& m : m_pendingMarks) marks.push_back({m.first, m.last, m.label});
            const auto [layer, head] = leastKeptHead(*m_state->selection(), marks);
            if (layer >= 0) m_pendingLayer = layer, m_pendingHead = head;
        }
        m_pendingLeastKept = false;
        if (m_pendingLayer >= 0) m_state->setFocus(m_pendingLayer, m_pendingHead);
        m_pendingLayer = m_pendingHead = -1;
        if (!m_pendingMarks.empty()) {
            std::vector<AnalysisState::MarkedSpan> spans;
            for (const auto& m : m_pendingMarks) spans.push_back({m.first, m.last, m.label});
            m_state->setMarkedSpans(std::move(spans));
            m_pendingMarks.clear();
        }
        const auto* sel = m_state->selection();
        QString msg = QString("Prefill of %1 tokens in %2 ms; selection in %3 ms.")
                          .arg(m_state->prefill().n_tokens)
                          .arg(m_state->prefill().prefill_ms, 0, 'f', 0)
                          .arg(m_controller->lastSelectMs(), 0, 'f', 1);
        if (sel && !sel->note.empty()) msg += " " + QString::fromStdString(sel->note);
        showInfo(msg, 15000);
    });
    connect(m_controller, &RunController::compareFinished, this, [this] {
        const auto* c = m_state->comparison();
        if (c) showInfo(QString("Generated %1 tokens with each cache.").arg(c->full.ids.size()));
    });
    connect(m_controller, &RunController::retuneApplied, this, &MainWindow::onRetuneApplied);
    connect(m_params, &ParameterPanel::paramsChanged, this, &MainWindow::onParamsChanged);
    connect(m_state, &AnalysisState::prefillChanged, this, &MainWindow::onPrefillChanged);
    connect(m_compare, &CompareView::generateRequested, this, [this](int n) { generate(n); });
    for (LazyView* v : std::initializer_list<LazyView*>{m_overview, m_head, m_document, m_compare, m_promptText})
        connect(v, &LazyView::runRequested, this, [this] { run(); });
    connect(m_prompt, &PromptPanel::browseModelRequested, this, &MainWindow::onOpenModel);
    connect(m_prompt, &PromptPanel::openDocumentRequested, this, &MainWindow::onOpenDocument);
    connect(m_walk, &Walkthrough::stepShown, this, &MainWindow::onWalkthroughStep);
    connect(m_walk, &Walkthrough::closed, this, [this] {
        m_walkDock->hide();
        onWalkthroughStep({QString(), QString(), currentViewName(), "none"});
    });
    connect(m_tabs, &QTabWidget::currentChanged, this, [this] { updateActions(); });
    m_evaluate->setModelProvider([this] { return std::make_pair(m_prompt->modelPath(), m_prompt->loadOptions()); });
    connect(m_evaluate, &EvaluateView::openCellRequested, this, &MainWindow::openEvalCell);
    connect(m_evaluate, &EvaluateView::errorOccurred, this, &MainWindow::showError);
}

void MainWindow::onBusyChanged(bool busy, const QString& task) {
    m_progress->setVisible(busy);
    m_cancelButton->setVisible(busy);
    if (busy) {
        m_progress->setRange(0, 0);
        m_progress->setFormat(task);
        m_statusText->setText(QString("Working: %1…").arg(task));
    }
    m_compare->setBusy(busy);
    updateActions();
}

void MainWindow::onProgress(const QString& stage, qint64 done, qint64 total) {
    if (stage != m_stage || done == 0 || !m_stageClock.isValid()) {
        m_stage = stage;
        m_stageClock.restart();
    }
    if (total > 0 && total < (qint64(1) << 30)) {
        m_progress->setRange(0, static_cast<int>(total));
        m_progress->setValue(static_cast<int>(std::min(done, total)));
        QString format = QString("%1 %p%").arg(stage);
        // Prefill counts prompt tokens: its speed and the time left, once there is a rate to go by.
        const double secs = m_stageClock.elapsed() / 1000.0;
        if (stage == "prefill" && done > 0 && done < total && secs >= 0.5) {
            const double rate = double(done) / secs;
            format += QString(" · %1 tok/s · %2 s left").arg(rate, 0, 'f', 0).arg((total - done) / rate, 0, 'f', 0);
        }
        m_progress->setFormat(format);
    } else {
        m_progress->setRange(0, 0);
        m_progress->setFormat(stage);
    }
}

void MainWindow::updateActions() {
    const bool busy = m_controller->busy();
    m_actCancel->setEnabled(busy);
    m_actGenerate->setEnabled(!busy && m_state->hasPrefill());
    for (int i = 0; i < 4; ++i)
        m_actViews[i]->setCheckable(true), m_actViews[i]->setChecked(m_tabs->currentIndex() == i);
}

void MainWindow::updateTitle() {
    QString t = "SnapKV Studio";
    if (m_state->hasModel()) t += " — " + QString::fromStdString(m_state->model().config.name);
    const QString doc = m_prompt->documentPath();
    if (!doc.isEmpty()) t += " — " + QFileInfo(doc).fileName();
    setWindowTitle(t);
}

void MainWindow::showBanner(const QString& text) {
    m_bannerText->setText(text);
    m_banner->setVisible(!text.isEmpty());
}

void MainWindow::showError(const QString& title, const QString& message) {
    m_lastError = message;
    m_statusText->setText(title + ": " + message);
    Q_EMIT errorShown(message, title);
    if (!m_interactive || m_closing) return;
    // Non-modal (open(), not exec()): the window keeps working and tests can read and close it.
    if (m_dialog) m_dialog->close();
    m_dialog = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
    m_dialog->setObjectName("errorDialog");
    m_dialog->setAttribute(Qt::WA_DeleteOnClose);
    m_dialog->open();
}

void MainWindow::showNote(const QString& title, const QString& message) {
    m_lastNote = message;
    m_statusText->setText(message);
    Q_EMIT noteShown(message);
    if (!m_interactive || m_closing) return;
    if (m_dialog) m_dialog->close();
    m_dialog = new QMessageBox(QMessageBox::Information, title, message, QMessageBox::Ok, this);
    m_dialog->setObjectName("noteDialog");
    m_dialog->setAttribute(Qt::WA_DeleteOnClose);
    m_dialog->open();
}

void MainWindow::showInfo(const QString& message, int ms) {
    m_statusText->setText(message);
    Q_UNUSED(ms);
}

void MainWindow::restoreSettings() {
    QSettings s;
    restoreGeometry(s.value("window/geometry").toByteArray());
    restoreState(s.value("window/state").toByteArray());
    const QJsonDocument params = QJsonDocument::fromJson(s.value("params").toByteArray());
    if (params.isObject()) {
        try {
            m_params->setState(ParamState::fromJson(params.object()), false);
        } catch (const snapkv::Error&) {
            // Settings from an older version, or invalid ones an older version saved (a window no
            // prefill captures): keep the defaults rather than fail every run.
        }
    }
    const QJsonDocument display = QJsonDocument::fromJson(s.value("display").toByteArray());
    if (display.isObject()) m_state->setDisplay(DisplaySettings::fromJson(display.object()));
    m_compare->setMaxTokens(s.value("compare/max_tokens", 64).toInt());
    snapkv::LoadOptions o;
    const QString device = s.value("model/device", "cpu").toString();
    const QString dtype = s.value("model/dtype", "float32").toString();
    if (device == "cpu" || device.startsWith("cuda")) o.device = device.toStdString();
    if (QStringList{"float32", "float16", "bfloat16"}.contains(dtype)) o.dtype = dtype.toStdString();
    const QString weights = s.value("model/weights", "native").toString();
    if (QStringList{"native", "f32", "float32"}.contains(weights)) o.weights = weights.toStdString();
    m_prompt->setLoadOptions(o);
}

void MainWindow::saveSettings() const {
    if (!m_persist) return;
    QSettings s;
    s.setValue("window/geometry", saveGeometry());
    s.setValue("window/state", saveState());
    // Parameters no prompt can make valid would fail the next start's every run: not saved.
    if (m_params->state().check().isEmpty())
        s.setValue("params", QJsonDocument(m_params->state().toJson()).toJson(QJsonDocument::Compact));
    s.setValue("display", QJsonDocument(m_state->display().toJson()).toJson(QJsonDocument::Compact));
    s.setValue("compare/max_tokens", m_compare->maxTokens());
    s.setValue("model/device", QString::fromStdString(m_prompt->loadOptions().device));
    s.setValue("model/dtype", QString::fromStdString(m_prompt->loadOptions().dtype));
    s.setValue("model/weights", QString::fromStdString(m_prompt->loadOptions().weights));
    if (!m_prompt->modelPath().isEmpty()) s.setValue("model/last", m_prompt->modelPath());
}

void MainWindow::addRecent(const QString& key, const QString& path) {
    if (path.isEmpty() || !m_persist) return;
    QSettings s;
    QStringList l = s.value(key).toStringList();
    const QString abs = QFileInfo(path).absoluteFilePath();
    l.removeAll(abs);
    l.prepend(abs);
    while (l.size() > kMaxRecent) l.removeLast();
    s.setValue(key, l);
}

void MainWindow::rebuildModelMenu() {
    fillModelMenu(m_modelMenu, modelFolders(), m_prompt->modelPath(), [this](const QString& path) { openModel(path); });
    m_modelMenu->addSeparator();
    m_modelMenu->addAction(m_actOpenModel);
    m_modelMenu->addAction(m_actOpenModelFolder);
}

void MainWindow::rebuildRecentMenu(QMenu* menu, const QString& key) {
    menu->clear();
    const QStringList l = QSettings().value(key).toStringList();
    for (const QString& path : l) {
        QAction* a = menu->addAction(QFileInfo(path).fileName());
        a->setToolTip(path);
        a->setEnabled(QFileInfo::exists(path));
        connect(a, &QAction::triggered, this, [this, key, path] {
            if (key == "recent/models") openModel(path);
            else if (key == "recent/documents") openDocument(path);
            else loadSession(path);
        });
    }
    if (l.isEmpty()) menu->addAction("(none)")->setEnabled(false);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    // Cancel whatever runs, wait for the worker to return, then close: nothing is lost, no hang.
    m_closing = true;
    saveSettings();
    m_controller->shutdown();
    m_evaluate->controller()->shutdown();
    event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    openDroppedUrls(event->mimeData()->urls());
    event->acceptProposedAction();
}

void MainWindow::openDroppedUrls(const QList<QUrl>& urls) {
    for (const QUrl& url : urls) {
        const QString path = url.toLocalFile();
        if (path.isEmpty()) continue;
        const QFileInfo fi(path);
        const QString suffix = fi.suffix().toLower();
        if (fi.isDir() || suffix == "gguf" || suffix == "safetensors") {
            openModel(fi.isDir() ? path : fi.absoluteFilePath());
        } else if (suffix == "json" && fi.fileName().contains("snapkv")) {
            loadSession(path);
        } else {
            openDocument(path);
        }
    }
}

}  // namespace studio
