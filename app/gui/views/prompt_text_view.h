// "Prompt as the model sees it": the last prefill's prompt after the chat template, token by
// token, with the special tokens (BOS, <|im_start|>, <start_of_turn>...) drawn as marked chips,
// newlines shown, and where the context ends and the question begins. A view hosted in a dock (View
// menu); it reads AnalysisState only and computes nothing itself.
#pragma once

#include "app/gui/views/lazy_view.h"

class QCheckBox;
class QLabel;
class QTextEdit;

namespace studio {

class AnalysisState;

class PromptTextView : public LazyView {
    Q_OBJECT
public:
    explicit PromptTextView(AnalysisState* state, QWidget* parent = nullptr);

    QTextEdit* textView() const { return m_text; }
    QString summary() const;

protected:
    void refresh() override;

private:
    AnalysisState* m_state;
    QLabel* m_summary;
    QCheckBox* m_boundaries;
    QTextEdit* m_text;
};

}  // namespace studio
