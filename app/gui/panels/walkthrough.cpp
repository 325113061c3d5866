// Walkthrough texts (written for this app; the numbers in brackets are SnapKV paper sections).
#include "app/gui/panels/walkthrough.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace studio {

QList<WalkthroughStep> walkthroughSteps() {
    return {
        {"1. Prefill",
         "The model reads the whole prompt (document, then question) in one pass and stores a key and a value "
         "for every token in every layer: the KV cache. It grows with the prompt and dominates memory on long "
         "inputs. The grid shows every layer and head.",
         "overview", "none"},
        {"2. Observation window",
         "SnapKV looks at the last W prompt tokens, usually the end of the question. Their queries reveal which "
         "earlier tokens the model will need. The window (blue) is always kept in the cache.",
         "head", "window"},
        {"3. Votes",
         "Each window query's attention over the earlier tokens (a row of the heatmap) is summed into one vote per "
         "position (grey line). Most votes go to a few positions; the first tokens often act as attention sinks.",
         "head", "votes"},
        {"4. Pooling",
         "Votes are smoothed with a 1-D max or average pool of kernel K (orange line), so a chosen token brings its "
         "neighbours along and the kept text stays in readable clusters.",
         "head", "pooling"},
        {"5. Top-k selection",
         "Per head, the C - W positions with the highest pooled scores are kept (green ticks and shaded clusters); "
         "the dashed red line is the budget threshold. Every head chooses differently.",
         "head", "topk"},
        {"6. Compressed cache",
         "Only the kept tokens' keys and values stay in the cache; the rest are evicted. In the document, green is "
         "kept, grey evicted, blue the window. The cache shrinks by the compression ratio. On a model whose "
         "query heads share KV heads (grouped-query attention), the default selects once per KV head; the "
         "official code selects per query head and stores each one's kept tokens separately, which can make the "
         "cache larger than the full one (the Parameters panel says so).",
         "document", "document"},
        {"7. Generation",
         "Generate with the full and the compressed cache side by side: differing tokens are shaded, the first "
         "divergence is marked, and per-step KL shows how close the compressed model stays.",
         "compare", "generate"},
        {"A caveat",
         "Attention weights show where a head looked, not why the model answered: attention is not explanation. "
         "Use these views to see what the cache keeps, not as proof of the model's reasoning.",
         "head", "none"},
    };
}

Walkthrough::Walkthrough(QWidget* parent) : QWidget(parent), m_steps(walkthroughSteps()) {
    m_title = new QLabel;
    QFont f = m_title->font();
    f.setBold(true);
    f.setPointSizeF(f.pointSizeF() + 1);
    m_title->setFont(f);
    m_text = new QLabel;
    m_text->setWordWrap(true);
    m_text->setObjectName("walkthroughText");
    m_counter = new QLabel;
    m_back = new QPushButton("Back");
    m_next = new QPushButton("Next");
    auto* close = new QPushButton("Close");
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_counter);
    buttons->addStretch(1);
    buttons->addWidget(m_back);
    buttons->addWidget(m_next);
    buttons->addWidget(close);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 6, 8, 6);
    layout->addWidget(m_title);
    layout->addWidget(m_text, 1);
    layout->addLayout(buttons);
    connect(m_back, &QPushButton::clicked, this, [this] { setStep(m_step - 1); });
    connect(m_next, &QPushButton::clicked, this, [this] { setStep(m_step + 1); });
    connect(close, &QPushButton::clicked, this, &Walkthrough::closed);
    setStep(0);
}

void Walkthrough::setStep(int step) {
    m_step = std::clamp(step, 0, static_cast<int>(m_steps.size()) - 1);
    const auto& s = m_steps[m_step];
    m_title->setText(s.title);
    m_text->setText(s.text);
    m_counter->setText(QString("Step %1 of %2").arg(m_step + 1).arg(m_steps.size()));
    m_back->setEnabled(m_step > 0);
    m_next->setEnabled(m_step + 1 < m_steps.size());
    Q_EMIT stepShown(s);
}

}  // namespace studio
