// The app on the tiny model of every architecture (tests/data/tiny): it loads the GGUF and the HF
// folder, runs, fills the overview, marks the sliding-window layers on the layer axis, and the
// head and document views list only positions the next token can see on such a layer.
#include <catch2/catch.hpp>

#include <QStringList>

#include <qcustomplot.h>

#include "app/gui/state/analysis_state.h"
#include "app/gui/views/document_view.h"
#include "app/gui/views/head_view.h"
#include "app/gui/views/overview_view.h"
#include "gui_test_util.h"

using namespace guitest;

TEST_CASE("Every architecture's tiny model opens, runs and marks its sliding-window layers", "[gui][arch]") {
    const QString name = GENERATE(QString("llama3"), QString("mistral"), QString("qwen2"), QString("qwen3"),
                                  QString("gemma2"), QString("gemma3"), QString("phi3"));
    const QString format = GENERATE(QString("gguf"), QString("hf"));
    CAPTURE(name.toStdString(), format.toStdString());
    auto w = makeWindow(24);
    w->setModelPath(format == "gguf" ? dataPath("tiny/" + name + "/" + name + ".gguf")
                                     : dataPath("tiny/" + name + "/hf"));
    // Short enough for phi3's longrope context of 128 positions, chat template included.
    w->setDocumentText("Twelve miles off a cold northern coast there is a rock called Skerry Dun.");
    w->setQuestion("Where is the rock?");
    studio::ParamState p;
    p.sel.window = 8;
    p.sel.budget = 24;
    w->parameterPanel()->setState(p, false);
    const Outcome o = runAndWait(*w);
    REQUIRE(o.what == "finished");
    auto* state = w->state();
    const auto& cfg = state->model().config;
    CHECK(cfg.arch == (name == "llama3" || name == "mistral" ? std::string("llama") : name.toStdString()));
    const auto* sel = state->selection();
    REQUIRE(sel != nullptr);

    REQUIRE(w->showView("overview"));
    settle();
    w->overviewView()->refreshNow();
    REQUIRE(static_cast<int64_t>(w->overviewView()->grid().size()) == cfg.n_layer);
    auto* plot = w->overviewView()->findChild<QCustomPlot*>("overviewPlot");
    REQUIRE(plot != nullptr);
    auto labels = plot->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
    int n_sliding = 0;
    for (int64_t l = 0; l < cfg.n_layer; ++l) {
        const int64_t window = cfg.layers[static_cast<size_t>(l)].sliding_window;
        CHECK(sel->layers[static_cast<size_t>(l)].sliding_window == window);
        if (window == 0) continue;
        ++n_sliding;
        REQUIRE(labels);
        CHECK(labels->ticks().value(double(l)) == QString("%1 sw").arg(l));
    }
    const int expected = name == "mistral" ? 2 : name == "gemma2" ? 1 : name == "gemma3" ? 5 : name == "phi3" ? 2 : 0;
    CHECK(n_sliding == expected);

    if (n_sliding > 0) {
        // Focus a sliding layer: the head view lists only what the next token can see.
        int64_t l = 0;
        while (cfg.layers[static_cast<size_t>(l)].sliding_window == 0) ++l;
        state->setFocus(static_cast<int>(l), 0);
        REQUIRE(w->showView("head"));
        settle();
        w->headView()->refreshNow();
        const int64_t first = sel->layers[static_cast<size_t>(l)].first_reachable;
        CHECK(first == sel->n_tokens - cfg.layers[static_cast<size_t>(l)].sliding_window + 1);
        for (int64_t pos : w->headView()->keptPositions()) CHECK(pos >= first);
        // The document view: positions older than the window are "beyond the sliding window", never
        // kept, whether or not the layer was compressed.
        REQUIRE(w->showView("document"));
        settle();
        w->documentView()->refreshNow();
        const auto& cats = w->documentView()->categories();
        REQUIRE(static_cast<int64_t>(cats.size()) >= first);
        for (int64_t p = 0; p < static_cast<int64_t>(cats.size()); ++p) {
            CAPTURE(p, cats[static_cast<size_t>(p)]);
            const bool unreachable = cats[static_cast<size_t>(p)] == studio::DocumentView::Unreachable;
            CHECK(unreachable == (p < std::min(first, sel->n_tokens - sel->window)));
        }
    }
}
