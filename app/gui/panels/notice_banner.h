// The yellow strip above the views that says what is missing (no model found) with a button to fix
// it (Open Model…). Hidden while its text is empty; it decides nothing itself.
#pragma once

#include <QWidget>

class QLabel;

namespace studio {

class NoticeBanner : public QWidget {
    Q_OBJECT
public:
    explicit NoticeBanner(const QString& actionText, QWidget* parent = nullptr);
    // Empty: hidden.
    void setNotice(const QString& text);

Q_SIGNALS:
    void actionRequested();

private:
    QLabel* m_text;
};

}  // namespace studio
