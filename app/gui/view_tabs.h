// The main window's tabs: one view per row of the view registry (view_registry.h), created in its
// order, each with its View-menu action (checked while its tab is current); showing a view by
// name, the current view's name, exporting its plot, redrawing for a screenshot. It does not wire
// the views to runs, files or the walkthrough (MainWindow does).
#pragma once

#include <QList>
#include <QTabWidget>

class QAction;

namespace studio {

class AnalysisState;
class LazyView;
struct ViewSpec;

class ViewTabs : public QTabWidget {
    Q_OBJECT
public:
    explicit ViewTabs(AnalysisState* state, QWidget* parent = nullptr);

    // False (and nothing changes) for a name the registry does not hold.
    bool showView(const QString& name);
    QString currentViewName() const;
    // The views and their View-menu actions, in the registry's order.
    const QList<LazyView*>& views() const { return m_views; }
    const QList<QAction*>& viewActions() const { return m_actions; }
    // The one view of this class (each view class appears once in the registry).
    template <class View>
    View* view() const {
        for (LazyView* v : m_views)
            if (auto* t = qobject_cast<View*>(v)) return t;
        return nullptr;
    }
    // The views that draw the run's results (ViewSpec::drawsAnalysis).
    QList<LazyView*> analysisViews() const;
    // The current view's plot (ViewSpec::exportPlot).
    bool exportCurrentPlot(const QString& path, QString* error) const;
    // Redraws every view now if anything changed (screenshots).
    void refreshAll() const;

private:
    QList<LazyView*> m_views;
    QList<const ViewSpec*> m_specs;
    QList<QAction*> m_actions;
};

}  // namespace studio
