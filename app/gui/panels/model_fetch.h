// Help > Get a Model…: tells a user without a model where the default one comes from and, when
// asked, runs the project's fetch script (datasets/fetch_model.sh, installed as part of the data)
// in a QProcess, showing its output. It has no download code of its own and never blocks the GUI.
#pragma once

#include <QDialog>
#include <QString>

class QLabel;
class QPlainTextEdit;
class QProcess;
class QPushButton;

namespace studio {

// The fetch script: datasets/fetch_model.sh from the installed data or the source tree; "" if none.
QString fetchScriptPath();
// Where the script puts the model: the source tree's models/ when it runs from one, else
// userModelsDir() (an installed copy: /usr/share is not the user's to write).
QString fetchDestination(const QString& script);

class GetModelDialog : public QDialog {
    Q_OBJECT
public:
    explicit GetModelDialog(QWidget* parent = nullptr);
    ~GetModelDialog() override;

signals:
    // The script finished and the default model is at `path`.
    void modelFetched(const QString& path);

private slots:
    void onDownload();
    void onFinished(int exitCode);

private:
    QString m_script;
    QLabel* m_text = nullptr;
    QPlainTextEdit* m_log = nullptr;
    QPushButton* m_download = nullptr;
    QProcess* m_process = nullptr;
};

}  // namespace studio
