// See action_util.h.
#include "app/gui/action_util.h"

#include <QAction>
#include <QWidget>

namespace studio {

QAction* makeAction(QWidget* owner, const QString& text, const QList<QKeySequence>& keys, QStyle::StandardPixmap icon,
                    const QString& tip) {
    auto* a = new QAction(owner->style()->standardIcon(icon), text, owner);
    a->setShortcuts(keys);
    a->setToolTip(keys.isEmpty() ? tip : QString("%1 (%2)").arg(tip, keys.first().toString(QKeySequence::NativeText)));
    a->setStatusTip(tip);
    owner->addAction(a);
    return a;
}

}  // namespace studio
