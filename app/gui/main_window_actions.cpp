// MainWindow's handlers: the inputs (model, document, question), running and generating from the
// panels' values, the reactions to RunController's results, the walkthrough, and the file work
// handed to FileActions.
#include <algorithm>

#include <QDockWidget>
#include <QFileInfo>
#include <QLocale>
#include <QMessageBox>

#include "app/gui/file_actions.h"
#include "app/gui/files/text_file.h"
#include "app/gui/main_window.h"
#include "app/gui/panels/model_fetch.h"
#include "app/gui/panels/model_menu.h"
#include "app/gui/panels/notice_banner.h"
#include "app/gui/panels/parameter_panel.h"
#include "app/gui/panels/prompt_panel.h"
#include "app/gui/panels/run_status.h"
#include "app/gui/panels/walkthrough.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/state/app_paths.h"
#include "app/gui/view_tabs.h"
#include "app/gui/views/compare_view.h"
#include "app/gui/views/document_view.h"
#include "app/gui/views/head_view.h"
#include "app/gui/views/overview_view.h"
#include "app/gui/workers/eval_worker.h"
#include "app/gui/workers/run_controller.h"
#include "core/common/units.h"

namespace studio {

namespace {
QString humanBytes(int64_t b) { return QString::fromStdString(snapkv::format_bytes(b)); }
}  // namespace

// ---- inputs ----

void MainWindow::setModelPath(const QString& path) {
    m_prompt->setModelPath(path);
    if (!path.isEmpty()) {
        m_banner->setNotice(QString());
        return;
    }
    bool others = false;  // models other than the default in models/ (e.g. only Gemma 3 fetched)
    for (const QString& folder : modelFolders()) others = others || !listModels(folder).isEmpty();
    m_banner->setNotice(QString("No model found. The default is models/%1 (Help > Get a Model fetches it); %2")
                            .arg(defaultModelFileName(),
                                 others ? QString("pick one of the models in models/ from the Model menu, or open a "
                                                  "GGUF file or a Hugging Face folder.")
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
    m_files->addRecentModel(path);
    m_controller->loadModel(path, m_prompt->loadOptions());
}

bool MainWindow::openDocument(const QString& path) {
    const bool ok = m_files->openDocument(path);
    if (ok) updateTitle();
    return ok;
}

void MainWindow::setDocumentText(const QString& text) { m_prompt->setDocument(text); }
void MainWindow::setQuestion(const QString& question) { m_prompt->setQuestion(question); }

bool MainWindow::setQuestionFromArg(const QString& textOrPath) {
    if (!QFileInfo(textOrPath).isFile()) {
        setQuestion(textOrPath);
        return true;
    }
    QString error;
    const auto text = readTextFile(textOrPath, &error);
    if (!text) {
        showError("Cannot open the question", error);
        return false;
    }
    setQuestion(*text);
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
    r.reserveTokens = compareView()->maxTokens();
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
    RunController::RunFocus focus;
    focus.layer = cell.focusLayer;
    focus.head = cell.focusHead;
    focus.leastKept = cell.focusLeastKept;
    for (const auto& m : cell.marks) focus.marks.push_back({m.first, m.last, m.label});
    m_controller->focusAfterRun(std::move(focus));
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
    if (maxTokens > 0) compareView()->setMaxTokens(maxTokens);
    snapkv::GenerationSettings g;
    g.max_tokens = compareView()->maxTokens();
    m_params->flush();
    m_controller->compare(g);
    showView("compare");
    return true;
}

// ---- results ----

void MainWindow::onRunFinished() {
    const auto* sel = m_state->selection();
    QString msg = QString("Prefill of %1 tokens in %2 ms; selection in %3 ms.")
                      .arg(m_state->prefill().n_tokens)
                      .arg(m_state->prefill().prefill_ms, 0, 'f', 0)
                      .arg(m_controller->lastSelectMs(), 0, 'f', 1);
    if (sel && !sel->note.empty()) msg += " " + QString::fromStdString(sel->note);
    showInfo(msg);
}

void MainWindow::onRetuneApplied() {
    const auto r = m_state->retune();
    if (!r || r->kvBytesFull <= 0) return;
    const bool larger = r->kvBytesKept > r->kvBytesFull;
    const double factor = larger               ? double(r->kvBytesKept) / r->kvBytesFull
                          : r->kvBytesKept > 0 ? double(r->kvBytesFull) / r->kvBytesKept
                                               : 0.0;
    m_status->setText(QString("%1 · KV cache %2 → %3 (%4x %5)")
                          .arg(m_state->params().summary(), humanBytes(r->kvBytesFull), humanBytes(r->kvBytesKept))
                          .arg(factor, 0, 'f', 2)
                          .arg(!larger ? "smaller"
                               : r->selection && r->selection->params.gqa == snapkv::GqaMode::QueryHead
                                   ? "larger: query heads stored separately, see Parameters"
                                   : "larger"));
    m_params->setCacheReport(r->kvBytesFull, r->kvBytesKept, r->cacheNote);
}

void MainWindow::onModelLoaded() {
    const auto& m = m_state->model();
    const auto& c = m.config;
    const QString weights = QString("weights %1 %2")
                                .arg(QLocale().formattedDataSize(m.weight_bytes))
                                .arg(m.weights != "f32" ? QString::fromStdString(m.weights)
                                                        : QString::fromStdString(m.dtype));
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
    m_banner->setNotice(QString());
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

// ---- views and the walkthrough ----

bool MainWindow::showView(const QString& name) { return m_views->showView(name); }
QString MainWindow::currentViewName() const { return m_views->currentViewName(); }

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
    headView()->setHighlight(e == "window"    ? HeadHighlight::Window
                             : e == "votes"   ? HeadHighlight::Votes
                             : e == "pooling" ? HeadHighlight::Pooling
                             : e == "topk"    ? HeadHighlight::TopK
                                              : HeadHighlight::None);
    documentView()->setHighlightWindow(e == "window" || e == "document");
    overviewView()->setHighlight(m_views->currentWidget() == overviewView() && !step.title.isEmpty());
    if (e == "generate" && m_state->hasPrefill() && !m_state->comparison() && !m_controller->busy()) generate();
}

// ---- files (FileActions) ----

bool MainWindow::saveSession(const QString& path) { return m_files->saveSession(path); }

bool MainWindow::loadSession(const QString& path) { return m_files->loadSession(path); }

bool MainWindow::exportCurrentPlot(const QString& path) { return m_files->exportCurrentPlot(path); }
bool MainWindow::exportCurrentData(const QString& path) { return m_files->exportCurrentData(path); }

}  // namespace studio
