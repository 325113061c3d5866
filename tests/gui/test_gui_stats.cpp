// The small display computations the views rely on (head_stats, colormaps, param/display JSON).
#include <catch2/catch.hpp>

#include <QJsonObject>

#include <cmath>

#include "app/gui/plot/colormaps.h"
#include "app/gui/state/display_settings.h"
#include "app/gui/state/head_stats.h"
#include "app/gui/state/param_state.h"

using namespace studio;

TEST_CASE("Max-downsampling keeps a single strong key visible at any zoom", "[gui]") {
    const int64_t W = 2, L = 1000;
    std::vector<float> rows(W * L, 0.001f);
    rows[0 * L + 637] = 0.9f;  // one spike in row 0
    rows[1 * L + 3] = 0.5f;
    for (int64_t bins : {7, 50, 333, 999}) {
        const auto out = maxDownsample(rows, W, L, 0, L, bins);
        REQUIRE(static_cast<int64_t>(out.size()) == W * bins);
        CHECK(*std::max_element(out.begin(), out.begin() + bins) == 0.9f);
        CHECK(*std::max_element(out.begin() + bins, out.end()) == 0.5f);
    }
    SECTION("a visible sub-range is cut exactly") {
        const auto out = maxDownsample(rows, W, L, 600, 700, 1000);
        REQUIRE(out.size() == 200);
        CHECK(out[37] == 0.9f);
    }
}

TEST_CASE("Hiding sinks renormalises rows and row normalisation divides by the maximum", "[gui]") {
    const std::vector<float> rows = {0.5f, 0.25f, 0.125f, 0.125f};  // one row, L = 4
    const auto hidden = transformRows(rows, 1, 4, 1, false);
    CHECK(hidden[0] == 0.f);
    CHECK(hidden[1] == Approx(0.5));
    CHECK(hidden[2] + hidden[3] == Approx(0.5));
    const auto norm = transformRows(rows, 1, 4, 0, true);
    CHECK(norm[0] == Approx(1.0));
    CHECK(norm[2] == Approx(0.25));
}

TEST_CASE("Clusters, ranks, threshold and head statistics", "[gui]") {
    const auto c = clusters({1, 2, 3, 7, 9, 10});
    REQUIRE(c.size() == 3);
    CHECK(c[0].begin == 1);
    CHECK(c[0].end == 4);
    CHECK(c[2].begin == 9);
    CHECK(ranks({0.1f, 0.9f, 0.5f}) == std::vector<int64_t>{2, 0, 1});
    CHECK(keptThreshold({0.1f, 0.9f, 0.5f}, {1, 2}) == Approx(0.5));
    CHECK(std::isnan(keptThreshold({0.1f}, {})));
    CHECK(voteEntropy({1.f, 1.f, 1.f, 1.f}) == Approx(1.0));
    CHECK(voteEntropy({1.f, 0.f, 0.f, 0.f}) == Approx(0.0));
    CHECK(sinkMass({3.f, 1.f, 0.f, 0.f}, 1) == Approx(0.75));
    CHECK(overlapShare({1, 2, 3, 4}, {2, 4, 6}) == Approx(0.5));
}

TEST_CASE("Colour maps run from their first to their last stop", "[gui]") {
    CHECK(colorAt(ColorMapKind::Viridis, 0.0).name() == "#440154");
    CHECK(colorAt(ColorMapKind::Viridis, 1.0).name() == "#fde725");
    CHECK(colorAt(ColorMapKind::Cividis, 0.0).name() == "#00224e");
    CHECK(textColorOn(QColor("#440154")) == QColor(Qt::white));
    CHECK(textColorOn(QColor("#fde725")) == QColor(Qt::black));
}

TEST_CASE("Parameters and display settings survive a JSON round trip", "[gui]") {
    ParamState p;
    p.sel.policy = snapkv::Policy::AdaKV;
    p.sel.window = 48;
    p.sel.kernel = 9;
    p.sel.pooling = snapkv::Pooling::Avg;
    p.sel.gqa = snapkv::GqaMode::KvHead;
    p.useRatio = true;
    p.ratio = 0.3;
    p.queryAgnostic = true;
    p.hitThreshold = 0.1;
    CHECK(ParamState::fromJson(p.toJson()) == p);
    DisplaySettings d;
    d.colorMap = ColorMapKind::Cividis;
    d.logScale = true;
    d.hideSinks = 3;
    d.overviewStat = OverviewStat::Overlap;
    d.documentMode = DocumentMode::AllKeptShare;
    CHECK(DisplaySettings::fromJson(d.toJson()) == d);
    QJsonObject bad;
    bad["policy"] = "snapkvv";
    CHECK_THROWS_AS(ParamState::fromJson(bad), snapkv::InputError);
}
