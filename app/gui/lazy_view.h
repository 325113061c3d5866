// Base for the four views: state signals only mark a view dirty; it redraws once per event-loop
// turn while visible, or when it is next shown. A burst of signals (selection, then attention, then
// focus) costs one repaint, and hidden views cost nothing during live tuning.
#pragma once

#include <QElapsedTimer>
#include <QTimer>
#include <QWidget>

namespace studio {

class LazyView : public QWidget {
    Q_OBJECT
public:
    explicit LazyView(QWidget* parent = nullptr) : QWidget(parent) {}
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

protected:
    virtual void refresh() = 0;
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
};

}  // namespace studio
