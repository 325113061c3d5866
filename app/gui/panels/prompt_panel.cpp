// PromptPanel: model/device/dtype/weights row, document editor, question line.
#include "app/gui/panels/prompt_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace studio {

PromptPanel::PromptPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    auto* form = new QFormLayout;
    form->setLabelAlignment(Qt::AlignRight);

    auto* modelRow = new QHBoxLayout;
    m_model = new QLineEdit;
    m_model->setObjectName("modelPathEdit");
    m_model->setPlaceholderText("GGUF file or Hugging Face folder");
    auto* browse = new QPushButton("…");
    browse->setToolTip("Open a model (Ctrl+Shift+O)");
    browse->setMaximumWidth(32);
    modelRow->addWidget(m_model, 1);
    modelRow->addWidget(browse);
    form->addRow("Model", modelRow);

    auto* devRow = new QHBoxLayout;
    m_device = new QComboBox;
    m_device->setObjectName("deviceCombo");
    m_device->addItem("cpu");
    m_dtype = new QComboBox;
    m_dtype->setObjectName("dtypeCombo");
    m_dtype->addItems({"float32", "float16", "bfloat16"});
    m_weights = new QComboBox;
    m_weights->setObjectName("weightsCombo");
    m_weights->addItem("native", "native");
    // Short labels: the row holds three combos, and a longer item widened the panel and the window.
    m_weights->addItem("native-q8", "native-q8");
    m_weights->addItem("float32", "f32");
    m_weights->setToolTip(
        "native: keep the file's weight format in memory (quantized blocks, 16-bit), "
        "dequantized on the fly; native-q8: the same, and decode's products quantize their "
        "input to 8 bits per block as llama.cpp does (faster, results differ slightly); float32: "
        "dequantize every weight at load (CPU)");
    devRow->addWidget(m_device, 1);
    devRow->addWidget(m_dtype, 1);
    devRow->addWidget(m_weights, 1);
    m_cacheType = new QComboBox;
    m_cacheType->setObjectName("cacheTypeCombo");
    for (snapkv::KvType t : snapkv::all_kv_types())
        m_cacheType->addItem(QString("KV %1").arg(snapkv::kv_type_name(t)), QString(snapkv::kv_type_name(t)));
    m_cacheType->setToolTip(
        "How the KV cache stores keys and values (llama.cpp's -ctk/-ctv): f32 exact; f16 and bf16 half the "
        "bytes; q8_0 about a quarter. Takes effect at the next Run, without reloading the model.");
    devRow->addWidget(m_cacheType, 1);
    form->addRow("Device", devRow);
    m_modelStatus = new QLabel;
    m_modelStatus->setObjectName("modelStatusLabel");
    m_modelStatus->setWordWrap(true);
    m_modelStatus->setStyleSheet("color:#555");
    form->addRow("", m_modelStatus);
    layout->addLayout(form);

    auto* docHead = new QHBoxLayout;
    docHead->addWidget(new QLabel("<b>Document</b>"));
    m_docInfo = new QLabel;
    m_docInfo->setStyleSheet("color:#555");
    docHead->addWidget(m_docInfo, 1);
    auto* openDoc = new QPushButton("Open…");
    openDoc->setToolTip("Open a text or markdown document (Ctrl+O)");
    docHead->addWidget(openDoc);
    layout->addLayout(docHead);
    m_document = new QPlainTextEdit;
    m_document->setObjectName("documentEdit");
    m_document->setPlaceholderText("Paste or open a document; drop a file on the window.");
    layout->addWidget(m_document, 1);
    layout->addWidget(new QLabel("<b>Question</b>"));
    m_question = new QLineEdit;
    m_question->setObjectName("questionEdit");
    m_question->setPlaceholderText("What should the model answer about the document?");
    layout->addWidget(m_question);
    m_prefixRow = new QWidget;
    auto* prefixLayout = new QHBoxLayout(m_prefixRow);
    prefixLayout->setContentsMargins(0, 0, 0, 0);
    prefixLayout->addWidget(new QLabel("Answer starts with"));
    m_answerPrefix = new QLineEdit;
    m_answerPrefix->setObjectName("answerPrefixEdit");
    m_answerPrefix->setToolTip(
        "Words placed at the start of the answer (after the chat template's assistant header), "
        "as RULER prompts do; clear it to ask the question alone.");
    prefixLayout->addWidget(m_answerPrefix, 1);
    m_prefixRow->hide();
    layout->addWidget(m_prefixRow);
    m_chat = new QCheckBox("wrap in the model's chat template");
    m_chat->setObjectName("chatCheck");
    m_chat->setChecked(true);
    layout->addWidget(m_chat);
    auto* systemRow = new QHBoxLayout;
    systemRow->addWidget(new QLabel("System prompt"));
    m_system = new QLineEdit;
    m_system->setObjectName("systemPromptEdit");
    m_system->setPlaceholderText("none (the template's default, if it has one)");
    m_system->setToolTip(
        "A system message put before the question, as the template writes it (View > Prompt shows the "
        "result)");
    systemRow->addWidget(m_system, 1);
    layout->addLayout(systemRow);
    connect(m_chat, &QCheckBox::toggled, m_system, &QWidget::setEnabled);

    connect(browse, &QPushButton::clicked, this, &PromptPanel::browseModelRequested);
    connect(openDoc, &QPushButton::clicked, this, &PromptPanel::openDocumentRequested);
    connect(m_device, qOverload<int>(&QComboBox::activated), this, &PromptPanel::modelOptionsChanged);
    connect(m_dtype, qOverload<int>(&QComboBox::activated), this, &PromptPanel::modelOptionsChanged);
    connect(m_weights, qOverload<int>(&QComboBox::activated), this, &PromptPanel::modelOptionsChanged);
    connect(m_document, &QPlainTextEdit::textChanged, this, [this] {
        const int chars = m_document->document()->characterCount();
        m_docInfo->setText(
            QString("%1 characters%2")
                .arg(chars)
                .arg(m_documentPath.isEmpty() ? QString() : " · " + QFileInfo(m_documentPath).fileName()));
    });
}

QString PromptPanel::modelPath() const { return m_model->text().trimmed(); }
void PromptPanel::setModelPath(const QString& path) { m_model->setText(path); }

snapkv::LoadOptions PromptPanel::loadOptions() const {
    snapkv::LoadOptions o;
    o.device = m_device->currentText().toStdString();
    o.dtype = m_dtype->currentText().toStdString();
    o.weights = m_weights->currentData().toString().toStdString();
    o.cache_type = m_cacheType->currentData().toString().toStdString();
    return o;
}

void PromptPanel::setLoadOptions(const snapkv::LoadOptions& o) {
    const int d = m_device->findText(QString::fromStdString(o.device));
    if (d >= 0) m_device->setCurrentIndex(d);
    const int t = m_dtype->findText(QString::fromStdString(o.dtype));
    if (t >= 0) m_dtype->setCurrentIndex(t);
    const int w = m_weights->findData(QString::fromStdString(o.weights));
    if (w >= 0) m_weights->setCurrentIndex(w);
    const int k = m_cacheType->findData(QString::fromStdString(o.cache_type));
    if (k >= 0) m_cacheType->setCurrentIndex(k);
}

void PromptPanel::setCudaAvailable(bool available) {
    if (available && m_device->findText("cuda") < 0) m_device->addItem("cuda");
    // Half precision is a CUDA option in core.
    m_dtype->setEnabled(available);
}

QString PromptPanel::document() const { return m_document->toPlainText(); }
void PromptPanel::setDocument(const QString& text, const QString& path) {
    m_documentPath = path;
    m_document->setPlainText(text);
}
QString PromptPanel::question() const { return m_question->text(); }
void PromptPanel::setQuestion(const QString& q) { m_question->setText(q.trimmed()); }
bool PromptPanel::chat() const { return m_chat->isChecked(); }
void PromptPanel::setChat(bool on) { m_chat->setChecked(on); }
QString PromptPanel::systemPrompt() const { return m_system->text(); }
void PromptPanel::setSystemPrompt(const QString& text) { m_system->setText(text); }
QString PromptPanel::answerPrefix() const { return m_answerPrefix->text(); }
void PromptPanel::setAnswerPrefix(const QString& prefix) {
    m_answerPrefix->setText(prefix);
    m_prefixRow->setVisible(!prefix.isEmpty());
}
void PromptPanel::setModelStatus(const QString& text) { m_modelStatus->setText(text); }

void PromptPanel::setChatTemplate(bool hasModel, bool hasTemplate, int lines) {
    if (hasModel && !hasTemplate) {
        m_chat->setText("wrap in the model's chat template (it has none: plain text)");
        m_chat->setToolTip(
            "This model has no chat template: the document and the question are joined by a blank line "
            "as plain text (after the system prompt, if any), whether or not this is on.");
    } else {
        m_chat->setText(hasModel ? QString("wrap in the model's chat template (%1 lines of Jinja)").arg(lines)
                                 : QString("wrap in the model's chat template"));
        m_chat->setToolTip(hasModel ? QString("The template is rendered as transformers renders it; View > Prompt "
                                              "shows the text and tokens the model receives.")
                                    : QString());
    }
}

snapkv::PromptSpec PromptPanel::promptSpec() const {
    snapkv::PromptSpec p;
    p.document = document().toStdString();
    p.question = question().toStdString();
    p.chat.enabled = chat();
    if (p.chat.enabled) p.chat.system = systemPrompt().toStdString();
    p.answer_prefix = answerPrefix().toStdString();
    if (p.question.empty() && !p.chat.enabled) {
        p.text = p.document;
        p.document.clear();
    }
    return p;
}

}  // namespace studio
