// Base for the four views: state signals only mark a view dirty; it redraws once per event-loop
// turn while visible, or when it is next shown. A burst of signals (selection, then attention, then
// focus) costs one repaint, and hidden views cost nothing during live tuning.
// Views also share an empty state: while there is nothing to draw, a panel says what to do
// instead of showing empty axes.
#pragma once

#include <QElapsedTimer>
#include <QStackedWidget>
#include <QTimer>
#include <QWidget>

#include "app/gui/panels/empty_state.h"

namespace studio {

class LazyView : public QWidget {
    Q_OBJECT
public:
    explicit LazyView(QWidget* parent = nullptr) : QWidget(parent) {}
    // Whether the empty-state panel stands in for the view's content, and its text.
    bool emptyStateShown() const { return m_stack && m_stack->currentWidget() == m_empty; }
    QString emptyStateText() const { return m_empty ? m_empty->title() + "\n" + m_empty->body() : QString(); }
    // Redraw now if anything changed (tests and screenshots call this).
    void refreshNow() {
        if (!m_dirty) return;
        m_dirty = false;
        // SNAPKV_GUI_PROFILE=1 prints how long each view takes to redraw.
        static const bool profile = qEnvironmentVariableIntValue("SNAPKV_GUI_PROFILE") != 0;
        QElapsedTimer t;
        if (profile) t.start();
        refresh();
        if (profile) qInfo("%s refresh %.1f ms", metaObject()->className(), t.nsecsElapsed() / 1e6);
        Q_EMIT refreshed();
    }
    bool isDirty() const { return m_dirty; }

Q_SIGNALS:
    void refreshed();
    void runRequested();  // the empty state's Run button

protected:
    virtual void refresh() = 0;
    // Puts `content` in a stack with the empty-state panel; returns the stack for the layout.
    QWidget* wrapWithEmptyState(QWidget* content) {
        m_stack = new QStackedWidget;
        m_empty = new EmptyState;
        m_stack->addWidget(content);
        m_stack->addWidget(m_empty);
        connect(m_empty, &EmptyState::actionTriggered, this, &LazyView::runRequested);
        return m_stack;
    }
    // title empty: show the content; otherwise the panel with this text (and a Run button if asked).
    void setEmptyState(const QString& title, const QString& body = QString(), bool runButton = false) {
        if (!m_stack) return;
        if (title.isEmpty()) {
            m_stack->setCurrentIndex(0);
            return;
        }
        m_empty->setMessage(title, body, runButton ? QStringLiteral("Run (F5)") : QString());
        m_stack->setCurrentWidget(m_empty);
    }
    void markDirty() {
        m_dirty = true;
        if (isVisible() && !m_scheduled) {
            m_scheduled = true;
            QTimer::singleShot(0, this, [this] {
                m_scheduled = false;
                if (isVisible()) refreshNow();
            });
        }
    }
    void showEvent(QShowEvent* e) override {
        QWidget::showEvent(e);
        refreshNow();
    }

private:
    bool m_dirty = true;
    bool m_scheduled = false;
    QStackedWidget* m_stack = nullptr;
    EmptyState* m_empty = nullptr;
};

}  // namespace studio
