// ViewTabs: the registry's views as tabs and their View-menu actions (see view_tabs.h).
#include "app/gui/view_tabs.h"

#include <QAction>

#include "app/gui/action_util.h"
#include "app/gui/view_registry.h"
#include "app/gui/views/lazy_view.h"

namespace studio {

ViewTabs::ViewTabs(AnalysisState* state, QWidget* parent) : QTabWidget(parent) {
    setObjectName("viewTabs");
    for (const ViewSpec& spec : viewSpecs()) {
        LazyView* v = spec.create(state);
        addTab(v, spec.title);
        m_views << v;
        m_specs << &spec;
        QAction* a = makeAction(this, spec.menuText, {QKeySequence(spec.shortcut)}, spec.icon, spec.tip);
        a->setCheckable(true);
        connect(a, &QAction::triggered, this, [this, v] {
            setCurrentWidget(v);
            // A click on the current view's entry would uncheck it: keep the marks true.
            for (int i = 0; i < m_actions.size(); ++i) m_actions[i]->setChecked(i == currentIndex());
        });
        m_actions << a;
    }
    auto mark = [this] {
        for (int i = 0; i < m_actions.size(); ++i) m_actions[i]->setChecked(i == currentIndex());
    };
    connect(this, &QTabWidget::currentChanged, this, mark);
    mark();
}

bool ViewTabs::showView(const QString& name) {
    for (int i = 0; i < m_specs.size(); ++i) {
        if (name == QLatin1String(m_specs[i]->name)) {
            setCurrentIndex(i);
            return true;
        }
    }
    return false;
}

QString ViewTabs::currentViewName() const {
    const int i = currentIndex();
    return i >= 0 && i < m_specs.size() ? QString(m_specs[i]->name) : QString();
}

QList<LazyView*> ViewTabs::analysisViews() const {
    QList<LazyView*> out;
    for (int i = 0; i < m_views.size(); ++i)
        if (m_specs[i]->drawsAnalysis) out << m_views[i];
    return out;
}

bool ViewTabs::exportCurrentPlot(const QString& path, QString* error) const {
    const int i = currentIndex();
    if (i < 0 || i >= m_specs.size()) {
        *error = "no view is shown";
        return false;
    }
    return m_specs[i]->exportPlot(m_views[i], path, error);
}

void ViewTabs::refreshAll() const {
    for (LazyView* v : m_views) v->refreshNow();
}

}  // namespace studio
