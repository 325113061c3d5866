// A dialog listing every action that has a keyboard shortcut (Help > Keyboard Shortcuts, F1).
#pragma once

#include <QDialog>
#include <QList>

class QAction;

namespace studio {

class ShortcutsDialog : public QDialog {
    Q_OBJECT
public:
    ShortcutsDialog(const QList<QAction*>& actions, QWidget* parent = nullptr);
};

}  // namespace studio
