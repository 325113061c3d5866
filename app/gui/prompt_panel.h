// The inputs of a run: model file and device/dtype, document, question, chat template switch.
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
    void setModelStatus(const QString& text);
    // The loaded model's chat format ("chatml", "gemma", ..., "raw" when it has no template, as
    // Gemma 3 270M's base GGUF): named next to the chat switch, so that a switch that cannot wrap
    // anything says so. Empty: no model loaded.
    void setChatFormat(const QString& format);
    snapkv::PromptSpec promptSpec() const;

Q_SIGNALS:
    void browseModelRequested();
    void openDocumentRequested();
    void modelOptionsChanged();      // device or dtype changed: the model must be reloaded

private:
    QLineEdit* m_model;
    QComboBox* m_device;
    QComboBox* m_dtype;
    QComboBox* m_weights;
    QLabel* m_modelStatus;
    QPlainTextEdit* m_document;
    QLineEdit* m_question;
    QCheckBox* m_chat;
    QLabel* m_docInfo;
    QString m_documentPath;
};

}  // namespace studio
