// MainWindow's handlers: opening models, documents and sessions, running, generating, exporting,
// the walkthrough, and the reactions to RunController's results.
#include <algorithm>

#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QLocale>
#include <QMessageBox>
#include <QTabWidget>
#include <QTimer>

#include "app/gui/files/data_export.h"
#include "app/gui/files/session_file.h"
#include "app/gui/main_window.h"
#include "app/gui/panels/model_fetch.h"
#include "app/gui/panels/model_menu.h"
#include "app/gui/panels/parameter_panel.h"
#include "app/gui/panels/prompt_panel.h"
#include "app/gui/panels/walkthrough.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/state/app_options.h"
#include "app/gui/views/compare_view.h"
#include "app/gui/views/document_view.h"
#include "app/gui/views/head_view.h"
#include "app/gui/views/overview_view.h"
#include "app/gui/workers/eval_worker.h"
#include "app/gui/workers/run_controller.h"
#include "core/common/path_checks.h"
#include "core/common/units.h"

#include <qcustomplot.h>

namespace studio {

namespace {
const QStringList kViewNames = {"overview", "head", "document", "compare", "evaluate"};

QString humanBytes(int64_t b) { return QString::fromStdString(snapkv::format_bytes(b)); }
}  // namespace

// ---- inputs ----

void MainWindow::setModelPath(const QString& path) {
    m_prompt->setModelPath(path);
    if (!path.isEmpty()) {
        showBanner(QString());
        return;
    }
    bool others = false;  // models other than the default in models/ (e.g. only Gemma 3 fetched)
    for (const QString& folder : modelFolders()) others = others || !listModels(folder).isEmpty();
    showBanner(QString("No model found. The default is models/%1 (Help > Get a Model fetches it); %2")
                   .arg(defaultModelFileName(),
                        others ? QString("pick one of the models in models/ from the Model menu, or open a GGUF file "
                                         "or a Hugging Face folder.")
                               : QString("open a GGUF file or a Hugging Face folder to start.")));
}

void MainWindow::showGetModel() {
    auto* dialog = new GetModelDialog(this);
    connect(dialog, &GetModelDialog::modelFetched, this, &MainWindow::openModel);
    dialog->show();
}

void MainWindow::openModel(const QString& path) {
    if (path.isEmpty()) return;
    setModelPath(path);
    addRecent("recent/models", path);
    m_controller->loadModel(path, m_prompt->loadOptions());
}

bool MainWindow::openDocument(const QString& path) {
    QString error;
    const auto text = readTextFile(path, &error);
    if (!text) {
        showError("Cannot open the document", error);
        return false;
    }
    m_prompt->setDocument(*text, QFileInfo(path).absoluteFilePath());
    addRecent("recent/documents", path);
    updateTitle();
    return true;
}

void MainWindow::setDocumentText(const QString& text) { m_prompt->setDocument(text); }
void MainWindow::setQuestion(const QString& question) { m_prompt->setQuestion(question); }

bool MainWindow::setQuestionFromArg(const QString& textOrPath) {
    if (QFileInfo(textOrPath).isFile()) {
        QString error;
        const auto text = readTextFile(textOrPath, &error);
        if (!text) {
            showError("Cannot open the question", error);
            return false;
        }
        setQuestion(*text);
    } else {
        setQuestion(textOrPath);
    }
    return true;
}

// ---- running ----

bool MainWindow::run() { return runWith(m_autoTruncate); }

bool MainWindow::runWith(bool truncateToFit) {
    if (m_prompt->modelPath().isEmpty()) {
        showError("No model",
                  QString("No model is open. Use File > Open Model (Ctrl+Shift+O) or drop a .gguf file on the window. "
                          "The default model models/%1 was not found; Help > Get a Model fetches it.")
                      .arg(defaultModelFileName()));
        return false;
    }
    if (m_prompt->document().trimmed().isEmpty()) {
        const QString from = m_prompt->documentPath().isEmpty() ? QString()
                                                                : QString(" (%1)").arg(m_prompt->documentPath());
        showError("No document", QString("The document%1 is empty: there is nothing to compress. Paste some text "
                                         "or open a file (Ctrl+O), then press Run.")
                                     .arg(from));
        return false;
    }
    m_params->flush();
    RunRequest r;
    r.modelPath = m_prompt->modelPath();
    r.load = m_prompt->loadOptions();
    r.prompt = m_prompt->promptSpec();
    r.params = m_params->state();
    r.truncateToFit = truncateToFit;
    r.reserveTokens = m_compare->maxTokens();
    m_controller->run(r);
    return true;
}

void MainWindow::cancel() { m_controller->cancel(); }

void MainWindow::openEvalCell(const EvalCellPrompt& cell) {
    m_prompt->setDocument(QString::fromStdString(cell.prompt.document));
    m_prompt->setQuestion(QString::fromStdString(cell.prompt.question));
    m_prompt->setChat(cell.prompt.chat.enabled);
    m_prompt->setSystemPrompt(QString::fromStdString(cell.prompt.chat.system));
    m_prompt->setAnswerPrefix(QString::fromStdString(cell.prompt.answer_prefix));
    if (!cell.full) {
        ParamState p = m_params->state();
        p.sel = cell.params;
        p.useRatio = cell.params.ratio >= 0;  // kvpress's compression ratio (RULER runs)
        if (p.useRatio) p.ratio = cell.params.ratio;
        p.queryAgnostic = cell.queryAgnostic;
        m_params->setState(p, false);
    }
    m_pendingMarks.clear();
    for (const auto& m : cell.marks) m_pendingMarks.push_back({m.first, m.last, m.label});
    m_pendingLeastKept = cell.focusLeastKept;
    m_pendingLayer = cell.focusLayer;
    m_pendingHead = cell.focusHead;
    updateTitle();
    showInfo("Opening " + cell.title + "…");
    showView("document");
    run();
}

bool MainWindow::generate(int maxTokens) {
    if (!m_state->hasPrefill()) {
        showError("Nothing to generate from", "Press Run first: the prompt must be prefilled before generating.");
        return false;
    }
    if (maxTokens > 0) m_compare->setMaxTokens(maxTokens);
    snapkv::GenerationSettings g;
    g.max_tokens = m_compare->maxTokens();
    m_params->flush();
    m_controller->compare(g);
    showView("compare");
    return true;
}

void MainWindow::onParamsChanged(const ParamState& params) {
    m_pendingEditMs = m_params->msSinceFirstEdit();
    m_retuneClock.start();
    m_editParams = params;
    m_controller->retune(params);
}

void MainWindow::onRetuneApplied(double, const ParamState& params) {
    // Time only the result computed for the edit (not an older one still arriving), and stop the
    // clock once the views have redrawn: this timer is queued after their own refresh timers.
    if (auto r = m_state->retune(); r && r->kvBytesFull > 0) {
        const bool larger = r->kvBytesKept > r->kvBytesFull;
        const double factor = larger               ? double(r->kvBytesKept) / r->kvBytesFull
                              : r->kvBytesKept > 0 ? double(r->kvBytesFull) / r->kvBytesKept
                                                   : 0.0;
        m_statusText->setText(
            QString("%1 · KV cache %2 → %3 (%4x %5)")
                .arg(m_state->params().summary(), humanBytes(r->kvBytesFull), humanBytes(r->kvBytesKept))
                .arg(factor, 0, 'f', 2)
                .arg(!larger ? "smaller"
                     : r->selection && r->selection->params.gqa == snapkv::GqaMode::QueryHead
                         ? "larger: query heads stored separately, see Parameters"
                         : "larger"));
        m_params->setCacheReport(r->kvBytesFull, r->kvBytesKept, r->cacheNote);
    }
    if (!m_editParams || params != *m_editParams) return;
    m_editParams.reset();
    QTimer::singleShot(0, this, [this] {
        if (!m_retuneClock.isValid()) return;
        const double total = m_pendingEditMs + m_retuneClock.nsecsElapsed() / 1e6;
        const double select = m_controller->lastSelectMs();
        m_timing->setText(
            QString("retune: select %1 ms · edit to repaint %2 ms").arg(select, 0, 'f', 1).arg(total, 0, 'f', 0));
        m_retuneClock.invalidate();
        m_pendingEditMs = 0;
        Q_EMIT retuneTimed(select, total);
    });
}

void MainWindow::onModelLoaded() {
    const auto& m = m_state->model();
    const auto& c = m.config;
    const QString weights = QString("weights %1 %2")
                                .arg(QLocale().formattedDataSize(m.weight_bytes))
                                .arg(m.weights == "native" ? "native" : QString::fromStdString(m.dtype));
    m_prompt->setModelStatus(QString("%1 · %2 · %3 layers · %4 heads (%5 KV) · context %6 · %7 %8 · %9 · %10")
                                 .arg(QString::fromStdString(c.name), QString::fromStdString(c.arch))
                                 .arg(c.n_layer)
                                 .arg(c.n_head)
                                 .arg(c.n_head_kv)
                                 .arg(c.n_ctx_train)
                                 .arg(QString::fromStdString(m.device), QString::fromStdString(m.dtype),
                                      m.chat_template.empty() ? QString("no chat template") : QString("chat template"),
                                      weights));
    m_prompt->setChatTemplate(true, !m.chat_template.empty(),
                              static_cast<int>(std::count(m.chat_template.begin(), m.chat_template.end(), '\n') + 1));
    showBanner(QString());
    updateTitle();
    showInfo(QString("Loaded %1.").arg(QString::fromStdString(c.name)));
}

void MainWindow::onPrefillChanged() {
    if (m_state->hasPrefill()) m_params->setLimits(m_state->prefill().max_window, m_state->prefill().n_tokens);
    else m_params->setCacheReport(0, 0, QString());
    updateActions();
}

void MainWindow::onContextExceeded(qint64 nTokens, qint64 nCtx, qint64 reserve) {
    const QString msg = QString(
                            "The prompt is %1 tokens long, but the model reads at most %2 tokens and %3 of them "
                            "are kept free for generating. Truncate the document to fit?")
                            .arg(nTokens)
                            .arg(nCtx)
                            .arg(reserve);
    if (m_autoTruncate) {
        // Not an error: the run goes on with a shorter document (the prefill's note says so).
        showInfo(msg);
        runWith(true);
        return;
    }
    m_lastError = msg;
    Q_EMIT errorShown(msg, "Document too long");
    if (!m_interactive) return;
    if (m_dialog) m_dialog->close();
    m_dialog = new QMessageBox(QMessageBox::Question, "Document too long", msg, QMessageBox::Yes | QMessageBox::No,
                               this);
    m_dialog->setObjectName("truncateDialog");
    m_dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(m_dialog, &QMessageBox::finished, this, [this](int result) {
        if (result == QMessageBox::Yes) runWith(true);
    });
    m_dialog->open();
}

// ---- views ----

bool MainWindow::showView(const QString& name) {
    const int i = kViewNames.indexOf(name);
    if (i < 0) return false;
    m_tabs->setCurrentIndex(i);
    return true;
}

QString MainWindow::currentViewName() const { return kViewNames.value(m_tabs->currentIndex()); }

void MainWindow::startWalkthrough() {
    m_walkDock->show();
    resizeDocks({m_walkDock}, {120}, Qt::Vertical);
    m_walkDock->raise();
    m_walk->setStep(0);
    if (!m_state->hasPrefill() && !m_controller->busy() && !m_prompt->modelPath().isEmpty()) run();
}

void MainWindow::onWalkthroughStep(const WalkthroughStep& step) {
    showView(step.view);
    const QString e = step.emphasis;
    m_head->setHighlight(e == "window"    ? HeadHighlight::Window
                         : e == "votes"   ? HeadHighlight::Votes
                         : e == "pooling" ? HeadHighlight::Pooling
                         : e == "topk"    ? HeadHighlight::TopK
                                          : HeadHighlight::None);
    m_document->setHighlightWindow(e == "window" || e == "document");
    m_overview->setHighlight(step.view == "overview" && !step.title.isEmpty());
    if (e == "generate" && m_state->hasPrefill() && !m_state->comparison() && !m_controller->busy()) generate();
}

// ---- sessions ----

SessionFile MainWindow::currentSession() const {
    SessionFile s;
    s.modelPath = m_prompt->modelPath();
    s.load = m_prompt->loadOptions();
    s.document = m_prompt->document();
    s.documentPath = m_prompt->documentPath();
    s.question = m_prompt->question();
    s.answerPrefix = m_prompt->answerPrefix();
    s.chat = m_prompt->chat();
    s.system = m_prompt->systemPrompt();
    s.params = m_params->state();
    s.display = m_state->display();
    s.layer = m_state->layer();
    s.head = m_state->head();
    s.view = currentViewName();
    s.maxTokens = m_compare->maxTokens();
    s.ran = m_state->hasPrefill();
    s.geometry = saveGeometry();
    s.windowState = saveState();
    return s;
}

void MainWindow::applySession(const SessionFile& s) {
    m_prompt->setLoadOptions(s.load);
    // The device list holds only what this machine has (cpu, and cuda when LibTorch sees a GPU):
    // a saved device it lacks keeps the current choice, and the user is told which.
    if (const snapkv::LoadOptions used = m_prompt->loadOptions(); used.device != s.load.device) {
        snapkv::LoadOptions o = used;
        o.weights = s.load.weights;
        if (o.device == "cpu") o.dtype = "float32";  // half precision is a CUDA option in core
        m_prompt->setLoadOptions(o);
        const QString saved = QString::fromStdString(s.load.device + " (" + s.load.dtype + ")");
        const QString now = QString::fromStdString(o.device + " (" + o.dtype + ")");
        showNote("Device not available",
                 QString("The session was saved for %1, which is not available here (%2); using %3.")
                     .arg(saved,
                          snapkv::Session::cuda_available() ? "this machine offers cpu and cuda"
                                                            : "no CUDA GPU in this build or on this machine",
                          now));
    }
    setModelPath(s.modelPath);
    m_prompt->setDocument(s.document, s.documentPath);
    m_prompt->setQuestion(s.question);
    m_prompt->setAnswerPrefix(s.answerPrefix);
    m_prompt->setChat(s.chat);
    m_prompt->setSystemPrompt(s.system);
    m_params->setState(s.params, false);
    m_state->setDisplay(s.display);
    m_compare->setMaxTokens(s.maxTokens);
    if (m_interactive) {
        if (!s.geometry.isEmpty()) restoreGeometry(s.geometry);
        if (!s.windowState.isEmpty()) restoreState(s.windowState);
    }
    showView(s.view);
    m_pendingLayer = s.layer;
    m_pendingHead = s.head;
    m_state->setFocus(s.layer, s.head);
    updateTitle();
    if (s.ran && !s.modelPath.isEmpty()) run();
}

bool MainWindow::saveSession(const QString& path) {
    QString error;
    // A session never replaces the model or the document it names.
    const std::vector<snapkv::NamedPath> inputs = {{"the model", m_prompt->modelPath().toStdString()},
                                                   {"the document", m_prompt->documentPath().toStdString()}};
    if (const auto hit = snapkv::clobbered_input(path.toStdString(), inputs)) {
        showError("Cannot save the session", QString::fromStdString(snapkv::clobber_message(path.toStdString(), *hit)));
        return false;
    }
    if (!currentSession().save(path, &error)) {
        showError("Cannot save the session", error);
        return false;
    }
    addRecent("recent/sessions", path);
    showInfo(QString("Session saved to %1.").arg(path));
    return true;
}

bool MainWindow::loadSession(const QString& path) {
    QString error;
    const auto s = SessionFile::read(path, &error);
    if (!s) {
        showError("Cannot open the session", error);
        return false;
    }
    addRecent("recent/sessions", path);
    applySession(*s);
    return true;
}

// ---- export ----

bool MainWindow::exportCurrentPlot(const QString& path) {
    QString error;
    bool ok = false;
    const QString v = currentViewName();
    if (v == "overview") ok = exportPlot(m_overview->plot(), path, &error);
    else if (v == "head") ok = exportPlot(m_head->plot(), path, &error);
    else if (v == "compare") ok = exportPlot(m_compare->plot(), path, &error);
    else ok = exportWidget(m_document->textView(), path, &error);
    if (!ok) showError("Export failed", error);
    else showInfo(QString("Plot exported to %1.").arg(path));
    return ok;
}

bool MainWindow::exportCurrentData(const QString& path) {
    QString error;
    const bool ok = exportData(*m_state, path, &error);
    if (!ok) showError("Export failed", error);
    else showInfo(QString("Data exported to %1.").arg(path));
    return ok;
}

// ---- dialogs ----

void MainWindow::onOpenModel() {
    const QString path = QFileDialog::getOpenFileName(
        this, "Open a model", QFileInfo(m_prompt->modelPath()).absolutePath(),
        "GGUF models (*.gguf);;Safetensors (*.safetensors);;All files (*)");
    if (path.isEmpty()) return;
    // A .safetensors file stands for its Hugging Face folder.
    openModel(path.endsWith(".safetensors") ? QFileInfo(path).absolutePath() : path);
}

void MainWindow::onOpenDocument() {
    const QString path = QFileDialog::getOpenFileName(this, "Open a document",
                                                      QFileInfo(m_prompt->documentPath()).absolutePath(),
                                                      "Text and markdown (*.txt *.md *.markdown);;All files (*)");
    if (!path.isEmpty()) openDocument(path);
}

void MainWindow::onSaveSession() {
    QString path = QFileDialog::getSaveFileName(this, "Save session", "session.snapkv.json",
                                                "SnapKV Studio sessions (*.snapkv.json *.json)");
    if (path.isEmpty()) return;
    if (!path.endsWith(".json")) path += ".snapkv.json";
    saveSession(path);
}

void MainWindow::onLoadSession() {
    const QString path = QFileDialog::getOpenFileName(this, "Open session", QString(),
                                                      "SnapKV Studio sessions (*.snapkv.json *.json);;All files (*)");
    if (!path.isEmpty()) loadSession(path);
}

void MainWindow::onExportPlot() {
    QString selected;
    const QString path = QFileDialog::getSaveFileName(
        this, "Export plot", currentViewName() + ".png",
        "PNG image (*.png);;SVG vector image (*.svg);;PDF document (*.pdf)", &selected);
    if (!path.isEmpty()) exportCurrentPlot(path);
}

void MainWindow::onExportData() {
    const QString path = QFileDialog::getSaveFileName(this, "Export data", "snapkv-analysis.json",
                                                      "JSON, everything (*.json);;CSV, focused head (*.csv)");
    if (!path.isEmpty()) exportCurrentData(path);
}

}  // namespace studio
