// The File menu's work: the dialogs that open models, model folders, documents and sessions, save
// sessions and export the current plot and data; the recent lists; what a session holds, read from
// the window's parts and given back to them; and the settings a plain start restores (layout,
// parameters, display, device, the last model). Files are read and written by files/; this object
// asks for paths, reports errors through the window and runs nothing itself (a session that had
// results asks the window to run).
#pragma once

#include <QObject>
#include <QString>

class QAction;
class QMenu;

namespace studio {

class MainWindow;
struct SessionFile;

class FileActions : public QObject {
    Q_OBJECT
public:
    explicit FileActions(MainWindow* window);

    // Fills the File menu (with the recent lists) and ends it with `quit`.
    void fillFileMenu(QMenu* file, QAction* quit);
    // Opening, for the toolbar and the Model menu.
    QAction* openModelAction() const { return m_openModel; }
    QAction* openModelFolderAction() const { return m_openModelFolder; }
    QAction* openDocumentAction() const { return m_openDocument; }
    QAction* exportPlotAction() const { return m_exportPlot; }
    // The actions with shortcuts, in the shortcuts dialog's order.
    QList<QAction*> shortcutActions() const;

    bool openDocument(const QString& path);
    bool saveSession(const QString& path);
    bool loadSession(const QString& path);
    bool exportCurrentPlot(const QString& path);
    bool exportCurrentData(const QString& path);
    // Remembers an opened model in Recent Models (only while settings persist).
    void addRecentModel(const QString& path);

    void restoreSettings();
    void saveSettings() const;

    // The dialogs.
    void onOpenModel();
    void onOpenDocument();

private:
    SessionFile currentSession() const;
    void applySession(const SessionFile& s);
    // A model, document or session in its recent list (only while settings persist).
    void addRecent(const QString& key, const QString& path);
    void rebuildRecentMenu(QMenu* menu, const QString& key);

    MainWindow* m_w;
    QAction* m_openModel;
    QAction* m_openModelFolder;
    QAction* m_openDocument;
    QAction* m_loadSession;
    QAction* m_saveSession;
    QAction* m_exportPlot;
    QAction* m_exportData;
};

}  // namespace studio
