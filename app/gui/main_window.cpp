// MainWindow: construction (tabs, docks, banner, menus, status bar), the wiring between widgets,
// RunController and AnalysisState, messages, closing and drag & drop. The handlers of runs and
// their results are in main_window_actions.cpp; file work in file_actions.cpp; menus in
// main_menus.cpp; the views' table in view_registry.cpp.
#include "app/gui/main_window.h"

#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileInfo>
#include <QMessageBox>
#include <QMimeData>
#include <QStatusBar>
#include <QTabBar>
#include <QVBoxLayout>

#include "app/gui/file_actions.h"
#include "app/gui/main_menus.h"
#include "app/gui/panels/cheaper_choices_dialog.h"
#include "app/gui/panels/display_panel.h"
#include "app/gui/panels/notice_banner.h"
#include "app/gui/panels/parameter_panel.h"
#include "app/gui/panels/prompt_panel.h"
#include "app/gui/panels/run_status.h"
#include "app/gui/panels/walkthrough.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/view_registry.h"
#include "app/gui/view_tabs.h"
#include "app/gui/views/compare_view.h"
#include "app/gui/views/document_view.h"
#include "app/gui/views/evaluate_view.h"
#include "app/gui/views/head_view.h"
#include "app/gui/views/overview_view.h"
#include "app/gui/views/prompt_text_view.h"
#include "app/gui/views/timeline_view.h"
#include "app/gui/workers/eval_worker.h"
#include "app/gui/workers/run_controller.h"

namespace studio {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setObjectName("SnapKVStudio");
    setWindowIcon(QIcon(":/icons/snapkv-studio.svg"));
    setAcceptDrops(true);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
    m_state = new AnalysisState(this);
    m_controller = new RunController(m_state, this);
    m_views = new ViewTabs(m_state);

    m_banner = new NoticeBanner("Open Model…");
    auto* central = new QWidget;
    auto* cl = new QVBoxLayout(central);
    cl->setContentsMargins(0, 0, 0, 0);
    cl->setSpacing(0);
    cl->addWidget(m_banner);
    cl->addWidget(m_views, 1);
    setCentralWidget(central);

    const QList<QDockWidget*> docks = buildDocks();
    m_files = new FileActions(this);
    m_menus = new MainMenus(this, m_files, docks, m_promptTextDock);
    m_status = new RunStatus(statusBar());
    connectController();
    m_prompt->setCudaAvailable(snapkv::Session::cuda_available());
    m_files->restoreSettings();
    updateTitle();
    updateActions();
}

MainWindow::~MainWindow() { m_controller->shutdown(); }

OverviewView* MainWindow::overviewView() const { return m_views->view<OverviewView>(); }
HeadView* MainWindow::headView() const { return m_views->view<HeadView>(); }
DocumentView* MainWindow::documentView() const { return m_views->view<DocumentView>(); }
CompareView* MainWindow::compareView() const { return m_views->view<CompareView>(); }
EvaluateView* MainWindow::evaluateView() const { return m_views->view<EvaluateView>(); }

QList<QDockWidget*> MainWindow::buildDocks() {
    m_params = new ParameterPanel;
    m_params->setObjectName("parameterPanel");
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
    QDockWidget* params = dock("Parameters (live)", "parametersDock", m_params, Qt::LeftDockWidgetArea);
    QDockWidget* prompt = dock("Prompt and model", "promptDock", m_prompt, Qt::LeftDockWidgetArea);
    QDockWidget* display = dock("Display", "displayDock", new DisplayPanel(m_state), Qt::LeftDockWidgetArea);
    tabifyDockWidget(prompt, display);
    prompt->raise();
    m_walkDock = dock("Walkthrough", "walkthroughDock", m_walk, Qt::BottomDockWidgetArea);
    m_walkDock->hide();
    // What the model really receives (the chat template's text and special tokens), at hand for
    // a demo but out of the way otherwise: View > Prompt as the Model Sees It, a tab next to the
    // prompt and display docks (drag it out to read it wider).
    m_promptText = new PromptTextView(m_state);
    m_promptTextDock = dock("Prompt as the model sees it", "promptTextDock", m_promptText, Qt::LeftDockWidgetArea);
    tabifyDockWidget(display, m_promptTextDock);
    m_promptTextDock->hide();
    connect(m_promptTextDock->toggleViewAction(), &QAction::triggered, this, [this](bool on) {
        if (on) showPromptText();
    });
    resizeDocks({params}, {370}, Qt::Horizontal);
    resizeDocks({params, prompt}, {470, 430}, Qt::Vertical);
    return {params, prompt, display, m_walkDock};
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

QList<QAction*> MainWindow::shortcutActions() const { return m_menus->shortcutActions(); }

void MainWindow::connectController() {
    connect(m_controller, &RunController::busyChanged, this, [this](bool busy, const QString& task) {
        m_status->setBusy(busy, task);
        compareView()->setBusy(busy);
        updateActions();
    });
    connect(m_controller, &RunController::progressed, m_status, &RunStatus::setProgress);
    connect(m_status, &RunStatus::cancelRequested, this, &MainWindow::cancel);
    connect(m_controller, &RunController::failed, this, [this](const QString& task, const QString& msg) {
        const QString title = task == "load model" ? "Cannot load the model"
                              : task == "generate" ? "Generation failed"
                              : task == "prefill"  ? "Prefill failed"
                                                   : "Error";
        showError(title, msg);
    });
    connect(m_controller, &RunController::retuneFailed, this, [this](const QString& msg) {
        m_lastError = msg;
        m_status->setText("Parameters not applied: " + msg);
        Q_EMIT errorShown(msg, "Parameters not applied");
    });
    connect(m_controller, &RunController::cancelled, this, [this](const QString& task) {
        showInfo(QString("Cancelled (%1). The previous results are kept.").arg(task));
    });
    connect(m_controller, &RunController::contextExceeded, this, &MainWindow::onContextExceeded);
    connect(m_controller, &RunController::forecastMade, m_status, &RunStatus::setForecast);
    // A run that would not fit the free memory did not start: offer its cheaper choices.
    connect(m_controller, &RunController::runDoesNotFit, this, [this](const snapkv::RunForecast& f) {
        if (!m_interactive || f.choices.empty()) {
            showError("The run does not fit in memory", doesNotFitMessage(f));
            return;
        }
        m_lastError = doesNotFitMessage(f);
        auto* dialog = new CheaperChoicesDialog(f, this);
        connect(dialog, &CheaperChoicesDialog::choiceMade, this, [this](const snapkv::CheaperChoice& c) {
            if (c.kind == snapkv::CheaperChoice::Kind::CacheType) {
                snapkv::LoadOptions o = m_prompt->loadOptions();
                o.cache_type = snapkv::kv_type_name(c.cache_type);
                m_prompt->setLoadOptions(o);  // the next Run keeps it
            }
            m_controller->rerunWith(c);
        });
        dialog->open();
    });
    connect(m_controller, &RunController::noteIssued, this, &MainWindow::showInfo);
    connect(m_controller, &RunController::modelLoaded, this, &MainWindow::onModelLoaded);
    connect(m_controller, &RunController::runFinished, this, &MainWindow::onRunFinished);
    connect(m_controller, &RunController::compareFinished, this, [this] {
        if (const auto* c = m_state->comparison())
            showInfo(QString("Generated %1 tokens with each cache.").arg(c->full.ids.size()));
    });
    connect(m_controller, &RunController::retuneApplied, this, &MainWindow::onRetuneApplied);
    connect(m_controller, &RunController::retuneTimed, this, [this](double select, double total) {
        m_status->setTiming(
            QString("retune: select %1 ms · edit to repaint %2 ms").arg(select, 0, 'f', 1).arg(total, 0, 'f', 0));
    });
    connect(m_params, &ParameterPanel::paramsChanged, this,
            [this](const ParamState& params) { m_controller->retuneEdit(params, m_params->msSinceFirstEdit()); });
    connect(m_state, &AnalysisState::prefillChanged, this, &MainWindow::onPrefillChanged);
    connect(compareView(), &CompareView::generateRequested, this, [this](int n) { generate(n); });
    // The timeline's tokens: a prompt position opens in the document view, an answer token in Compare.
    if (auto* timeline = m_views->view<TimelineView>()) {
        connect(timeline, &TimelineView::promptTokenClicked, this, [this](qint64 position) {
            m_views->showView("document");
            documentView()->revealToken(static_cast<int>(position));
        });
        connect(timeline, &TimelineView::generatedTokenClicked, this, [this](qint64) { m_views->showView("compare"); });
    }
    QList<LazyView*> runners = m_views->analysisViews();
    runners << m_promptText;
    for (LazyView* v : runners) connect(v, &LazyView::runRequested, this, [this] { run(); });
    connect(m_banner, &NoticeBanner::actionRequested, m_files, &FileActions::onOpenModel);
    connect(m_prompt, &PromptPanel::browseModelRequested, m_files, &FileActions::onOpenModel);
    connect(m_prompt, &PromptPanel::openDocumentRequested, m_files, &FileActions::onOpenDocument);
    connect(m_walk, &Walkthrough::stepShown, this, &MainWindow::onWalkthroughStep);
    connect(m_walk, &Walkthrough::closed, this, [this] {
        m_walkDock->hide();
        onWalkthroughStep({QString(), QString(), currentViewName(), "none"});
    });
    EvaluateView* evaluate = evaluateView();
    evaluate->setModelProvider([this] { return std::make_pair(m_prompt->modelPath(), m_prompt->loadOptions()); });
    connect(evaluate, &EvaluateView::openCellRequested, this, &MainWindow::openEvalCell);
    connect(evaluate, &EvaluateView::errorOccurred, this, &MainWindow::showError);
}

void MainWindow::updateActions() { m_menus->update(m_controller->busy(), m_state->hasPrefill()); }

void MainWindow::updateTitle() {
    QString t = "SnapKV Studio";
    if (m_state->hasModel()) t += " — " + QString::fromStdString(m_state->model().config.name);
    const QString doc = m_prompt->documentPath();
    if (!doc.isEmpty()) t += " — " + QFileInfo(doc).fileName();
    setWindowTitle(t);
}

// ---- messages ----

void MainWindow::showDialog(int icon, const QString& title, const QString& message, const char* name) {
    if (!m_interactive || m_closing) return;
    // Non-modal (open(), not exec()): the window keeps working and tests can read and close it.
    if (m_dialog) m_dialog->close();
    m_dialog = new QMessageBox(QMessageBox::Icon(icon), title, message, QMessageBox::Ok, this);
    m_dialog->setObjectName(name);
    m_dialog->setAttribute(Qt::WA_DeleteOnClose);
    m_dialog->open();
}

void MainWindow::showError(const QString& title, const QString& message) {
    m_lastError = message;
    m_status->setText(title + ": " + message);
    Q_EMIT errorShown(message, title);
    showDialog(QMessageBox::Warning, title, message, "errorDialog");
}

void MainWindow::showNote(const QString& title, const QString& message) {
    m_lastNote = message;
    m_status->setText(message);
    Q_EMIT noteShown(message);
    showDialog(QMessageBox::Information, title, message, "noteDialog");
}

void MainWindow::showInfo(const QString& message) { m_status->setText(message); }

// ---- closing, drag & drop ----

void MainWindow::closeEvent(QCloseEvent* event) {
    // Cancel whatever runs, wait for the worker to return, then close: nothing is lost, no hang.
    m_closing = true;
    m_files->saveSettings();
    m_controller->shutdown();
    evaluateView()->controller()->shutdown();
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
