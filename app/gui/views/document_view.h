// View 3: the prompt as the model read it, token by token, shaded kept / evicted / window / sink
// for the focused head, or as a heat (the head's votes, or the share of a layer's or all heads
// that keep each token). Tooltips give position, token id, vote, pooled score and rank.
#pragma once

#include <vector>

#include "app/gui/views/lazy_view.h"

class QComboBox;
class QLabel;
class QTextEdit;

namespace studio {

class AnalysisState;

class DocumentView : public LazyView {
    Q_OBJECT
public:
    // Unreachable: older than a sliding-window layer's window, neither kept nor counted there.
    enum Category { Evicted = 0, Kept = 1, Window = 2, Sink = 3, Question = 4, Unreachable = 5 };

    explicit DocumentView(AnalysisState* state, QWidget* parent = nullptr);

    QTextEdit* textView() const { return m_text; }
    // Per prompt token, as drawn in HeadSelection mode.
    const std::vector<int>& categories() const { return m_categories; }
    // Per prompt token, the heat drawn in the heat modes (0..1).
    const std::vector<float>& heat() const { return m_heat; }
    void setHighlightWindow(bool on);
    // Selects prompt token `token` and scrolls it into view (the timeline's click).
    void revealToken(int token);
    QString tooltipFor(int token) const;

protected:
    void refresh() override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void computeShading();
    void render();
    int tokenAt(int charPos) const;

    AnalysisState* m_state;
    QComboBox* m_mode;
    QLabel* m_summary;
    QLabel* m_legend;
    QTextEdit* m_text;
    std::vector<int> m_categories;
    std::vector<float> m_heat;
    std::vector<int> m_charStart;  // first character of each token in the text
    std::vector<int64_t> m_ranks;  // rank of each prefix position by pooled score
    bool m_highlightWindow = false;
    bool m_scrollToMark = false;  // a new mark: scroll it into view once
};

}  // namespace studio
