// The guided walkthrough for demos: prefill -> observation window -> votes -> pooling -> top-k ->
// compressed cache -> generation, one or two sentences each, plus the caveat that attention is not
// explanation. It only says which view to show and what to emphasise; MainWindow does it.
#pragma once

#include <QList>
#include <QWidget>

class QLabel;
class QPushButton;

namespace studio {

struct WalkthroughStep {
    QString title;
    QString text;
    QString view;      // the view to show: a name of the view registry (app/gui/view_registry.h)
    QString emphasis;  // "none" | "window" | "votes" | "pooling" | "topk" | "document" | "generate"
};

QList<WalkthroughStep> walkthroughSteps();

class Walkthrough : public QWidget {
    Q_OBJECT
public:
    explicit Walkthrough(QWidget* parent = nullptr);
    int step() const { return m_step; }
    int stepCount() const { return m_steps.size(); }
    void setStep(int step);

Q_SIGNALS:
    void stepShown(const studio::WalkthroughStep& step);
    void closed();

private:
    QList<WalkthroughStep> m_steps;
    int m_step = 0;
    QLabel* m_title;
    QLabel* m_text;
    QLabel* m_counter;
    QPushButton* m_back;
    QPushButton* m_next;
};

}  // namespace studio
