// Session::estimate_prefill_memory against what a real prefill holds: the peak resident memory of
// this process over one prefill of SmolLM2 (the bundled model), for the run plans the callers use.
// What is measured: VmHWM - VmRSS of /proc/self/status around Session::prefill, with the peak reset
// just before (clear_refs 5), after a warm-up prefill has started the threads and BLAS buffers, and
// with glibc's mmap threshold fixed so that every large block is mapped on allocation and unmapped
// on free (no freed heap memory silently reused, which would hide a prefill's allocations). It does
// not measure the weights (resident before and after) nor the GPU. An analysis (values not kept)
// hands the weights' pages back before its forward and each layer's after it, so its file-backed
// pages come and go during the pass: there the anonymous memory is what is measured, its peak
// sampled every 200 us by a thread (a prefill's allocations live for milliseconds at least).
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "common/test_util.h"
#include "core/session/run_plan.h"
#include "core/session/session.h"

using namespace snapkv;

namespace {

// A /proc/self/status field in bytes ("VmRSS", "VmHWM"); -1 when the file or field is missing.
int64_t status_bytes(const std::string& key) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(key + ":", 0) != 0) continue;
        std::istringstream ss(line.substr(key.size() + 1));
        long long kb = -1;
        ss >> kb;
        return kb < 0 ? -1 : kb * 1024;
    }
    return -1;
}

// Anonymous resident bytes of this process (statm: resident - shared pages); -1 when unreadable.
int64_t anon_bytes() {
    std::ifstream in("/proc/self/statm");
    long long size = 0, resident = -1, shared = 0;
    if (!(in >> size >> resident >> shared)) return -1;
    return (resident - shared) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// The peak of anon_bytes() while it lives (a sampling thread).
class AnonPeak {
public:
    AnonPeak() : m_peak(anon_bytes()) {
        m_thread = std::thread([this] {
            while (!m_stop.load()) {
                const int64_t now = anon_bytes();
                if (now > m_peak.load()) m_peak.store(now);
                std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
        });
    }
    ~AnonPeak() { stop(); }
    int64_t stop() {
        if (m_thread.joinable()) {
            m_stop.store(true);
            m_thread.join();
        }
        return m_peak.load();
    }

private:
    std::atomic<int64_t> m_peak;
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};

// Resets VmHWM to the current RSS (Linux 4.0+); false where the kernel refuses.
bool reset_peak() {
    std::ofstream out("/proc/self/clear_refs");
    out << "5";
    out.flush();
    return static_cast<bool>(out);
}

PromptSpec sample_prompt() {
    const std::string dir = SNAPKV_DATASETS_DIR;
    PromptSpec p;
    p.document = snapkv::test::read_text(dir + "/sample_document.md");
    p.question = snapkv::test::read_text(dir + "/sample_question.txt");
    return p;
}

// Peak RSS growth of one prefill of the sample prompt with `ps` (after a warm-up prefill of the
// same prompt) against the session's estimate of it: CHECKs within 10 %.
void check_estimate_against_peak(Session& s, const PrefillSettings& ps) {
    // A warm-up prefill of the same prompt: threads, the kernel pool, BLAS's buffers touched as far
    // as this prompt's products reach. They stay resident and are not the prefill's own memory.
    s.prefill(sample_prompt(), ps);
    if (!ps.keep_values) {
        // An analysis: its weights' pages come and go (above); the anonymous memory's peak.
        const int64_t before = anon_bytes();
        REQUIRE(before > 0);
        AnonPeak sampler;
        const PrefillSummary sum = s.prefill(sample_prompt(), ps);
        const int64_t grown = sampler.stop() - before;
        const MemoryEstimate est = s.estimate_prefill_memory(sum.n_tokens, ps, /*two_parts=*/true);
        INFO("analysis, L " << sum.n_tokens << ", cache " << s.model_info().cache_type << ": estimate " << est.extra()
                            << " (" << est.breakdown() << "), measured anonymous peak growth " << grown
                            << " (anonymous before " << before << ")");
        CHECK(double(est.extra()) >= 0.9 * double(grown));
        CHECK(double(est.extra()) <= 1.1 * double(grown));
        return;
    }
    const int64_t before = status_bytes("VmRSS");
    REQUIRE(before > 0);
    if (!reset_peak()) FAIL("cannot reset the peak RSS (/proc/self/clear_refs): the measurement needs Linux 4.0+");
    // The peak of the forward pass and capture (up to "layer scores" starting) and that of the
    // scorers' build after it, for the message.
    int64_t forward_peak = -1, scoring_rss = -1;
    const ProgressFn phases = [&](const std::string& stage, int64_t done, int64_t) {
        if (stage != "layer scores" || done != 0) return;
        forward_peak = status_bytes("VmHWM");
        scoring_rss = status_bytes("VmRSS");
    };
    const PrefillSummary sum = s.prefill(sample_prompt(), ps, phases);
    const int64_t peak = std::max(status_bytes("VmHWM"), forward_peak);
    REQUIRE(sum.n_context < sum.n_tokens);  // a question: the context is captured alone too
    const MemoryEstimate est = s.estimate_prefill_memory(sum.n_tokens, ps, /*two_parts=*/true);
    const int64_t grown = peak - before;
    INFO("L " << sum.n_tokens << ", cache " << s.model_info().cache_type << ": estimate " << est.extra() << " ("
              << est.breakdown() << "), measured peak growth " << grown << " (VmRSS before " << before << ", VmHWM "
              << peak << "; forward peak growth " << forward_peak - before << ", RSS growth when the scorers start "
              << scoring_rss - before << ")");
    CHECK(double(est.extra()) >= 0.9 * double(grown));
    CHECK(double(est.extra()) <= 1.1 * double(grown));
}

}  // namespace

TEST_CASE("the prefill estimate is within 10 % of the peak memory a real SmolLM2 prefill adds",
          "[session][memory][smollm2]") {
    const std::string model = snapkv::test::smollm2_path();
    INFO("SmolLM2 is fetched by scripts/setup.sh; expected at " << model);
    REQUIRE(snapkv::test::file_exists(model));
    // Every block of 128 KiB or more mapped on allocation and returned on free, for the whole test.
    REQUIRE(mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1);
    REQUIRE(mallopt(M_TRIM_THRESHOLD, 128 * 1024) == 1);

    Session s;
    s.load_model(model);

    RunFlags flags;
    const auto [name, ps] = GENERATE_COPY(table<std::string, PrefillSettings>({
        {"snapkv (the CLI's and the grids' default)", plan_run({SelectionParams{}}, flags)},
        {"h2o", plan_run({[] {
                             SelectionParams p;
                             p.policy = Policy::H2O;
                             return p;
                         }()},
                         flags)},
        {"every policy (the app)", plan_all_policies(flags)},
    }));
    CAPTURE(name);
    check_estimate_against_peak(s, ps);
}

TEST_CASE(
    "with an f32 or f16 or q8_0 cache (values kept or not) the prefill estimate is within 10 % of the peak a real "
    "prefill adds",
    "[session][memory][smollm2][kv_type]") {
    const std::string model = snapkv::test::smollm2_path();
    INFO("SmolLM2 is fetched by scripts/setup.sh; expected at " << model);
    REQUIRE(snapkv::test::file_exists(model));
    REQUIRE(mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1);
    REQUIRE(mallopt(M_TRIM_THRESHOLD, 128 * 1024) == 1);

    const std::string type = GENERATE(as<std::string>(), "f32", "f16", "q8_0");
    const bool analysis = GENERATE(false, true);  // values kept (the app), or an analysis (the CLI)
    CAPTURE(type, analysis);
    Session s;
    LoadOptions lo;
    lo.cache_type = type;
    s.load_model(model, lo);
    REQUIRE(s.model_info().cache_type == type);
    RunFlags flags;
    flags.analysis_only = analysis;
    check_estimate_against_peak(s, plan_run({SelectionParams{}}, flags));
    // The estimate counts the stored bytes: the same run's f32 cache is larger.
    const PrefillSettings ps = plan_run({SelectionParams{}}, flags);
    if (type != "f32")
        CHECK(s.estimate_prefill_memory(2000, ps, true).kv_cache <
              s.estimate_prefill_memory(2000, ps, true, KvType::F32).kv_cache);
}

TEST_CASE("a grid cell's estimate counts its decodes and is within 10 % of the peak a real cell adds",
          "[session][memory][smollm2][grid]") {
    const std::string model = snapkv::test::smollm2_path();
    INFO("SmolLM2 is fetched by scripts/setup.sh; expected at " << model);
    REQUIRE(snapkv::test::file_exists(model));
    REQUIRE(mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1);
    REQUIRE(mallopt(M_TRIM_THRESHOLD, 128 * 1024) == 1);

    // What core/eval's runner does in a cell (eval_runner.cpp): prefill with capture, the full
    // cache's answer, then the compressed configurations' answers together.
    GridDecodes decodes;
    SelectionParams kv_head, query_head;
    kv_head.budget = 256;
    query_head.budget = 512;
    query_head.gqa = GqaMode::QueryHead;
    decodes.configs = {{kv_head, false, {}}, {query_head, false, {}}};
    decodes.answer_tokens = 16;
    decodes.kl_steps = 16;
    const PrefillSettings ps = plan_run({kv_head, query_head});
    CompareSettings cs;
    cs.generation.max_tokens = decodes.answer_tokens;
    cs.generation.stop_at_eog = false;  // every answer token decoded: the estimate's bound
    const auto cell = [&](Session& s) {
        const PrefillSummary sum = s.prefill(sample_prompt(), ps);
        s.decode_reference(cs, decodes.kl_steps);
        std::vector<Selection> sels;
        for (const GridConfig& g : decodes.configs) sels.push_back(s.select(g.params, false, false));
        s.compare_many_to_reference(sels);
        return sum;
    };
    {
        // A warm-up cell in a session of its own, gone before the measurement (a second cell in the
        // same session would free the first one's prefill while it runs): threads, the kernel
        // pool, BLAS's buffers.
        Session warm;
        warm.load_model(model);
        cell(warm);
    }
    Session s;
    s.load_model(model);
    const int64_t before = status_bytes("VmRSS");
    REQUIRE(before > 0);
    if (!reset_peak()) FAIL("cannot reset the peak RSS (/proc/self/clear_refs): the measurement needs Linux 4.0+");
    const PrefillSummary sum = cell(s);
    const int64_t grown = status_bytes("VmHWM") - before;
    const int64_t question = sum.n_tokens - sum.n_context;
    const MemoryEstimate est = s.estimate_memory(grid_cell_run_shape(ps, sum.n_tokens, question, decodes), KvType::F32);
    const MemoryEstimate prefill = s.estimate_prefill_memory(sum.n_tokens, ps, /*two_parts=*/true);
    INFO("L " << sum.n_tokens << ": estimate " << est.extra() << " (" << est.breakdown() << "), prefill alone "
              << prefill.extra() << ", measured peak growth " << grown << " (VmRSS before " << before << ")");
    // The decodes hold a copy of the full cache next to the prefill's: more than the prefill's peak.
    CHECK(est.decode > 0);
    CHECK(est.extra() > prefill.extra());
    CHECK(double(est.extra()) >= 0.9 * double(grown));
    CHECK(double(est.extra()) <= 1.1 * double(grown));
}
