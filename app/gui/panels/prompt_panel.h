// The inputs of a run: model file and device/dtype, document, question (and the answer's first
// words, when an evaluation sample has them), chat template switch and system message.
// Only widgets and getters; opening files and running are MainWindow's business.
#pragma once

#include <QWidget>

#include "core/session/session.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;

namespace studio {

class PromptPanel : public QWidget {
    Q_OBJECT
public:
    explicit PromptPanel(QWidget* parent = nullptr);

    QString modelPath() const;
    void setModelPath(const QString& path);
    snapkv::LoadOptions loadOptions() const;
    void setLoadOptions(const snapkv::LoadOptions& o);
    void setCudaAvailable(bool available);
    QString document() const;
    QString documentPath() const { return m_documentPath; }
    void setDocument(const QString& text, const QString& path = QString());
    QString question() const;
    void setQuestion(const QString& q);
    bool chat() const;
    void setChat(bool on);
    // The system message put before the question in the chat template ("" = none).
    QString systemPrompt() const;
    void setSystemPrompt(const QString& text);
    // Words the answer starts with (RULER's answer prefix, set when a RULER sample is opened): part
    // of the prompt, shown under the question only while set.
    QString answerPrefix() const;
    void setAnswerPrefix(const QString& prefix);
    void setModelStatus(const QString& text);
    // Whether the loaded model has a chat template (Gemma 3 270M's base GGUF has none), said
    // next to the chat switch, so that a switch that cannot wrap anything says so. lines: the
    // template's length; hasModel false: no model loaded.
    void setChatTemplate(bool hasModel, bool hasTemplate, int lines);
    snapkv::PromptSpec promptSpec() const;

Q_SIGNALS:
    void browseModelRequested();
    void openDocumentRequested();
    void modelOptionsChanged();  // device or dtype changed: the model must be reloaded

private:
    QLineEdit* m_model;
    QComboBox* m_device;
    QComboBox* m_dtype;
    QComboBox* m_cacheType;  // the KV cache's storage type (kv_type.h): a new prefill, no reload
    QComboBox* m_weights;
    QLabel* m_modelStatus;
    QPlainTextEdit* m_document;
    QLineEdit* m_question;
    QWidget* m_prefixRow;
    QLineEdit* m_answerPrefix;
    QCheckBox* m_chat;
    QLineEdit* m_system;
    QLabel* m_docInfo;
    QString m_documentPath;
};

}  // namespace studio
