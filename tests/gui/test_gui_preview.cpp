// The overview while a prefill runs: the layers it has finished are drawn from the prefill's
// per-layer previews, the rest greyed with "layer n running · n of N layers done", and the committed selection
// replaces them; a prefill that ends without committing leaves the previous result drawn.
// SNAPKV_PREVIEW_SHOT=<file.png> saves the overview as the first partial preview reaches it.
#include <catch2/catch.hpp>

#include <QImage>
#include <QPixmap>

#include <cmath>

#include "app/gui/main_window.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/views/overview_view.h"
#include "gui_test_util.h"

using namespace guitest;

namespace {

// The previews of a real prefill of the short story on stories260K (5 layers), as the worker
// would hand them over, and the selection it commits.
struct Recorded {
    snapkv::ModelInfo info;
    snapkv::PrefillSummary summary;
    std::vector<studio::LayerPreviewPtr> layers;
    studio::SelectionPtr committed;
};

Recorded recordPreviews(const snapkv::SelectionParams& sp) {
    snapkv::Session s;
    s.load_model(modelPath().toStdString());
    Recorded r;
    r.info = s.model_info();
    snapkv::PromptSpec p;
    p.document = storyText().toStdString();
    p.question = "What did Lily find on the beach?";
    snapkv::PrefillSettings ps;
    ps.preview.params = {sp};
    ps.preview.on_layer = [&](const snapkv::PrefillLayerPreview& step) {
        auto lp = std::make_shared<studio::LayerPreview>();
        lp->params = sp;
        lp->step = step;
        r.layers.push_back(lp);
    };
    r.summary = s.prefill(p, ps);
    r.committed = std::make_shared<snapkv::Selection>(s.select(sp));
    return r;
}

}  // namespace

TEST_CASE("The overview draws a running prefill's finished layers and greys the rest", "[gui]") {
    snapkv::SelectionParams sp;
    sp.budget = 64;
    sp.gqa = snapkv::GqaMode::QueryHead;
    const Recorded rec = recordPreviews(sp);
    const int nLayer = static_cast<int>(rec.info.config.n_layer);
    REQUIRE(static_cast<int>(rec.layers.size()) == nLayer);
    REQUIRE(nLayer >= 3);

    studio::AnalysisState state;
    state.setModel(rec.info);
    studio::OverviewView view(&state);
    view.resize(900, 600);
    view.show();
    settle();

    SECTION("two layers done: their rows carry the committed selection's values, the rest are pending") {
        state.setLayerPreview(rec.layers[0]);
        state.setLayerPreview(rec.layers[1]);
        view.refreshNow();
        CHECK_FALSE(view.emptyStateShown());
        const auto& grid = view.grid();
        REQUIRE(static_cast<int>(grid.size()) == nLayer);
        CHECK(view.pendingRows() == nLayer - 2);
        CHECK(view.pendingText() == QString("layer 2 running · 2 of %1 layers done").arg(nLayer));
        // The grid the committed selection gives, row for row.
        studio::AnalysisState done;
        done.setModel(rec.info);
        auto retune = std::make_shared<studio::RetuneResult>();
        retune->selection = rec.committed;
        studio::ParamState params;
        params.sel = sp;
        done.setRetune(retune, params);
        studio::OverviewView full(&done);
        full.resize(900, 600);
        full.show();
        settle();
        full.refreshNow();
        REQUIRE(static_cast<int>(full.grid().size()) == nLayer);
        for (int l = 0; l < nLayer; ++l) {
            INFO("layer " << l);
            REQUIRE(grid[l].size() == full.grid()[l].size());
            for (size_t h = 0; h < grid[l].size(); ++h) {
                if (l < 2) CHECK(grid[l][h] == full.grid()[l][h]);
                else CHECK(std::isnan(grid[l][h]));
            }
        }
    }

    SECTION("every layer done: nothing pending until the selection commits and replaces the preview") {
        for (const auto& l : rec.layers) state.setLayerPreview(l);
        view.refreshNow();
        CHECK(view.pendingRows() == 0);
        CHECK(view.pendingText() == QString("all %1 layers done, selecting…").arg(nLayer));
        auto retune = std::make_shared<studio::RetuneResult>();
        retune->selection = rec.committed;
        studio::ParamState params;
        params.sel = sp;
        state.setRetune(retune, params);
        CHECK_FALSE(state.hasPreview());
        view.refreshNow();
        CHECK(view.pendingText().isEmpty());
        CHECK(static_cast<int>(view.grid().size()) == nLayer);
    }

    SECTION("a prefill that ends without committing leaves what was drawn before") {
        state.setLayerPreview(rec.layers[0]);
        view.refreshNow();
        CHECK(view.pendingRows() == nLayer - 1);
        state.setLayerPreview(nullptr);  // cancelled
        CHECK_FALSE(state.hasPreview());
        view.refreshNow();
        CHECK(view.emptyStateShown());  // no result before this prefill: the empty state again
        CHECK(view.pendingRows() == 0);
    }
}

TEST_CASE("A run fills the overview layer by layer before the selection arrives", "[gui]") {
    auto w = makeWindow(64);
    w->showView("overview");
    settle();
    studio::OverviewView* ov = w->overviewView();
    REQUIRE(ov != nullptr);
    int partial = 0, previews = 0;
    bool shot = false;
    QObject::connect(w->state(), &studio::AnalysisState::previewChanged, ov, [&] {
        if (!w->state()->hasPreview()) return;
        ++previews;
        ov->refreshNow();
        if (ov->pendingRows() > 0) ++partial;
        const QString path = qEnvironmentVariable("SNAPKV_PREVIEW_SHOT");
        if (!shot && ov->pendingRows() > 0 && !path.isEmpty()) shot = ov->grab().save(path);
    });
    const Outcome o = runAndWait(*w);
    REQUIRE(o.ok);
    const int nLayer = static_cast<int>(w->state()->model().config.n_layer);
    CHECK(previews == nLayer);
    CHECK(partial == nLayer - 1);  // every layer but the last leaves some pending
    CHECK_FALSE(w->state()->hasPreview());
    ov->refreshNow();
    CHECK(ov->pendingRows() == 0);
    CHECK(static_cast<int>(ov->grid().size()) == nLayer);
}
