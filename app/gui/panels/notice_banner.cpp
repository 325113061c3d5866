// NoticeBanner (see notice_banner.h).
#include "app/gui/panels/notice_banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>

namespace studio {

NoticeBanner::NoticeBanner(const QString& actionText, QWidget* parent) : QWidget(parent) {
    // A QWidget subclass paints a style sheet's background only with this attribute.
    setAttribute(Qt::WA_StyledBackground, true);
    setStyleSheet("background:#fff4ce; border-bottom:1px solid #e0c96a");
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(8, 4, 8, 4);
    m_text = new QLabel;
    m_text->setWordWrap(true);
    layout->addWidget(m_text, 1);
    auto* button = new QPushButton(actionText);
    layout->addWidget(button);
    connect(button, &QPushButton::clicked, this, &NoticeBanner::actionRequested);
    hide();
}

void NoticeBanner::setNotice(const QString& text) {
    m_text->setText(text);
    setVisible(!text.isEmpty());
}

}  // namespace studio
