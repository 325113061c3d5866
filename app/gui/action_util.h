// How the main window's actions look: icon, shortcuts, a tooltip naming the first shortcut and the
// status tip, added to their owner widget so that the shortcut works while no menu is open. Looks
// only: what an action does is connected by its owner.
#pragma once

#include <QKeySequence>
#include <QList>
#include <QStyle>

class QAction;
class QWidget;

namespace studio {

QAction* makeAction(QWidget* owner, const QString& text, const QList<QKeySequence>& keys, QStyle::StandardPixmap icon,
                    const QString& tip);

}  // namespace studio
