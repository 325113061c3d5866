// See text_score.h.
#include "core/eval/text_score.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>

namespace snapkv::eval {
namespace {

bool is_word_byte(unsigned char c) { return std::isalnum(c) || c >= 0x80; }

std::string lower(const std::string& s) {
    std::string out = s;
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace

std::string normalize_answer(const std::string& s) {
    std::string spaced;
    for (unsigned char c : lower(s)) spaced += is_word_byte(c) ? static_cast<char>(c) : ' ';
    std::istringstream in(spaced);
    std::string w, out;
    while (in >> w) {
        if (w == "a" || w == "an" || w == "the") continue;
        if (!out.empty()) out += ' ';
        out += w;
    }
    return out;
}

std::vector<std::string> answer_words(const std::string& s) {
    std::istringstream in(normalize_answer(s));
    std::vector<std::string> out;
    std::string w;
    while (in >> w) out.push_back(w);
    return out;
}

bool contains_value(const std::string& answer, const std::string& value) {
    if (value.empty()) return false;
    const std::string a = lower(answer), v = lower(value);
    for (size_t at = a.find(v); at != std::string::npos; at = a.find(v, at + 1)) {
        const bool left_ok = at == 0 || !is_word_byte(static_cast<unsigned char>(a[at - 1])) ||
                             !is_word_byte(static_cast<unsigned char>(v.front()));
        const size_t end = at + v.size();
        const bool right_ok = end == a.size() || !is_word_byte(static_cast<unsigned char>(a[end])) ||
                              !is_word_byte(static_cast<unsigned char>(v.back()));
        if (left_ok && right_ok) return true;
    }
    return false;
}

bool exact_match(const std::string& answer, const std::string& reference) {
    return normalize_answer(answer) == normalize_answer(reference);
}

bool contains_match(const std::string& answer, const std::string& reference) {
    const std::string r = normalize_answer(reference);
    if (r.empty()) return false;
    return (" " + normalize_answer(answer) + " ").find(" " + r + " ") != std::string::npos;
}

double word_f1(const std::string& a, const std::string& b) {
    const std::vector<std::string> wa = answer_words(a), wb = answer_words(b);
    if (wa.empty() && wb.empty()) return 1.0;
    if (wa.empty() || wb.empty()) return 0.0;
    std::map<std::string, int> count;
    for (const auto& w : wb) ++count[w];
    int common = 0;
    for (const auto& w : wa)
        if (auto it = count.find(w); it != count.end() && it->second > 0) {
            --it->second;
            ++common;
        }
    if (common == 0) return 0.0;
    const double p = static_cast<double>(common) / static_cast<double>(wa.size());
    const double r = static_cast<double>(common) / static_cast<double>(wb.size());
    return 2.0 * p * r / (p + r);
}

double string_match_all(const std::string& answer, const std::vector<std::string>& references) {
    if (references.empty()) return 0.0;
    auto lower = [](std::string s) {
        for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return s;
    };
    const std::string a = lower(answer);
    int64_t found = 0;
    for (const auto& r : references)
        if (a.find(lower(r)) != std::string::npos) ++found;
    return static_cast<double>(found) / static_cast<double>(references.size());
}

std::string fnv1a_hex(const std::string& bytes) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : bytes) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

}  // namespace snapkv::eval
