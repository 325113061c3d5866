// Live tuning: every parameter re-selects from the captured tensors (no new prefill) and the views'
// data change accordingly; undo/redo; debouncing; presets.
#include <catch2/catch.hpp>

#include <QSignalSpy>
#include <QUndoStack>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "app/gui/state/analysis_state.h"
#include "app/gui/views/document_view.h"
#include "app/gui/views/head_view.h"
#include "app/gui/views/overview_view.h"
#include "app/gui/workers/run_controller.h"
#include "gui_test_util.h"

using namespace guitest;
using F = studio::ParameterPanel::Field;

namespace {

std::vector<int> documentCategories(studio::MainWindow& w) {
    w.showView("document");
    settle();
    w.documentView()->refreshNow();
    return w.documentView()->categories();
}

long countOf(const std::vector<int>& v, int c) { return static_cast<long>(std::count(v.begin(), v.end(), c)); }

}  // namespace

TEST_CASE("Every parameter re-selects without a new prefill and the views follow", "[gui]") {
    auto w = makeWindow(64);
    REQUIRE(runAndWait(*w).what == "finished");
    auto* state = w->state();
    const int64_t L = state->prefill().n_tokens;
    const auto& cfg = state->model().config;
    QSignalSpy prefills(state, &studio::AnalysisState::prefillChanged);
    const auto keptBefore = state->focusedHead()->kept;
    const auto pooledBefore = state->focusedHead()->pooled;

    SECTION("budget: more kept positions, in the head view too") {
        REQUIRE(editAndWait(*w, F::FBudget, 96).ok);
        CHECK(state->focusedHead()->kept.size() == 96 - 32);
        CHECK(state->focusedHead()->kept != keptBefore);
        w->showView("head");
        settle();
        w->headView()->refreshNow();
        CHECK(w->headView()->keptPositions().size() == 64);
    }
    SECTION("window: the heatmap has W rows and the document W window tokens") {
        REQUIRE(editAndWait(*w, F::FWindow, 16).ok);
        CHECK(state->selection()->window == 16);
        w->showView("head");
        settle();
        settleUntil([&] { return state->attention()->window == 16; });
        w->headView()->refreshNow();
        CHECK(w->headView()->heatmapRows() == 16);
        CHECK(w->headView()->heatmapKeys() == L);
        CHECK(countOf(documentCategories(*w), studio::DocumentView::Window) == 16);
        CHECK(state->focusedHead()->votes.size() == static_cast<size_t>(L - 16));
    }
    SECTION("kernel: the pooled scores change") {
        REQUIRE(editAndWait(*w, F::FKernel, 3).ok);
        CHECK(state->selection()->params.kernel == 3);
        CHECK(state->focusedHead()->pooled != pooledBefore);
        CHECK(state->focusedHead()->votes.size() == pooledBefore.size());
    }
    SECTION("pooling: average differs from max, none equals the votes") {
        REQUIRE(editAndWait(*w, F::FPooling, 1).ok);
        CHECK(state->selection()->params.pooling == snapkv::Pooling::Avg);
        CHECK(state->focusedHead()->pooled != pooledBefore);
        REQUIRE(editAndWait(*w, F::FPooling, 2).ok);
        const auto* hs = state->focusedHead();
        REQUIRE(hs->pooled.size() == hs->votes.size());
        for (size_t i = 0; i < hs->votes.size(); ++i) CHECK(hs->pooled[i] == Approx(hs->votes[i]));
    }
    SECTION("policy: streaming keeps the sinks") {
        REQUIRE(editAndWait(*w, F::FPolicy, static_cast<double>(snapkv::Policy::Streaming)).ok);
        CHECK(state->selection()->params.policy == snapkv::Policy::Streaming);
        const auto& kept = state->focusedHead()->kept;
        CHECK(kept.size() == 32);
        for (int64_t p = 0; p < 4; ++p) CHECK(std::find(kept.begin(), kept.end(), p) != kept.end());
        const auto cats = documentCategories(*w);
        CHECK(countOf(cats, studio::DocumentView::Sink) == 4);
    }
    SECTION("budget as a ratio: C follows the prompt length") {
        REQUIRE(editAndWait(*w, F::FBudgetMode, 1).ok);
        REQUIRE(editAndWait(*w, F::FRatio, 0.75).ok);
        const int64_t expected = static_cast<int64_t>(L * (1 - 0.75));
        CHECK(std::abs(state->selection()->budget - expected) <= 1);
        CHECK(std::abs(static_cast<int64_t>(state->focusedHead()->kept.size()) - (expected - 32)) <= 1);
    }
    SECTION("GQA per KV head: one selection per KV head, everywhere") {
        REQUIRE(editAndWait(*w, F::FGqa, 1).ok);
        CHECK(state->selection()->params.gqa == snapkv::GqaMode::KvHead);
        CHECK(state->nHeads() == cfg.n_head_kv);
        w->showView("overview");
        settle();
        w->overviewView()->refreshNow();
        CHECK(static_cast<int64_t>(w->overviewView()->grid().front().size()) == cfg.n_head_kv);
    }
    SECTION("tie break: earlier positions first changes only tied choices") {
        const auto later = *state->selection();
        CHECK(later.params.tie_break == snapkv::TieBreak::Later);
        REQUIRE(editAndWait(*w, F::FTieBreak, 1).ok);
        const auto& earlier = *state->selection();
        CHECK(earlier.params.tie_break == snapkv::TieBreak::Earlier);
        int differing = 0;
        for (size_t l = 0; l < later.layers.size(); ++l)
            for (size_t h = 0; h < later.layers[l].heads.size(); ++h) {
                const auto& a = later.layers[l].heads[h];
                const auto& b = earlier.layers[l].heads[h];
                REQUIRE(a.kept.size() == b.kept.size());
                if (a.kept == b.kept) continue;
                ++differing;
                // Both keep everything above the k-th score; they differ only among positions
                // whose pooled score equals it.
                float kth = INFINITY;
                for (int64_t p : a.kept) kth = std::min(kth, a.pooled[size_t(p)]);
                std::vector<int64_t> diff;
                std::set_symmetric_difference(a.kept.begin(), a.kept.end(), b.kept.begin(), b.kept.end(),
                                              std::back_inserter(diff));
                for (int64_t p : diff) CHECK(a.pooled[size_t(p)] == kth);
            }
        CHECK(differing > 0);  // max pooling (K 7) makes tied runs: some head has one at its edge
    }
    SECTION("query-agnostic: the selection sees only the context") {
        REQUIRE(editAndWait(*w, F::FQuery, 1).ok);
        CHECK(state->selection()->n_tokens == state->prefill().n_context);
        CHECK(state->selection()->n_tokens < L);
        const auto cats = documentCategories(*w);
        CHECK(countOf(cats, studio::DocumentView::Question) == L - state->prefill().n_context);
    }
    SECTION("sink tokens: streaming keeps as many sinks as asked, the document shades them") {
        REQUIRE(editAndWait(*w, F::FPolicy, static_cast<double>(snapkv::Policy::Streaming)).ok);
        CHECK(countOf(documentCategories(*w), studio::DocumentView::Sink) == 4);
        REQUIRE(editAndWait(*w, F::FSink, 12).ok);
        CHECK(state->selection()->params.n_sink == 12);
        CHECK(countOf(documentCategories(*w), studio::DocumentView::Sink) == 12);
    }
    SECTION("hit threshold: the comparison's hit rates use it") {
        REQUIRE(generateAndWait(*w, 4).ok);
        const auto low = state->comparison()->hit_rate;
        REQUIRE(editAndWait(*w, F::FHit, 0.5).ok);
        CHECK(state->params().hitThreshold == Approx(0.5));
        REQUIRE(generateAndWait(*w, 4).ok);
        CHECK(state->comparison()->hit_rate != low);
    }
    SECTION("preset: kvpress's window 64, kernel 5, average pooling, ratio") {
        REQUIRE(editAndWait(*w, F::FPreset, 5).ok);
        const auto& p = state->selection()->params;
        CHECK(p.window == 64);
        CHECK(p.kernel == 5);
        CHECK(p.pooling == snapkv::Pooling::Avg);
        CHECK(p.ratio == Approx(0.5));
        CHECK(p.gqa == snapkv::GqaMode::KvHead);
    }
    CHECK(prefills.count() == 0);
}

TEST_CASE("Undo and redo walk back and forth through parameter changes", "[gui]") {
    auto w = makeWindow(64);
    REQUIRE(runAndWait(*w).what == "finished");
    auto* state = w->state();
    auto* undo = w->parameterPanel()->undoStack();
    REQUIRE(editAndWait(*w, F::FBudget, 96).ok);
    REQUIRE(editAndWait(*w, F::FWindow, 24).ok);
    CHECK(undo->count() == 2);

    auto waitRetune = [&](auto action) {
        QSignalSpy spy(w->controller(), &studio::RunController::retuneApplied);
        action();
        w->parameterPanel()->flush();
        REQUIRE(spy.wait(30000));
        settle();
    };
    waitRetune([&] { undo->undo(); });
    CHECK(state->params().sel.window == 32);
    CHECK(state->params().sel.budget == 96);
    waitRetune([&] { undo->undo(); });
    CHECK(state->params().sel.budget == 64);
    CHECK(state->focusedHead()->kept.size() == 32);
    waitRetune([&] { undo->redo(); });
    CHECK(state->params().sel.budget == 96);
    CHECK(state->focusedHead()->kept.size() == 64);
}

TEST_CASE("A burst of slider moves is debounced into one retune and one undo step", "[gui]") {
    auto w = makeWindow(64);
    REQUIRE(runAndWait(*w).what == "finished");
    auto* panel = w->parameterPanel();
    QSignalSpy changes(panel, &studio::ParameterPanel::paramsChanged);
    QSignalSpy applied(w->controller(), &studio::RunController::retuneApplied);
    for (int b : {70, 80, 90, 100, 110}) panel->edit(F::FBudget, b);
    CHECK(changes.count() == 0);
    REQUIRE(applied.wait(30000));
    settle();
    CHECK(changes.count() == 1);
    CHECK(panel->undoStack()->count() == 1);
    CHECK(w->state()->params().sel.budget == 110);
    CHECK(w->state()->focusedHead()->kept.size() == 110 - 32);
}
