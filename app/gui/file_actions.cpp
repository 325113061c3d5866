// FileActions: File menu dialogs, sessions, exports, recent lists and settings (see file_actions.h).
#include "app/gui/file_actions.h"

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QJsonDocument>
#include <QMenu>
#include <QSettings>

#include "app/gui/action_util.h"
#include "app/gui/files/data_export.h"
#include "app/gui/files/session_file.h"
#include "app/gui/files/text_file.h"
#include "app/gui/main_window.h"
#include "app/gui/panels/parameter_panel.h"
#include "app/gui/panels/prompt_panel.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/view_registry.h"
#include "app/gui/view_tabs.h"
#include "app/gui/views/compare_view.h"
#include "app/gui/workers/run_controller.h"
#include "core/common/path_checks.h"

namespace studio {

namespace {
constexpr int kMaxRecent = 8;
const char* const kRecentModels = "recent/models";
const char* const kRecentDocuments = "recent/documents";
const char* const kRecentSessions = "recent/sessions";
}  // namespace

FileActions::FileActions(MainWindow* window) : QObject(window), m_w(window) {
    m_openModel = makeAction(window, "Open &Model…", {QKeySequence("Ctrl+Shift+O")}, QStyle::SP_DirOpenIcon,
                             "Open a model (GGUF file or Hugging Face folder)");
    m_openDocument = makeAction(window, "Open &Document…", {QKeySequence::Open}, QStyle::SP_FileIcon,
                                "Open a text or markdown document");
    m_loadSession = makeAction(window, "Open &Session…", {QKeySequence("Ctrl+Alt+O")}, QStyle::SP_DialogOpenButton,
                               "Open a saved session");
    m_saveSession = makeAction(window, "&Save Session…", {QKeySequence::Save}, QStyle::SP_DialogSaveButton,
                               "Save model, document, question, parameters, display and layout");
    m_exportPlot = makeAction(window, "Export &Plot…", {QKeySequence("Ctrl+E")}, QStyle::SP_DriveFDIcon,
                              "Export the current view's plot as PNG, SVG or PDF");
    m_exportData = makeAction(window, "Export D&ata…", {QKeySequence("Ctrl+Shift+E")},
                              QStyle::SP_FileDialogDetailedView,
                              "Export votes, pooled scores, kept positions, generations and metrics as CSV or JSON");
    // Not a window action: it has no shortcut and lives in the File and Model menus only.
    m_openModelFolder = new QAction(window->style()->standardIcon(QStyle::SP_DirIcon), "Open Model &Folder…", this);
    m_openModelFolder->setStatusTip("Open a Hugging Face model folder (config.json, tokenizer.json, *.safetensors)");

    connect(m_openModel, &QAction::triggered, this, &FileActions::onOpenModel);
    connect(m_openModelFolder, &QAction::triggered, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(m_w, "Open a Hugging Face model folder");
        if (!dir.isEmpty()) m_w->openModel(dir);
    });
    connect(m_openDocument, &QAction::triggered, this, &FileActions::onOpenDocument);
    connect(m_loadSession, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            m_w, "Open session", QString(), "SnapKV Studio sessions (*.snapkv.json *.json);;All files (*)");
        if (!path.isEmpty()) loadSession(path);
    });
    connect(m_saveSession, &QAction::triggered, this, [this] {
        QString path = QFileDialog::getSaveFileName(m_w, "Save session", "session.snapkv.json",
                                                    "SnapKV Studio sessions (*.snapkv.json *.json)");
        if (path.isEmpty()) return;
        if (!path.endsWith(".json")) path += ".snapkv.json";
        saveSession(path);
    });
    connect(m_exportPlot, &QAction::triggered, this, [this] {
        QString selected;
        const QString path = QFileDialog::getSaveFileName(
            m_w, "Export plot", m_w->currentViewName() + ".png",
            "PNG image (*.png);;SVG vector image (*.svg);;PDF document (*.pdf)", &selected);
        if (!path.isEmpty()) exportCurrentPlot(path);
    });
    connect(m_exportData, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getSaveFileName(m_w, "Export data", "snapkv-analysis.json",
                                                          "JSON, everything (*.json);;CSV, focused head (*.csv)");
        if (!path.isEmpty()) exportCurrentData(path);
    });
}

void FileActions::fillFileMenu(QMenu* file, QAction* quit) {
    file->addAction(m_openModel);
    file->addAction(m_openModelFolder);
    QMenu* recentModels = file->addMenu("Recent &Models");
    file->addAction(m_openDocument);
    QMenu* recentDocuments = file->addMenu("Recent D&ocuments");
    file->addSeparator();
    file->addAction(m_loadSession);
    QMenu* recentSessions = file->addMenu("Recent S&essions");
    file->addAction(m_saveSession);
    file->addSeparator();
    file->addAction(m_exportPlot);
    file->addAction(m_exportData);
    file->addSeparator();
    file->addAction(quit);
    for (auto [menu, key] : {std::pair{recentModels, kRecentModels}, std::pair{recentDocuments, kRecentDocuments},
                             std::pair{recentSessions, kRecentSessions}}) {
        QMenu* m = menu;
        const QString k = key;
        connect(m, &QMenu::aboutToShow, this, [this, m, k] { rebuildRecentMenu(m, k); });
        rebuildRecentMenu(m, k);
    }
}

QList<QAction*> FileActions::shortcutActions() const {
    return {m_openModel, m_openDocument, m_loadSession, m_saveSession, m_exportPlot, m_exportData};
}

// ---- documents ----

bool FileActions::openDocument(const QString& path) {
    QString error;
    const auto text = readTextFile(path, &error);
    if (!text) {
        m_w->showError("Cannot open the document", error);
        return false;
    }
    m_w->promptPanel()->setDocument(*text, QFileInfo(path).absoluteFilePath());
    addRecent(kRecentDocuments, path);
    return true;
}

void FileActions::onOpenModel() {
    const QString path = QFileDialog::getOpenFileName(
        m_w, "Open a model", QFileInfo(m_w->promptPanel()->modelPath()).absolutePath(),
        "GGUF models (*.gguf);;Safetensors (*.safetensors);;All files (*)");
    if (path.isEmpty()) return;
    // A .safetensors file stands for its Hugging Face folder.
    m_w->openModel(path.endsWith(".safetensors") ? QFileInfo(path).absolutePath() : path);
}

void FileActions::onOpenDocument() {
    const QString path = QFileDialog::getOpenFileName(m_w, "Open a document",
                                                      QFileInfo(m_w->promptPanel()->documentPath()).absolutePath(),
                                                      "Text and markdown (*.txt *.md *.markdown);;All files (*)");
    if (!path.isEmpty()) m_w->openDocument(path);
}

// ---- sessions ----

SessionFile FileActions::currentSession() const {
    const PromptPanel* prompt = m_w->promptPanel();
    const AnalysisState* state = m_w->state();
    SessionFile s;
    s.modelPath = prompt->modelPath();
    s.load = prompt->loadOptions();
    s.document = prompt->document();
    s.documentPath = prompt->documentPath();
    s.question = prompt->question();
    s.answerPrefix = prompt->answerPrefix();
    s.chat = prompt->chat();
    s.system = prompt->systemPrompt();
    s.params = m_w->parameterPanel()->state();
    s.display = state->display();
    s.layer = state->layer();
    s.head = state->head();
    s.view = m_w->currentViewName();
    s.maxTokens = m_w->compareView()->maxTokens();
    s.ran = state->hasPrefill();
    s.geometry = m_w->saveGeometry();
    s.windowState = m_w->saveState();
    return s;
}

void FileActions::applySession(const SessionFile& s) {
    PromptPanel* prompt = m_w->promptPanel();
    prompt->setLoadOptions(s.load);
    // The device list holds only what this machine has (cpu, and cuda when LibTorch sees a GPU):
    // a saved device it lacks keeps the current choice, and the user is told which.
    if (const snapkv::LoadOptions used = prompt->loadOptions(); used.device != s.load.device) {
        snapkv::LoadOptions o = used;
        o.weights = s.load.weights;
        if (o.device == "cpu") o.dtype = "float32";  // half precision is a CUDA option in core
        prompt->setLoadOptions(o);
        const QString saved = QString::fromStdString(s.load.device + " (" + s.load.dtype + ")");
        const QString now = QString::fromStdString(o.device + " (" + o.dtype + ")");
        m_w->showNote("Device not available",
                      QString("The session was saved for %1, which is not available here (%2); using %3.")
                          .arg(saved,
                               snapkv::Session::cuda_available() ? "this machine offers cpu and cuda"
                                                                 : "no CUDA GPU in this build or on this machine",
                               now));
    }
    m_w->setModelPath(s.modelPath);
    prompt->setDocument(s.document, s.documentPath);
    prompt->setQuestion(s.question);
    prompt->setAnswerPrefix(s.answerPrefix);
    prompt->setChat(s.chat);
    prompt->setSystemPrompt(s.system);
    m_w->parameterPanel()->setState(s.params, false);
    m_w->state()->setDisplay(s.display);
    m_w->compareView()->setMaxTokens(s.maxTokens);
    if (m_w->interactive()) {
        if (!s.geometry.isEmpty()) m_w->restoreGeometry(s.geometry);
        if (!s.windowState.isEmpty()) m_w->restoreState(s.windowState);
    }
    m_w->showView(s.view);
    RunController::RunFocus focus;
    focus.layer = s.layer;
    focus.head = s.head;
    m_w->controller()->focusAfterRun(focus);
    m_w->state()->setFocus(s.layer, s.head);
    m_w->updateTitle();
    if (s.ran && !s.modelPath.isEmpty()) m_w->run();
}

bool FileActions::saveSession(const QString& path) {
    QString error;
    // A session never replaces the model or the document it names.
    const std::vector<snapkv::NamedPath> inputs = {{"the model", m_w->promptPanel()->modelPath().toStdString()},
                                                   {"the document", m_w->promptPanel()->documentPath().toStdString()}};
    if (const auto hit = snapkv::clobbered_input(path.toStdString(), inputs)) {
        m_w->showError("Cannot save the session",
                       QString::fromStdString(snapkv::clobber_message(path.toStdString(), *hit)));
        return false;
    }
    if (!currentSession().save(path, &error)) {
        m_w->showError("Cannot save the session", error);
        return false;
    }
    addRecent(kRecentSessions, path);
    m_w->showInfo(QString("Session saved to %1.").arg(path));
    return true;
}

bool FileActions::loadSession(const QString& path) {
    QString error;
    const auto s = SessionFile::read(path, viewNames(), &error);
    if (!s) {
        m_w->showError("Cannot open the session", error);
        return false;
    }
    addRecent(kRecentSessions, path);
    applySession(*s);
    return true;
}

// ---- export ----

bool FileActions::exportCurrentPlot(const QString& path) {
    QString error;
    if (!m_w->views()->exportCurrentPlot(path, &error)) {
        m_w->showError("Export failed", error);
        return false;
    }
    m_w->showInfo(QString("Plot exported to %1.").arg(path));
    return true;
}

bool FileActions::exportCurrentData(const QString& path) {
    QString error;
    if (!exportData(*m_w->state(), path, &error)) {
        m_w->showError("Export failed", error);
        return false;
    }
    m_w->showInfo(QString("Data exported to %1.").arg(path));
    return true;
}

// ---- recent lists and settings ----

void FileActions::addRecentModel(const QString& path) { addRecent(kRecentModels, path); }

void FileActions::addRecent(const QString& key, const QString& path) {
    if (path.isEmpty() || !m_w->persistSettings()) return;
    QSettings s;
    QStringList l = s.value(key).toStringList();
    const QString abs = QFileInfo(path).absoluteFilePath();
    l.removeAll(abs);
    l.prepend(abs);
    while (l.size() > kMaxRecent) l.removeLast();
    s.setValue(key, l);
}

void FileActions::rebuildRecentMenu(QMenu* menu, const QString& key) {
    menu->clear();
    const QStringList l = QSettings().value(key).toStringList();
    for (const QString& path : l) {
        QAction* a = menu->addAction(QFileInfo(path).fileName());
        a->setToolTip(path);
        a->setEnabled(QFileInfo::exists(path));
        connect(a, &QAction::triggered, this, [this, key, path] {
            if (key == kRecentModels) m_w->openModel(path);
            else if (key == kRecentDocuments) m_w->openDocument(path);
            else loadSession(path);
        });
    }
    if (l.isEmpty()) menu->addAction("(none)")->setEnabled(false);
}

void FileActions::restoreSettings() {
    QSettings s;
    m_w->restoreGeometry(s.value("window/geometry").toByteArray());
    m_w->restoreState(s.value("window/state").toByteArray());
    const QJsonDocument params = QJsonDocument::fromJson(s.value("params").toByteArray());
    if (params.isObject()) {
        try {
            m_w->parameterPanel()->setState(ParamState::fromJson(params.object()), false);
        } catch (const snapkv::Error&) {
            // Settings from an older version, or invalid ones an older version saved (a window no
            // prefill captures): keep the defaults rather than fail every run.
        }
    }
    const QJsonDocument display = QJsonDocument::fromJson(s.value("display").toByteArray());
    if (display.isObject()) m_w->state()->setDisplay(DisplaySettings::fromJson(display.object()));
    m_w->compareView()->setMaxTokens(s.value("compare/max_tokens", 64).toInt());
    snapkv::LoadOptions o;
    const QString device = s.value("model/device", "cpu").toString();
    const QString dtype = s.value("model/dtype", "float32").toString();
    if (device == "cpu" || device.startsWith("cuda")) o.device = device.toStdString();
    if (QStringList{"float32", "float16", "bfloat16"}.contains(dtype)) o.dtype = dtype.toStdString();
    const QString weights = s.value("model/weights", "native").toString();
    if (QStringList{"native", "native-q8", "f32", "float32"}.contains(weights)) o.weights = weights.toStdString();
    m_w->promptPanel()->setLoadOptions(o);
}

void FileActions::saveSettings() const {
    if (!m_w->persistSettings()) return;
    const PromptPanel* prompt = m_w->promptPanel();
    const ParameterPanel* params = m_w->parameterPanel();
    QSettings s;
    s.setValue("window/geometry", m_w->saveGeometry());
    s.setValue("window/state", m_w->saveState());
    // Parameters no prompt can make valid would fail the next start's every run: not saved.
    if (params->state().check().isEmpty())
        s.setValue("params", QJsonDocument(params->state().toJson()).toJson(QJsonDocument::Compact));
    s.setValue("display", QJsonDocument(m_w->state()->display().toJson()).toJson(QJsonDocument::Compact));
    s.setValue("compare/max_tokens", m_w->compareView()->maxTokens());
    s.setValue("model/device", QString::fromStdString(prompt->loadOptions().device));
    s.setValue("model/dtype", QString::fromStdString(prompt->loadOptions().dtype));
    s.setValue("model/weights", QString::fromStdString(prompt->loadOptions().weights));
    if (!prompt->modelPath().isEmpty()) s.setValue("model/last", prompt->modelPath());
}

}  // namespace studio
