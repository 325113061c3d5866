// EmptyState: a centred title, body and action button.
#include "app/gui/panels/empty_state.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace studio {

EmptyState::EmptyState(QWidget* parent) : QWidget(parent) {
    setObjectName("emptyState");
    m_title = new QLabel;
    m_title->setObjectName("emptyStateTitle");
    m_title->setAlignment(Qt::AlignCenter);
    QFont f = m_title->font();
    f.setPointSizeF(f.pointSizeF() * 1.4);
    f.setBold(true);
    m_title->setFont(f);
    m_body = new QLabel;
    m_body->setObjectName("emptyStateBody");
    m_body->setAlignment(Qt::AlignCenter);
    m_body->setWordWrap(true);
    m_body->setStyleSheet("color:#444");
    m_action = new QPushButton;
    m_action->setObjectName("emptyStateAction");
    m_action->hide();
    connect(m_action, &QPushButton::clicked, this, &EmptyState::actionTriggered);

    // A card of fixed width, centred by stretches (not by alignment flags, which would give the
    // word-wrapped body its one-line height and clip it).
    auto* card = new QWidget;
    card->setFixedWidth(560);
    auto* cl = new QVBoxLayout(card);
    cl->setContentsMargins(0, 0, 0, 0);
    cl->addWidget(m_title);
    cl->addSpacing(8);
    cl->addWidget(m_body);
    cl->addSpacing(12);
    cl->addWidget(m_action, 0, Qt::AlignHCenter);
    auto* row = new QHBoxLayout;
    row->addStretch(1);
    row->addWidget(card);
    row->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->addStretch(1);
    layout->addLayout(row);
    layout->addStretch(2);
}

void EmptyState::setMessage(const QString& title, const QString& body, const QString& action) {
    m_title->setText(title);
    m_body->setText(body);
    m_action->setText(action);
    m_action->setVisible(!action.isEmpty());
}

QString EmptyState::title() const { return m_title->text(); }
QString EmptyState::body() const { return m_body->text(); }

}  // namespace studio
