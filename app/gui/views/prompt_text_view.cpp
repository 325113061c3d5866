// PromptTextView: the prefill's tokens as HTML, special tokens as chips (see prompt_text_view.h).
#include "app/gui/views/prompt_text_view.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QTextEdit>
#include <QVBoxLayout>

#include "app/gui/state/analysis_state.h"

namespace studio {
namespace {

// A piece as HTML: escaped, a newline as "↵" and a line break, a tab as "→".
QString pieceHtml(const std::string& piece) {
    QString s = QString::fromUtf8(piece.data(), static_cast<int>(piece.size())).toHtmlEscaped();
    s.replace('\t', QString::fromUtf8("\u2192"));
    s.replace('\n', QString::fromUtf8("<span style='color:#9a9a9a'>\u21b5</span><br>"));
    s.replace("  ", "&nbsp; ");
    return s;
}

QString sourceText(const std::string& source) {
    if (source == "model") return "the model's chat template";
    if (source == "given") return "a chat template given for this run";
    return "no chat template (plain text)";
}

}  // namespace

PromptTextView::PromptTextView(AnalysisState* state, QWidget* parent) : LazyView(parent), m_state(state) {
    setObjectName("promptTextView");
    auto* content = new QWidget;
    auto* cl = new QVBoxLayout(content);
    cl->setContentsMargins(4, 4, 4, 4);
    auto* top = new QHBoxLayout;
    m_summary = new QLabel;
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // A long summary wraps instead of widening the dock (and the window with it).
    m_summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_summary->setMinimumWidth(120);
    top->addWidget(m_summary, 1);
    m_boundaries = new QCheckBox("token boundaries");
    m_boundaries->setToolTip("Shade every other token, to see where the tokenizer cut the text");
    top->addWidget(m_boundaries);
    cl->addLayout(top);
    m_text = new QTextEdit;
    m_text->setObjectName("promptTextEdit");
    m_text->setReadOnly(true);
    m_text->setAcceptRichText(false);
    m_text->setMinimumWidth(200);
    cl->addWidget(m_text, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    QWidget* stack = wrapWithEmptyState(content);
    // An explicit minimum: the empty-state page's wide text would otherwise set the dock's
    // minimum width (and push the window wider than the screen).
    stack->setMinimumWidth(240);
    layout->addWidget(stack);
    connect(m_state, &AnalysisState::prefillChanged, this, [this] { markDirty(); });
    connect(m_state, &AnalysisState::modelChanged, this, [this] { markDirty(); });
    connect(m_boundaries, &QCheckBox::toggled, this, [this] { markDirty(); });
}

QString PromptTextView::summary() const { return m_summary->text(); }

void PromptTextView::refresh() {
    if (!m_state->hasPrefill()) {
        m_text->clear();
        m_summary->clear();
        setEmptyState("No prompt yet",
                      "Run a prefill (F5) to see the prompt exactly as the model receives it: the chat "
                      "template's text around the document and question, with its special tokens marked.",
                      true);
        return;
    }
    setEmptyState(QString());
    const snapkv::PrefillSummary& pre = m_state->prefill();
    const size_t n = pre.pieces.size();
    int64_t n_special = 0;
    QString html = "<div style='font-family:monospace; white-space:pre-wrap'>";
    for (size_t i = 0; i < n; ++i) {
        const bool special = i < pre.special.size() && pre.special[i] != 0;
        if (static_cast<int64_t>(i) == pre.n_context && pre.n_context < static_cast<int64_t>(n))
            html +=
                "<span style='background:#2f6fd6; color:white; font-size:small'>&nbsp;question&nbsp;"
                "\u25b8</span>";
        const QString text = pieceHtml(pre.pieces[i]);
        if (special) {
            ++n_special;
            html += QString("<span style='background:#ffd9a8; color:#7a3b00; font-weight:bold' title='%1'>%2</span>")
                        .arg(pre.ids[i])
                        .arg(text.isEmpty() ? QString("&#9633;") : text);
        } else if (m_boundaries->isChecked() && i % 2 == 1) {
            html += "<span style='background:#e6eef9'>" + text + "</span>";
        } else {
            html += text;
        }
    }
    html += "</div>";
    m_text->setHtml(html);
    const bool bosFirst = n > 0 && !pre.special.empty() && pre.special[0] != 0;
    m_summary->setText(
        QString("<b>%1 tokens</b> (%2 special, marked) · %3 · %4 · context %5 tokens, "
                "question %6")
            .arg(n)
            .arg(n_special)
            .arg(sourceText(pre.template_source))
            .arg(bosFirst ? QString("starts with %1").arg(QString::fromStdString(pre.pieces[0]).toHtmlEscaped())
                          : QString("no BOS"))
            .arg(pre.n_context)
            .arg(static_cast<int64_t>(n) - pre.n_context));
}

}  // namespace studio
