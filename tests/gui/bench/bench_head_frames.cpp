// Frame times of the head view while the user pans and zooms a long prefix (issue 31: "app frame
// times while panning the head view at 32K"). Feeds the real HeadView through AnalysisState, as
// the session worker would, and drives it with real wheel and mouse-drag events on the plot; a
// frame is one event until the GUI thread is idle again (range change, column aggregation, replot
// and paint). Prints median / p95 / max ms and replots per frame for each gesture. Not a test:
// timings depend on the machine.
//
//   bench_head_frames [--tokens 32768] [--window 32] [--width 1600 --height 1000]
//       synthetic rows of the real size (votes, pooled scores, kept positions, [W, L] attention)
//   bench_head_frames --model models/gemma-3-270m-q4_k_m.gguf --tokens 32000
//       a real prefill of that many tokens first (minutes on 2 cores), the app's default selection,
//       the focused head's rows read as the worker reads them
#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QMouseEvent>
#include <QWheelEvent>

#include <qcustomplot.h>

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "app/gui/state/analysis_state.h"
#include "app/gui/views/head_view.h"
#include "core/session/session.h"

using namespace studio;

namespace {

struct Options {
    int64_t tokens = 32768;
    int64_t window = 32;
    int width = 1600;
    int height = 1000;
    std::string model;
    std::string text;        // a text file repeated into the document (--model)
    std::string screenshot;  // --screenshot: the view after the gestures, zoomed out, as a PNG
};

// Votes shaped like real ones: attention sinks at the start, a slow decay, and rare single-token
// spikes far from everything else (the kind of token that must stay visible when zoomed out).
void synthetic(const Options& o, AnalysisState& state) {
    const int64_t L = o.tokens, W = o.window, P = L - W, C = 1024;
    std::mt19937 rng(7);
    std::exponential_distribution<float> noise(1.0f);
    snapkv::ModelInfo info;
    info.path = "synthetic";
    info.config.n_layer = 1;
    info.config.n_head = 3;
    info.config.n_head_kv = 3;
    state.setModel(info);
    snapkv::PrefillSummary sum;
    sum.n_tokens = L;
    sum.ids.assign(static_cast<size_t>(L), 1);
    sum.pieces.assign(static_cast<size_t>(L), "tok");
    sum.special.assign(static_cast<size_t>(L), 0);
    state.setPrefill(sum);

    auto sel = std::make_shared<snapkv::Selection>();
    sel->params.window = W;
    sel->params.budget = C;
    sel->params.gqa = snapkv::GqaMode::KvHead;
    sel->n_tokens = L;
    sel->window = W;
    sel->budget = C;
    sel->compressed = true;
    snapkv::LayerSelection ls;
    ls.compressed = true;
    ls.budget = C;
    for (int h = 0; h < 3; ++h) {
        snapkv::HeadSelection hs;
        hs.votes.resize(static_cast<size_t>(P));
        for (int64_t p = 0; p < P; ++p)
            hs.votes[p] = (p < 4 ? 8.0f : 0.0f) + 0.02f * noise(rng) / (1.0f + 0.001f * float(P - p));
        for (int64_t p = 997; p < P; p += 4099) hs.votes[p] = 3.0f;  // isolated strong keys
        hs.pooled.resize(static_cast<size_t>(P));
        for (int64_t p = 0; p < P; ++p) {
            float m = 0;
            for (int64_t q = std::max<int64_t>(0, p - 3); q <= std::min(P - 1, p + 3); ++q)
                m = std::max(m, hs.votes[q]);
            hs.pooled[p] = m;
        }
        std::vector<int64_t> order(static_cast<size_t>(P));
        for (int64_t p = 0; p < P; ++p) order[p] = p;
        std::partial_sort(order.begin(), order.begin() + (C - W), order.end(),
                          [&](int64_t a, int64_t b) { return hs.pooled[a] > hs.pooled[b]; });
        hs.kept.assign(order.begin(), order.begin() + (C - W));
        std::sort(hs.kept.begin(), hs.kept.end());
        hs.kept_mass = 0.9;
        ls.heads.push_back(std::move(hs));
    }
    sel->layers.push_back(std::move(ls));

    auto rows = std::make_shared<AttentionRows>();
    rows->layer = 0;
    rows->head = 0;
    rows->window = W;
    rows->nKeys = L;
    rows->label = "query head 0 (synthetic)";
    rows->rows.assign(static_cast<size_t>(W * L), 0.f);
    for (int64_t r = 0; r < W; ++r) {
        float* row = rows->rows.data() + r * L;
        const int64_t visible = P + r + 1;  // causal inside the window
        double sum = 0;
        for (int64_t k = 0; k < visible; ++k) sum += row[k] = (k < 4 ? 50.0f : 0.0f) + noise(rng);
        for (int64_t k = 997; k < visible; k += 4099) sum += row[k] = 400.0f;
        for (int64_t k = 0; k < visible; ++k) row[k] = float(row[k] / sum);
    }
    auto result = std::make_shared<RetuneResult>();
    result->selection = sel;
    result->attention = rows;
    ParamState params;
    params.sel = sel->params;
    state.setRetune(result, params);
}

// A real prefill of about o.tokens tokens, then what the worker hands the GUI for its first run.
bool realPrefill(const Options& o, AnalysisState& state) {
    snapkv::Session s;
    QElapsedTimer t;
    t.start();
    s.load_model(o.model);
    state.setModel(s.model_info());
    QFile f(QString::fromStdString(o.text));
    if (!f.open(QIODevice::ReadOnly)) {
        std::fprintf(stderr, "bench_head_frames: cannot read the text %s\n", o.text.c_str());
        return false;
    }
    const std::string piece = f.readAll().toStdString();
    snapkv::PromptSpec p;
    p.question = "What did the children find in the garden?";
    // Grow the document until the prompt has the tokens asked for, then cut it to them.
    while (static_cast<int64_t>(s.build_prompt(p).ids.size()) < o.tokens) p.document += piece;
    while (static_cast<int64_t>(s.build_prompt(p).ids.size()) > o.tokens)
        p.document.resize(p.document.size() - std::max<size_t>(1, (s.build_prompt(p).ids.size() - o.tokens) * 2));
    std::printf("prompt: %zu tokens\n", s.build_prompt(p).ids.size());
    std::fflush(stdout);
    const snapkv::PrefillSummary sum = s.prefill(p, {}, [](const std::string& stage, int64_t done, int64_t total) {
        static int64_t last = -1;
        const int64_t pct = total ? 100 * done / total : 0;
        if (pct / 10 != last / 10) std::printf("  %s %lld%%\n", stage.c_str(), static_cast<long long>(pct));
        last = pct;
        std::fflush(stdout);
    });
    std::printf("prefill: %lld tokens in %.1f s (scorers %.1f s)\n", static_cast<long long>(sum.n_tokens),
                sum.prefill_ms / 1000.0, sum.scorer_ms / 1000.0);
    state.setPrefill(sum);
    const snapkv::SelectionParams sp = snapkv::default_params();
    auto sel = std::make_shared<snapkv::Selection>(s.select(sp));
    // The worker's rows for KV head 0 in kv-head mode: the mean of its query heads' rows.
    const auto& cfg = s.model_info().config;
    const int64_t group = cfg.n_head / std::max<int64_t>(cfg.n_head_kv, 1);
    auto rows = std::make_shared<AttentionRows>();
    rows->window = sel->window;
    for (int64_t q = 0; q < group; ++q) {
        std::vector<float> r = s.window_attention(0, q, sel->window);
        if (rows->rows.empty()) rows->rows = std::move(r);
        else
            for (size_t i = 0; i < r.size(); ++i) rows->rows[i] += r[i];
    }
    for (float& v : rows->rows) v /= static_cast<float>(group);
    rows->nKeys = static_cast<int64_t>(rows->rows.size()) / rows->window;
    rows->label = QString("mean of query heads 0-%1 (KV head 0)").arg(group - 1);
    auto result = std::make_shared<RetuneResult>();
    result->selection = sel;
    result->attention = rows;
    ParamState params;
    params.sel = sp;
    state.setRetune(result, params);
    std::printf("model, prefill and selection: %.1f s\n", t.elapsed() / 1000.0);
    return true;
}

// CPU time of this (the GUI) thread in ms: unlike wall time, not inflated by other processes on a
// busy machine.
double threadCpuMs() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// One frame: wall and GUI-thread CPU milliseconds, and how many replots it took (one is right; two
// means a gesture drew the same frame twice).
struct Frame {
    double wall = 0;
    double cpu = 0;
    int replots = 0;
};

// Counts what one frame does, so that "idle" means nothing more is queued.
struct FrameWatch : QObject {
    int paints = 0;
    int replots = 0;
    bool eventFilter(QObject*, QEvent* e) override {
        if (e->type() == QEvent::Paint) ++paints;
        return false;
    }
};

// Runs queued work until two passes in a row change nothing (render timer, queued replot, paint).
void untilIdle(FrameWatch& w) {
    for (int quiet = 0, guard = 0; quiet < 2 && guard < 200; ++guard) {
        const int before = w.paints + w.replots;
        QCoreApplication::sendPostedEvents();
        QCoreApplication::processEvents(QEventLoop::AllEvents);
        quiet = w.paints + w.replots == before ? quiet + 1 : 0;
    }
}

struct Stats {
    double median, p95, max;
};

Stats stats(std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<size_t>(q * (ms.size() - 1) + 0.5))]; };
    return {at(0.5), at(0.95), ms.back()};
}

void report(const char* what, const std::vector<Frame>& frames, const HeadView& view, QCustomPlot* plot) {
    std::vector<double> wall, cpu;
    double replots = 0;
    for (const Frame& f : frames) wall.push_back(f.wall), cpu.push_back(f.cpu), replots += f.replots;
    const Stats w = stats(wall), c = stats(cpu);
    const QCPRange r = plot->axisRect(0)->axis(QCPAxis::atBottom)->range();
    std::printf(
        "%-38s %3zu frames  wall median %5.1f p95 %5.1f max %5.1f ms  cpu median %5.1f p95 %5.1f max %5.1f ms"
        "  %.1f replots/frame  (last: %lld keys, %d columns)\n",
        what, frames.size(), w.median, w.p95, w.max, c.median, c.p95, c.max, replots / double(frames.size()),
        static_cast<long long>(std::llround(r.size())), view.heatmapColumnsDrawn());
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    Options o;
    o.text = std::string(SNAPKV_TEST_DATA) + "/reference/ppl-text.txt";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_head_frames: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--tokens") o.tokens = std::stoll(next());
        else if (a == "--window") o.window = std::stoll(next());
        else if (a == "--width") o.width = std::stoi(next());
        else if (a == "--height") o.height = std::stoi(next());
        else if (a == "--model") o.model = next();
        else if (a == "--text") o.text = next();
        else if (a == "--screenshot") o.screenshot = next();
        else {
            std::fprintf(stderr,
                         "bench_head_frames: unknown option %s; allowed: --tokens N, --window W, --width, --height, "
                         "--model GGUF, --text FILE, --screenshot PNG\n",
                         a.c_str());
            return 2;
        }
    }
    if (o.tokens < 2 * o.window || o.window < 1) {
        std::fprintf(stderr, "bench_head_frames: --tokens %lld must be at least twice --window %lld (>= 1)\n",
                     static_cast<long long>(o.tokens), static_cast<long long>(o.window));
        return 2;
    }
    AnalysisState state;
    try {
        if (o.model.empty()) synthetic(o, state);
        else if (!realPrefill(o, state)) return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_head_frames: %s\n", e.what());
        return 1;
    }
    HeadView view(&state);
    view.resize(o.width, o.height);
    view.show();
    QElapsedTimer first;
    first.start();
    view.refreshNow();
    QCustomPlot* plot = view.plot();
    FrameWatch watch;
    plot->installEventFilter(&watch);
    QObject::connect(plot, &QCustomPlot::afterReplot, &watch, [&] { ++watch.replots; });
    untilIdle(watch);
    const int64_t L = view.heatmapKeys();
    std::printf("head view %dx%d, W %lld, L %lld keys: first draw %.1f ms\n", o.width, o.height,
                static_cast<long long>(view.heatmapRows()), static_cast<long long>(L), first.nsecsElapsed() / 1e6);

    QCPAxisRect* heat = plot->axisRect(0);
    const QPoint centre = heat->rect().center();
    auto timed = [&](auto&& send) {
        QElapsedTimer t;
        t.start();
        const double cpu0 = threadCpuMs();
        const int replots0 = watch.replots;
        send();
        untilIdle(watch);
        return Frame{t.nsecsElapsed() / 1e6, threadCpuMs() - cpu0, watch.replots - replots0};
    };
    auto wheel = [&](int delta) {
        QWheelEvent e(QPointF(centre), QPointF(plot->mapToGlobal(centre)), QPoint(), QPoint(0, delta), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
        return timed([&] { QApplication::sendEvent(plot, &e); });
    };
    auto mouse = [&](QEvent::Type type, QPoint at, Qt::MouseButtons buttons) {
        QMouseEvent e(type, QPointF(at), QPointF(plot->mapToGlobal(at)), Qt::LeftButton, buttons, Qt::NoModifier);
        return timed([&] { QApplication::sendEvent(plot, &e); });
    };
    // Pans by dragging `steps` times `dx` pixels, alternating direction every `steps` / 2.
    auto pan = [&](int steps, int dx) {
        std::vector<Frame> ms;
        QPoint at = centre;
        mouse(QEvent::MouseButtonPress, at, Qt::LeftButton);
        for (int i = 0; i < steps; ++i) {
            at.rx() += i < steps / 2 ? dx : -dx;
            ms.push_back(mouse(QEvent::MouseMove, at, Qt::LeftButton));
        }
        mouse(QEvent::MouseButtonRelease, at, Qt::NoButton);
        return ms;
    };
    auto visible = [&] { return heat->axis(QCPAxis::atBottom)->range().size(); };

    // Zoom in from the whole prefix to about 100 keys, then back out (one wheel notch each).
    std::vector<Frame> zoomIn, zoomOut;
    while (visible() > 100 && zoomIn.size() < 200) zoomIn.push_back(wheel(120));
    report("zoom in (whole prefix -> ~100 keys)", zoomIn, view, plot);
    while (visible() < double(L) - 1 && zoomOut.size() < 200) zoomOut.push_back(wheel(-120));
    report("zoom out (~100 keys -> whole prefix)", zoomOut, view, plot);
    std::vector<Frame> all = zoomIn;
    all.insert(all.end(), zoomOut.begin(), zoomOut.end());

    // Pan at three zoom levels: aggregated (8K and 2K keys on ~1400 pixels) and full resolution.
    for (double keys : {8192.0, 2048.0, 512.0}) {
        const double mid = L / 2.0;
        heat->axis(QCPAxis::atBottom)->setRange(mid - keys / 2, mid + keys / 2);
        untilIdle(watch);
        const std::vector<Frame> ms = pan(120, 8);
        char what[64];
        std::snprintf(what, sizeof what, "pan, %.0f keys visible", keys);
        report(what, ms, view, plot);
        all.insert(all.end(), ms.begin(), ms.end());
    }
    report("all frames", all, view, plot);
    std::printf("QCustomPlot replot (its own clock, mean of the last frames): %.2f ms\n", plot->replotTime(true));
    if (!o.screenshot.empty()) {
        view.resetZoom();
        untilIdle(watch);
        if (!view.grab().save(QString::fromStdString(o.screenshot))) {
            std::fprintf(stderr, "bench_head_frames: cannot write %s\n", o.screenshot.c_str());
            return 1;
        }
    }
    return 0;
}
