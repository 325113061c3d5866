// CheaperChoicesDialog: the forecast's choices as buttons (see cheaper_choices_dialog.h).
#include "app/gui/panels/cheaper_choices_dialog.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QPushButton>
#include <QStyle>
#include <QVBoxLayout>

namespace studio {

namespace {
QString bytes(int64_t b) { return QString::fromStdString(snapkv::format_bytes(b)); }
}  // namespace

QString doesNotFitMessage(const snapkv::RunForecast& f) {
    QString msg = QString(
                      "The prefill of %1 tokens would need %2 at its peak (weights %3 + run %4: KV cache %5 %6, "
                      "capture %7, scorers %8), but %9 is free (%10).")
                      .arg(QString::fromStdString(snapkv::group_thousands(f.n_tokens)), bytes(f.peak()),
                           bytes(f.memory.weights), bytes(f.memory.extra()),
                           QString(snapkv::kv_type_name(f.cache_type)), bytes(f.memory.kv_cache),
                           bytes(f.memory.capture), bytes(f.memory.scorer))
                      .arg(bytes(f.available.bytes + f.memory.weights), QString::fromStdString(f.available.source));
    msg += f.choices.empty() ? " No cache type and no shorter document would fit: free memory or open a smaller model."
                             : " These would fit:";
    return msg;
}

QString choiceButtonText(const snapkv::CheaperChoice& c) {
    if (c.kind == snapkv::CheaperChoice::Kind::CacheType)
        return QString("Use %1 cache (peak %2)").arg(QString(snapkv::kv_type_name(c.cache_type)), bytes(c.peak_bytes));
    return QString("Cut the document to %1 tokens (%2 % of it, peak %3)")
        .arg(QString::fromStdString(snapkv::group_thousands(c.document_tokens)))
        .arg(100.0 * c.document_share, 0, 'f', 0)
        .arg(bytes(c.peak_bytes));
}

CheaperChoicesDialog::CheaperChoicesDialog(const snapkv::RunForecast& forecast, QWidget* parent) : QDialog(parent) {
    setObjectName("cheaperChoicesDialog");
    setWindowTitle("The run does not fit in memory");
    setAttribute(Qt::WA_DeleteOnClose);
    auto* layout = new QVBoxLayout(this);
    auto* icon = new QLabel;
    icon->setPixmap(style()->standardIcon(QStyle::SP_MessageBoxWarning).pixmap(32, 32));
    auto* text = new QLabel(doesNotFitMessage(forecast));
    text->setObjectName("doesNotFitText");
    text->setWordWrap(true);
    text->setMinimumWidth(460);
    auto* top = new QHBoxLayout;
    top->addWidget(icon, 0, Qt::AlignTop);
    top->addWidget(text, 1);
    layout->addLayout(top);
    for (const snapkv::CheaperChoice& choice : forecast.choices) {
        auto* b = new QPushButton(choiceButtonText(choice));
        b->setObjectName(choice.kind == snapkv::CheaperChoice::Kind::CacheType ? "cacheTypeChoice" : "cutChoice");
        if (choice.seconds >= 0)
            b->setToolTip(
                QString("about %1 on this machine").arg(QString::fromStdString(snapkv::format_seconds(choice.seconds))));
        connect(b, &QPushButton::clicked, this, [this, choice] {
            Q_EMIT choiceMade(choice);
            accept();
        });
        layout->addWidget(b);
    }
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

}  // namespace studio
