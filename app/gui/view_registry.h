// The views of the main window, registered once: each row says the view's name (--view, session
// files, the export's file name, screenshots), its tab title, its View-menu entry and shortcut,
// what a headless screenshot of it needs, how its plot is exported and how it is created. The tabs,
// the View menu, the shortcuts dialog, --view and its help, the headless driver and the session
// file all read this table; no other list of view names exists. It creates views and nothing else:
// ViewTabs (view_tabs.h) owns them, MainWindow wires them to runs.
#pragma once

#include <QString>
#include <QStringList>
#include <QStyle>

#include <vector>

namespace studio {

class AnalysisState;
class LazyView;

struct ViewSpec {
    const char* name;      // "overview": --view, session files, File > Export Plot's file name
    const char* title;     // the tab's title
    const char* menuText;  // the View menu's entry, with its & mnemonic
    const char* tip;       // status tip and tooltip of the View-menu entry
    const char* shortcut;  // the View-menu entry's key, e.g. "Ctrl+1"
    QStyle::StandardPixmap icon;
    // Draws the run's results (AnalysisState): a retune redraws it (--bench-retune times all of
    // these) and its empty state's Run button runs.
    bool drawsAnalysis;
    // A headless screenshot of it generates with both caches first (--max-tokens tokens).
    bool screenshotGenerates;
    LazyView* (*create)(AnalysisState* state);
    // File > Export Plot while it is current: by the path's suffix (.png, .svg, .pdf).
    bool (*exportPlot)(LazyView* view, const QString& path, QString* error);
};

// In tab order.
const std::vector<ViewSpec>& viewSpecs();
// nullptr when no view has this name.
const ViewSpec* findViewSpec(const QString& name);
QStringList viewNames();
// "overview, head, document, compare or evaluate" (--help).
QString viewNamesText();

}  // namespace studio
