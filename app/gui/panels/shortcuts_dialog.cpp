// ShortcutsDialog: a two-column table built from the actions themselves, so it cannot go stale.
#include "app/gui/panels/shortcuts_dialog.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QTableWidget>
#include <QVBoxLayout>

namespace studio {

ShortcutsDialog::ShortcutsDialog(const QList<QAction*>& actions, QWidget* parent) : QDialog(parent) {
    setWindowTitle("Keyboard shortcuts");
    auto* table = new QTableWidget(0, 2);
    table->setHorizontalHeaderLabels({"Action", "Shortcut"});
    table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    table->verticalHeader()->hide();
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    auto add = [table](const QString& what, const QString& keys) {
        const int r = table->rowCount();
        table->insertRow(r);
        table->setItem(r, 0, new QTableWidgetItem(what));
        table->setItem(r, 1, new QTableWidgetItem(keys));
    };
    for (QAction* a : actions) {
        QStringList keys;
        for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
        if (keys.isEmpty()) continue;
        add(a->text().remove('&').remove("..."), keys.join(", "));
    }
    add("Move the focused head (overview grid)", "Arrow keys");
    add("Zoom / scroll the heatmap", "Mouse wheel / drag; double-click resets");
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(table);
    layout->addWidget(buttons);
    resize(460, 520);
}

}  // namespace studio
