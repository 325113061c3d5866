// Speed of the chat-template interpreter on a real corpus: every template in a folder (default
// tests/data/chat_templates/templates, llama.cpp's 70) parsed, then rendered for every
// conversation of conversations.json with and without the generation prompt, as the app renders
// a prompt. Prints the parse and render totals and the slowest templates; asserts nothing.
// Usage: bench_chat_templates [DATA_DIR] (DATA_DIR holds templates/ and conversations.json).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/tokenizer/chat_template.h"

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

int main(int argc, char** argv) {
    const fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::path(SNAPKV_TEST_DATA) / "chat_templates";
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir / "templates"))
        if (e.path().extension() == ".jinja") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    const ojson conversations = ojson::parse(read(dir / "conversations.json"))["conversations"];
    struct Timing {
        std::string name;
        double parse_ms = 0, render_ms = 0;
        int renders = 0, errors = 0;
    };
    std::vector<Timing> timings;
    const auto t_all = std::chrono::steady_clock::now();
    for (const fs::path& f : files) {
        Timing t;
        t.name = f.filename().string();
        const std::string text = read(f);
        auto t0 = std::chrono::steady_clock::now();
        try {
            const snapkv::jinja::Template parsed(text);
        } catch (const snapkv::Error&) {
            ++t.errors;
        }
        t.parse_ms = ms_since(t0);
        t0 = std::chrono::steady_clock::now();
        for (const ojson& c : conversations) {
            for (const bool gen : {true, false}) {
                snapkv::ChatRequest r;
                r.messages = c["messages"];
                r.tools = c["tools"];
                r.add_generation_prompt = gen;
                r.bos_token = "<s>";
                r.eos_token = "</s>";
                r.date = "2026-07-26";
                try {
                    (void)snapkv::render_chat_template(text, r);
                    ++t.renders;
                } catch (const snapkv::Error&) {
                    ++t.errors;  // the template refuses the conversation (roles, tools, content parts)
                }
            }
        }
        t.render_ms = ms_since(t0);
        timings.push_back(t);
    }
    const double total = ms_since(t_all);
    double parse = 0, render = 0;
    int renders = 0, errors = 0;
    for (const Timing& t : timings) {
        parse += t.parse_ms;
        render += t.render_ms;
        renders += t.renders;
        errors += t.errors;
    }
    std::printf("%zu templates, %zu conversations x 2: %d renders, %d refused or failed\n", timings.size(),
                conversations.size(), renders, errors);
    std::printf("parse %.1f ms, render %.1f ms (%.3f ms per render), total %.1f ms\n", parse, render,
                render / std::max(1, renders + errors), total);
    std::sort(timings.begin(), timings.end(),
              [](const Timing& a, const Timing& b) { return a.parse_ms + a.render_ms > b.parse_ms + b.render_ms; });
    std::printf("slowest:\n");
    for (size_t i = 0; i < std::min<size_t>(5, timings.size()); ++i)
        std::printf("  %-60s parse %.2f ms, %d renders %.2f ms\n", timings[i].name.c_str(), timings[i].parse_ms,
                    timings[i].renders + timings[i].errors, timings[i].render_ms);
    return 0;
}
