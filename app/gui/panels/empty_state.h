// The panel a view shows instead of empty axes while it has nothing to draw: a title, a sentence
// on what to do, and a button for that action (Run). Views hold it in a QStackedWidget next to
// their plots (LazyView::wrapWithEmptyState); it holds no state of its own.
#pragma once

#include <QWidget>

class QLabel;
class QPushButton;

namespace studio {

class EmptyState : public QWidget {
    Q_OBJECT
public:
    explicit EmptyState(QWidget* parent = nullptr);
    // action: the button's text, or empty for no button.
    void setMessage(const QString& title, const QString& body, const QString& action);
    QString title() const;
    QString body() const;

Q_SIGNALS:
    void actionTriggered();

private:
    QLabel* m_title;
    QLabel* m_body;
    QPushButton* m_action;
};

}  // namespace studio
