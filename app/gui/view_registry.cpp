// The table of views (see view_registry.h). Adding a view: its files in views/ and one row here.
#include "app/gui/view_registry.h"

#include "app/gui/files/data_export.h"
#include "app/gui/views/compare_view.h"
#include "app/gui/views/document_view.h"
#include "app/gui/views/evaluate_view.h"
#include "app/gui/views/head_view.h"
#include "app/gui/views/overview_view.h"
#include "app/gui/views/timeline_view.h"

namespace studio {

namespace {

template <class View>
LazyView* create(AnalysisState* state) {
    return new View(state);
}

// The plot of a view that draws into one QCustomPlot.
template <class View>
bool exportViewPlot(LazyView* view, const QString& path, QString* error) {
    return exportPlot(static_cast<View*>(view)->plot(), path, error);
}

}  // namespace

const std::vector<ViewSpec>& viewSpecs() {
    static const std::vector<ViewSpec> specs = {
        {"overview", "Overview (layers x heads)", "&Overview", "Show the overview view", "Ctrl+1",
         QStyle::SP_FileDialogListView, true, false, &create<OverviewView>, &exportViewPlot<OverviewView>},
        {"head", "Head detail", "&Head Detail", "Show the head view", "Ctrl+2", QStyle::SP_FileDialogListView, true,
         false, &create<HeadView>, &exportViewPlot<HeadView>},
        {"document", "Document", "&Document", "Show the document view", "Ctrl+3", QStyle::SP_FileDialogListView, true,
         false, &create<DocumentView>,
         // The shaded text as it looks on screen.
         [](LazyView* v, const QString& path, QString* error) {
             return exportWidget(static_cast<DocumentView*>(v)->textView(), path, error);
         }},
        {"compare", "Compare full vs compressed", "&Compare", "Show the compare view", "Ctrl+4",
         QStyle::SP_FileDialogListView, true, true, &create<CompareView>, &exportViewPlot<CompareView>},
        {"timeline", "Timeline (the cache while generating)", "&Timeline",
         "Show which positions the compressed cache holds at each generation step", "Ctrl+6",
         QStyle::SP_FileDialogListView, true, true, &create<TimelineView>, &exportViewPlot<TimelineView>},
        {"evaluate", "Evaluate (needle, sweeps, RULER)", "&Evaluate", "Needle-in-a-haystack grids and budget sweeps",
         "Ctrl+5", QStyle::SP_FileDialogContentsView, false, false,
         [](AnalysisState*) -> LazyView* { return new EvaluateView; },
         [](LazyView* v, const QString& path, QString* error) {
             return static_cast<EvaluateView*>(v)->exportPlot(path, error);
         }},
    };
    return specs;
}

const ViewSpec* findViewSpec(const QString& name) {
    for (const ViewSpec& s : viewSpecs())
        if (name == QLatin1String(s.name)) return &s;
    return nullptr;
}

QStringList viewNames() {
    QStringList names;
    for (const ViewSpec& s : viewSpecs()) names << s.name;
    return names;
}

QString viewNamesText() {
    QStringList names = viewNames();
    const QString last = names.takeLast();
    return names.join(", ") + " or " + last;
}

}  // namespace studio
