// See needle.h.
#include "core/eval/needle.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/eval/chat_settings.h"
#include "core/eval/param_error.h"
#include "core/eval/text_score.h"

namespace snapkv::eval {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string read_text(const fs::path& p, const char* what) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw InputError(std::string(what) + " '" + p.string() + "' cannot be opened");
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    s.erase(std::remove(s.begin(), s.end(), '\r'), s.end());
    return s;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
    return s;
}

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Character offsets where a sentence or a paragraph starts (0 and the end included), ascending.
std::vector<size_t> sentence_starts(const std::string& t) {
    std::vector<size_t> out{0};
    for (size_t j = 0; j < t.size(); ++j) {
        const bool stop = t[j] == '.' || t[j] == '!' || t[j] == '?';
        const bool para = t[j] == '\n' && j + 1 < t.size() && t[j + 1] == '\n';
        if (!stop && !para) continue;
        size_t k = j + 1;
        if (stop)
            while (k < t.size() && std::strchr("\"')]*", t[k])) ++k;
        if (k >= t.size() || !std::isspace(static_cast<unsigned char>(t[k]))) continue;
        while (k < t.size() && std::isspace(static_cast<unsigned char>(t[k]))) ++k;
        if (k < t.size() && out.back() != k) out.push_back(k);
    }
    if (out.back() != t.size()) out.push_back(t.size());
    return out;
}

std::string fmt_depth(double d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", d);
    return buf;
}

}  // namespace

Haystack load_haystack(const std::vector<std::string>& paths) {
    if (paths.empty()) throw ParamError("haystack", "no file or folder given");
    Haystack h;
    for (const auto& p : paths) {
        std::error_code ec;
        std::vector<fs::path> files;
        if (fs::is_directory(p, ec)) {
            for (const auto& e : fs::directory_iterator(p, ec)) {
                const std::string ext = e.path().extension().string();
                if (e.is_regular_file() && (ext == ".md" || ext == ".txt")) files.push_back(e.path());
            }
            std::sort(files.begin(), files.end());
            if (files.empty()) throw ParamError("haystack", "folder '" + p + "' has no .md or .txt files");
        } else if (fs::is_regular_file(p, ec)) {
            files.push_back(p);
        } else {
            throw ParamError("haystack", "'" + p + "' is neither a file nor a folder");
        }
        for (const auto& f : files) {
            std::string t = read_text(f, "haystack file");
            if (t.find_first_not_of(" \t\n") == std::string::npos) continue;
            if (!h.text.empty()) h.text += "\n\n";
            h.text += t.substr(0, t.find_last_not_of(" \t\n") + 1);
            h.files.push_back(f.filename().string());
        }
    }
    if (h.text.empty()) throw ParamError("haystack", "the haystack is empty (no text in the given files)");
    h.fnv = fnv1a_hex(h.text);
    return h;
}

std::vector<NeedleSpec> load_needles(const std::string& path) {
    std::istringstream in(read_text(path, "needles file"));
    std::vector<NeedleSpec> out;
    std::string line;
    for (int64_t n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        const std::string at = "'" + path + "' line " + std::to_string(n);
        json j;
        try {
            j = json::parse(line);
        } catch (const json::parse_error& e) {
            throw InputError(at + " is not valid JSON: " + e.what());
        }
        auto text = [&](const char* key, bool required) -> std::string {
            if (!j.is_object() || !j.contains(key) || j[key].is_null()) {
                if (required)
                    throw InputError(at + ": '" + key + "' is missing (a needle needs name, needle, question)");
                return "";
            }
            if (!j[key].is_string()) throw InputError(at + ": '" + key + "' must be a string");
            return j[key].get<std::string>();
        };
        NeedleSpec s{text("name", true), text("needle", true), text("question", true), text("value", false)};
        if (s.text.find("{value}") == std::string::npos)
            throw InputError(at + ": the needle has no {value} placeholder for its answer");
        out.push_back(std::move(s));
    }
    if (out.empty()) throw InputError("needles file '" + path + "' holds no needles");
    return out;
}

const NeedleSpec& find_needle(const std::vector<NeedleSpec>& needles, const std::string& name,
                              const std::string& file) {
    std::string names;
    for (const auto& n : needles) {
        if (n.name == name) return n;
        names += (names.empty() ? "" : ", ") + n.name;
    }
    throw ParamError("needle", "'" + name + "' is not in '" + file + "'; allowed: " + names);
}

std::string pass_key(uint64_t seed, int64_t length, double depth) {
    uint64_t x = splitmix64(seed);
    x = splitmix64(x ^ static_cast<uint64_t>(length));
    x = splitmix64(x ^ static_cast<uint64_t>(std::llround(depth * 1000.0)));
    return std::to_string(10000 + x % 90000);
}

NeedleOptions needle_options_from_settings(const json& st, Haystack haystack) {
    NeedleOptions o;
    try {
        if (st.at("haystack").at("fnv1a").get<std::string>() != haystack.fnv)
            throw InputError("the results were made with another haystack (" + st.at("haystack").at("files").dump() +
                             ") than the one given (" + json(haystack.files).dump() +
                             "); choose the same haystack files");
        o.haystack = std::move(haystack);
        const json& n = st.at("needle");
        o.needle = {n.at("name").get<std::string>(), n.at("text").get<std::string>(),
                    n.at("question").get<std::string>(),
                    n.at("value").is_null() ? std::string() : n.at("value").get<std::string>()};
        o.lengths = st.at("lengths").get<std::vector<int64_t>>();
        o.depths = st.at("depths").get<std::vector<double>>();
        o.chat = chat_settings_from(st);
        o.seed = st.at("seed").get<uint64_t>();
    } catch (const json::exception& e) {
        throw InputError(std::string("needle settings of the results are incomplete: ") + e.what());
    }
    return o;
}

std::vector<int64_t> NeedleTask::default_lengths(const Session& s, const NeedleOptions& options, int64_t max_tokens,
                                                 int64_t cap) {
    const int64_t n_ctx = s.model_info().config.n_ctx_train;
    int64_t top = n_ctx > 0 ? n_ctx - max_tokens : 0;
    if (cap > 0) top = top > 0 ? std::min(top, cap) : cap;
    if (top <= 0) throw ParamError("lengths", "the model does not say its context; give the lengths or their maximum");
    NeedleOptions probe = options;
    probe.lengths = {top};
    const int64_t minimum = NeedleTask(s, probe, max_tokens).min_length();
    std::vector<int64_t> out;
    for (int64_t div : {16, 8, 4, 2, 1}) {
        const int64_t n = top / div;
        if (n > minimum && (out.empty() || out.back() != n)) out.push_back(n);
    }
    return out;
}

NeedleTask::NeedleTask(const Session& s, NeedleOptions options, int64_t max_tokens) : m_opt(std::move(options)) {
    m_opt.chat = task_chat(s, m_opt.chat);
    if (m_opt.lengths.empty()) throw ParamError("lengths", "the list is empty");
    if (m_opt.depths.empty()) throw ParamError("depths", "the list is empty");
    for (size_t i = 0; i < m_opt.depths.size(); ++i) {
        const double d = m_opt.depths[i];
        if (!(d >= 0.0 && d <= 100.0))
            throw ParamError("depths", "depth " + fmt_depth(d) + " is outside 0..100 (percent of the document)");
        for (size_t j = 0; j < i; ++j)
            if (m_opt.depths[j] == d) throw ParamError("depths", "depth " + fmt_depth(d) + " is given twice");
    }
    const int64_t n_ctx = s.model_info().config.n_ctx_train;
    int64_t longest = 0;
    for (size_t i = 0; i < m_opt.lengths.size(); ++i) {
        const int64_t n = m_opt.lengths[i];
        if (n_ctx > 0 && n + max_tokens > n_ctx)
            throw ParamError("lengths", "length " + std::to_string(n) + " is above the model's context of " +
                                            std::to_string(n_ctx) + " tokens minus " + std::to_string(max_tokens) +
                                            " answer tokens (allowed up to " + std::to_string(n_ctx - max_tokens) +
                                            ")");
        for (size_t j = 0; j < i; ++j)
            if (m_opt.lengths[j] == n) throw ParamError("lengths", "length " + std::to_string(n) + " is given twice");
        longest = std::max(longest, n);
    }
    // The haystack, cycled until it is longer than any document needs.
    const std::vector<int32_t> once = s.tokenize(m_opt.haystack.text, false, false);
    if (once.empty()) throw ParamError("haystack", "the haystack has no tokens");
    std::string cycled = m_opt.haystack.text;
    int64_t n_once = static_cast<int64_t>(once.size());
    for (int64_t have = n_once; have < longest + 64; have += n_once) cycled += "\n\n" + m_opt.haystack.text;
    m_hay_ids = s.tokenize(cycled, false, false);

    const std::string needle_text = replace_all(m_opt.needle.text, "{value}", pass_key(m_opt.seed, 0, 0));
    m_min_length = static_cast<int64_t>(
        s.build_prompt(prompt_for(document(s, 0, 0, needle_text), m_opt.needle.question)).ids.size());
    for (int64_t n : m_opt.lengths)
        if (n <= m_min_length)
            throw ParamError("lengths", "length " + std::to_string(n) +
                                            " is too short: the needle, the question "
                                            "and the chat template alone take " +
                                            std::to_string(m_min_length) + " tokens");
}

int64_t NeedleTask::n_cells() const { return static_cast<int64_t>(m_opt.lengths.size() * m_opt.depths.size()); }

json NeedleTask::settings() const {
    json st = {{"lengths", m_opt.lengths},
               {"depths", m_opt.depths},
               {"needle",
                {{"name", m_opt.needle.name},
                 {"text", m_opt.needle.text},
                 {"question", m_opt.needle.question},
                 {"value", m_opt.needle.value.empty() ? json(nullptr) : json(m_opt.needle.value)}}},
               {"haystack", {{"files", m_opt.haystack.files}, {"fnv1a", m_opt.haystack.fnv}}},
               {"seed", m_opt.seed}};
    add_chat_settings(st, m_opt.chat);
    return st;
}

PromptSpec NeedleTask::prompt_for(const std::string& document, const std::string& question) const {
    PromptSpec p;
    p.document = document;
    p.question = question;
    p.chat = m_opt.chat;
    return p;
}

std::string NeedleTask::document(const Session& s, int64_t n_hay, double depth, const std::string& needle_text) const {
    const std::string text = n_hay > 0 ? s.decode(std::vector<int32_t>(m_hay_ids.begin(), m_hay_ids.begin() + n_hay))
                                       : std::string();
    const std::vector<size_t> starts = sentence_starts(text);
    const double target = depth / 100.0 * static_cast<double>(text.size());
    size_t at = starts.front();
    for (size_t b : starts)
        if (std::fabs(static_cast<double>(b) - target) < std::fabs(static_cast<double>(at) - target)) at = b;
    if (text.empty()) return needle_text;
    if (at == text.size()) return text + " " + needle_text;
    return text.substr(0, at) + needle_text + " " + text.substr(at);
}

std::vector<int64_t> NeedleTask::plan_candidates(const std::vector<int64_t>& to_run) const {
    const auto n_depths = static_cast<int64_t>(m_opt.depths.size());
    std::vector<int64_t> best;
    int64_t longest = -1;
    for (int64_t cell : to_run) {
        const int64_t length = m_opt.lengths[static_cast<size_t>(cell / n_depths)];
        if (length > longest) best = {cell}, longest = length;
    }
    return best;
}

std::string NeedleTask::cell_label(int64_t cell) const {
    const auto n_depths = static_cast<int64_t>(m_opt.depths.size());
    std::ostringstream label;
    label << "length " << m_opt.lengths[static_cast<size_t>(cell / n_depths)] << " depth "
          << m_opt.depths[static_cast<size_t>(cell % n_depths)];
    return label.str();
}

CellPrompt NeedleTask::prepare(const Session& s, int64_t cell) const {
    const auto t0 = std::chrono::steady_clock::now();
    const auto n_depths = static_cast<int64_t>(m_opt.depths.size());
    const int64_t length = m_opt.lengths[static_cast<size_t>(cell / n_depths)];
    const double depth = m_opt.depths[static_cast<size_t>(cell % n_depths)];
    const std::string value = m_opt.needle.value.empty() ? pass_key(m_opt.seed, length, depth) : m_opt.needle.value;
    const std::string needle_text = replace_all(m_opt.needle.text, "{value}", value);
    const auto max_hay = static_cast<int64_t>(m_hay_ids.size());

    // Find the haystack token count whose prompt is exactly `length` tokens. Tokens merge across the
    // cut and around the needle, so the count is corrected a few times rather than computed once.
    std::map<int64_t, int64_t> tried;  // haystack tokens -> prompt tokens
    auto prompt_tokens = [&](int64_t k) {
        auto it = tried.find(k);
        if (it != tried.end()) return it->second;
        const auto n = static_cast<int64_t>(
            s.build_prompt(prompt_for(document(s, k, depth, needle_text), m_opt.needle.question)).ids.size());
        return tried[k] = n;
    };
    int64_t k = std::clamp<int64_t>(length - m_min_length, 0, max_hay);
    for (int iter = 0; iter < 12; ++iter) {
        const int64_t n = prompt_tokens(k);
        if (n == length) break;
        const int64_t next = std::clamp<int64_t>(k + (length - n), 0, max_hay);
        if (tried.count(next)) break;
        k = next;
    }
    for (int64_t d = 1; prompt_tokens(k) != length && d <= 4; ++d) {
        if (k + d <= max_hay && prompt_tokens(k + d) == length) k += d;
        else if (k - d >= 0 && prompt_tokens(k - d) == length) k -= d;
    }
    if (prompt_tokens(k) != length) {  // no exact fit: the longest prompt below the length
        int64_t best = -1;
        for (const auto& [kk, n] : tried)
            if (n <= length && (best < 0 || n > tried[best])) best = kk;
        if (best >= 0) k = best;
    }

    CellPrompt cp;
    const std::string doc = document(s, k, depth, needle_text);
    cp.prompt = prompt_for(doc, m_opt.needle.question);
    cp.value = value;
    const PromptTokens pt = s.build_prompt(cp.prompt);
    // Token spans of the needle and its value: where their text lies in the concatenated pieces.
    const PieceText pieces = piece_text(s, pt.ids);
    const size_t at = pieces.text.find(needle_text);
    if (at != std::string::npos) {
        cp.needle = pieces.span(at, at + needle_text.size());
        const size_t v = needle_text.find(value);
        if (v != std::string::npos) cp.value_tokens = pieces.span(at + v, at + v + value.size());
    }
    const size_t doc_at = doc.find(needle_text);
    const size_t hay_chars = doc.size() - needle_text.size();
    cp.fields = {
        {"length", length},
        {"depth", depth},
        {"needle", m_opt.needle.name},
        {"needle_value", value},
        {"depth_actual", hay_chars ? std::round(1000.0 * static_cast<double>(doc_at) / hay_chars) / 10.0 : 0.0},
        {"needle_span", cp.needle.empty() ? json(nullptr) : json::array({cp.needle.first, cp.needle.last})},
        {"value_span",
         cp.value_tokens.empty() ? json(nullptr) : json::array({cp.value_tokens.first, cp.value_tokens.last})}};
    cp.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return cp;
}

}  // namespace snapkv::eval
