// See ruler_tasks.h. Task definitions follow NVIDIA/RULER scripts/data/synthetic/{niah,
// variable_tracking,common_words_extraction,freq_words_extraction}.py and scripts/synthetic.yaml;
// the wording of every instruction, needle and question is this project's own.
#include "core/eval/ruler_tasks.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/common/errors.h"
#include "core/eval/param_error.h"
#include "core/eval/text_score.h"

namespace snapkv::eval {
namespace {

// RULER's noise haystack (scripts/data/synthetic/niah.py, type_haystack "repeat"): five sentences.
const char* const kNoise[] = {"The grass is green.", "The sky is blue.", "The sun is yellow.", "Here we go.",
                              "There and back again."};
constexpr int64_t kNoiseSentences = 5;

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// A splitmix64 stream: the same seed gives the same draws on every platform (std:: distributions
// do not promise that).
class Rng {
public:
    explicit Rng(uint64_t seed) : m_state(seed) {}
    uint64_t next() {
        m_state += 0x9e3779b97f4a7c15ULL;
        return splitmix64(m_state);
    }
    // Uniform in [0, n), without modulo bias.
    uint64_t below(uint64_t n) {
        const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
        uint64_t x = next();
        while (x >= limit) x = next();
        return x % n;
    }
    int64_t between(int64_t lo, int64_t hi) {  // inclusive
        return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo + 1)));
    }
    template <typename T>
    void shuffle(std::vector<T>& v) {
        for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
    }
    // k distinct values of [0, n), in the order drawn (k <= n).
    std::vector<int64_t> sample(int64_t n, int64_t k) {
        if (k > n) throw Error("ruler: cannot draw " + std::to_string(k) + " distinct values of " + std::to_string(n));
        std::vector<int64_t> out;
        std::set<int64_t> seen;
        if (k > n / 2) {  // dense: a partial shuffle
            std::vector<int64_t> all(static_cast<size_t>(n));
            for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
            for (int64_t i = 0; i < k; ++i)
                std::swap(all[static_cast<size_t>(i)], all[static_cast<size_t>(between(i, n - 1))]);
            return {all.begin(), all.begin() + k};
        }
        while (static_cast<int64_t>(out.size()) < k) {
            const auto x = static_cast<int64_t>(below(static_cast<uint64_t>(n)));
            if (seen.insert(x).second) out.push_back(x);
        }
        return out;
    }

private:
    uint64_t m_state;
};

// Ascending insertion slots for k items among n lines (slot n: after the last line): distinct
// when there are enough, as RULER draws them, else shared (the items then follow one another).
std::vector<int64_t> insertion_slots(Rng& rng, int64_t n_lines, int64_t k) {
    std::vector<int64_t> at;
    if (k <= n_lines + 1) {
        at = rng.sample(n_lines + 1, k);
    } else {
        for (int64_t i = 0; i < k; ++i)
            at.push_back(static_cast<int64_t>(rng.below(static_cast<uint64_t>(n_lines + 1))));
    }
    std::sort(at.begin(), at.end());
    return at;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
    return s;
}

// "a", "a and b", "a, b, and c" (RULER's query list).
std::string list_words(const std::vector<std::string>& v) {
    if (v.size() == 1) return v[0];
    if (v.size() == 2) return v[0] + " and " + v[1];
    std::string s;
    for (size_t i = 0; i + 1 < v.size(); ++i) s += v[i] + ", ";
    return s + "and " + v.back();
}

std::string numbered(const std::vector<std::string>& words) {
    std::string s;
    for (size_t i = 0; i < words.size(); ++i) s += (i ? " " : "") + std::to_string(i + 1) + ". " + words[i];
    return s;
}

std::string uuid4(Rng& rng) {
    const uint64_t hi = (rng.next() & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
    const uint64_t lo = (rng.next() & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // variant 10
    char buf[40];
    std::snprintf(buf, sizeof buf, "%08llx-%04llx-%04llx-%04llx-%012llx", static_cast<unsigned long long>(hi >> 32),
                  static_cast<unsigned long long>((hi >> 16) & 0xffff), static_cast<unsigned long long>(hi & 0xffff),
                  static_cast<unsigned long long>(lo >> 48), static_cast<unsigned long long>(lo & 0xffffffffffffULL));
    return buf;
}

std::string random_item(const std::string& type, const RulerData& d, Rng& rng) {
    if (type == "numbers") return std::to_string(rng.between(1000000, 9999999));  // 7 digits
    if (type == "uuids") return uuid4(rng);
    return d.adjectives[rng.below(d.adjectives.size())] + "-" + d.nouns[rng.below(d.nouns.size())];
}

std::string upper_letters(Rng& rng, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += static_cast<char>('A' + rng.below(26));
    return s;
}

// Noise lines: paragraphs of the five noise sentences, the last one cut after n_sentences in all.
std::vector<std::string> noise_lines(int64_t n_sentences) {
    std::vector<std::string> lines;
    for (int64_t i = 0; i < n_sentences; i += kNoiseSentences) {
        std::string line;
        for (int64_t j = i; j < std::min(n_sentences, i + kNoiseSentences); ++j)
            line += (j > i ? " " : "") + std::string(kNoise[j - i]);
        lines.push_back(line);
    }
    return lines;
}

// Sentences of plain text: a sentence ends at . ! or ? (closing quotes and brackets included) before
// white space. Stands in for RULER's nltk sent_tokenize.
std::vector<std::string> split_sentences(const std::string& t) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t j = 0; j < t.size(); ++j) {
        if (t[j] != '.' && t[j] != '!' && t[j] != '?') continue;
        size_t k = j + 1;
        while (k < t.size() && std::strchr("\"')]*", t[k])) ++k;
        if (k < t.size() && t[k] != ' ') continue;
        out.push_back(t.substr(start, k - start));
        start = k + 1;
        j = k;
    }
    if (start < t.size()) out.push_back(t.substr(start));
    return out;
}

// RULER's 40 needle depths: round(linspace(0, 100, 40)).
std::vector<int64_t> depth_grid() {
    std::vector<int64_t> d;
    for (int i = 0; i < 40; ++i) d.push_back(std::llround(100.0 * i / 39.0));
    return d;
}

RulerText niah_text(const RulerTaskSpec& t, const RulerData& d, uint64_t seed, int64_t n_units) {
    Rng rng(seed);
    const int64_t n_keys = std::max(t.n_keys, t.n_queries);
    const bool one = t.n_queries * t.n_values == 1;
    const std::string kind = t.value_type == "uuids" ? "UUID" : "number";
    std::vector<std::string> keys;
    std::vector<std::vector<std::string>> values;
    std::vector<std::string> needles;
    std::set<std::string> used;
    for (int64_t k = 0; k < n_keys; ++k) {
        std::string key = random_item(t.key_type, d, rng);
        while (!used.insert(key).second) key = random_item(t.key_type, d, rng);
        keys.push_back(key);
        values.emplace_back();
        for (int64_t v = 0; v < t.n_values; ++v) {
            values.back().push_back(random_item(t.value_type, d, rng));
            needles.push_back("One special magic " + kind + " for " + key + " is: " + values.back().back() + ".");
        }
    }
    rng.shuffle(needles);
    std::vector<std::string> queries;
    RulerText out;
    for (int64_t i : rng.sample(n_keys, t.n_queries)) {
        queries.push_back(keys[static_cast<size_t>(i)]);
        for (const auto& v : values[static_cast<size_t>(i)]) out.references.push_back(v);
    }
    const std::set<std::string> answer_values(out.references.begin(), out.references.end());

    // The haystack, with the needles placed in it.
    std::string context;
    std::vector<std::string> placed;  // needles in text order
    if (t.haystack == "essay") {
        std::vector<std::string> words;
        const auto n_words = static_cast<int64_t>(d.essay_words.size());
        for (int64_t i = 0; i < n_units; ++i) words.push_back(d.essay_words[static_cast<size_t>(i % n_words)]);
        const std::vector<std::string> sents = split_sentences(join(words, " "));
        const std::vector<int64_t> grid = depth_grid();
        std::vector<int64_t> at;
        for (int64_t i : rng.sample(static_cast<int64_t>(grid.size()), static_cast<int64_t>(needles.size())))
            at.push_back(
                static_cast<int64_t>(static_cast<double>(sents.size()) * grid[static_cast<size_t>(i)] / 100.0));
        std::sort(at.begin(), at.end());
        std::vector<std::string> parts;
        size_t next = 0;
        for (size_t n = 0; n <= needles.size(); ++n) {
            const size_t until = n < needles.size() ? static_cast<size_t>(at[n]) : sents.size();
            for (; next < until; ++next) parts.push_back(sents[next]);
            if (n < needles.size()) parts.push_back(needles[n]);
        }
        context = join(parts, " ");
        placed = needles;
    } else {
        std::vector<std::string> lines;
        if (t.haystack == "noise") {
            lines = noise_lines(n_units);
        } else {  // needles: distractors with keys that are never asked
            for (int64_t i = 0; i < n_units; ++i) {
                std::string key = random_item(t.key_type, d, rng);
                while (used.count(key)) key = random_item(t.key_type, d, rng);
                lines.push_back("One special magic " + kind + " for " + key +
                                " is: " + random_item(t.value_type, d, rng) + ".");
            }
        }
        // Needle n goes before line at[n] (at[n] == lines: at the end); distinct slots, in order.
        const std::vector<int64_t> at = insertion_slots(rng, static_cast<int64_t>(lines.size()),
                                                        static_cast<int64_t>(needles.size()));
        std::vector<std::string> all;
        size_t next = 0;
        for (size_t n = 0; n <= needles.size(); ++n) {
            const size_t until = n < needles.size() ? static_cast<size_t>(at[n]) : lines.size();
            for (; next < until; ++next) all.push_back(lines[next]);
            if (n < needles.size()) all.push_back(needles[n]);
        }
        context = join(all, "\n");
        placed = needles;
    }
    for (const auto& n : placed)
        for (const auto& v : answer_values)
            if (n.find(" is: " + v + ".") != std::string::npos) {
                out.needles.push_back(n);
                break;
            }

    const std::string query = list_words(queries);
    const std::string kinds = kind + "s";
    if (one) {
        out.document = "The text below hides a special magic " + kind +
                       ". Memorize it; you will be asked about it "
                       "afterwards.\n" +
                       context;
        out.question = "Question: what is the special magic " + kind + " for " + query + " in the text above?";
        out.answer_prefix = "The special magic " + kind + " for " + query + " in the text above is";
    } else {
        out.document = "The text below hides some special magic " + kinds +
                       ". Memorize them; you will be asked "
                       "about them afterwards.\n" +
                       context;
        out.question = "Question: what are all the special magic " + kinds + " for " + query + " in the text above?";
        out.answer_prefix = "The special magic " + kinds + " for " + query + " in the text above are";
    }
    return out;
}

// Variable tracking: chains "VAR A = 12345", "VAR B = VAR A", ... hidden among noise lines.
struct Chains {
    std::vector<std::vector<std::string>> vars;
    std::vector<std::vector<std::string>> statements;
    std::string value;  // the first chain's value
};

Chains make_chains(Rng& rng, int64_t n_chains, int64_t n_hops, int name_len, std::set<std::string>& used) {
    Chains c;
    for (int64_t ch = 0; ch < n_chains; ++ch) {
        std::vector<std::string> vars;
        for (int64_t h = 0; h <= n_hops; ++h) {
            std::string v = upper_letters(rng, name_len);
            while (!used.insert(v).second) v = upper_letters(rng, name_len);
            vars.push_back(v);
        }
        const std::string value = std::to_string(rng.between(10000, 99998));
        if (ch == 0) c.value = value;
        std::vector<std::string> st{"VAR " + vars[0] + " = " + value + "."};
        for (int64_t h = 0; h < n_hops; ++h)
            st.push_back("VAR " + vars[static_cast<size_t>(h + 1)] + " = VAR " + vars[static_cast<size_t>(h)] + ".");
        c.vars.push_back(vars);
        c.statements.push_back(st);
    }
    return c;
}

// Noise lines with every chain's statements at random places, each chain in order.
std::string hide_chains(Rng& rng, std::vector<std::string> lines, const Chains& c) {
    for (const auto& st : c.statements) {
        const std::vector<int64_t> at = insertion_slots(rng, static_cast<int64_t>(lines.size()),
                                                        static_cast<int64_t>(st.size()));
        for (size_t j = st.size(); j-- > 0;) lines.insert(lines.begin() + at[j], st[j]);
    }
    return join(lines, "\n");
}

const char* const kVtInstruction = "Follow the chains of variable assignments hidden in the text below.";

std::string vt_question(const std::string& value) {
    return "Question: which variables are assigned the value " + value + " in the text above?";
}

std::string vt_prefix(int64_t n, const std::string& value) {
    return "Answer: Following the assignments in the text above, " + std::to_string(n) + " variables hold the value " +
           value + ":";
}

RulerText vt_text(const RulerTaskSpec& t, uint64_t seed, int64_t n_units) {
    Rng rng(seed);
    std::set<std::string> used;
    // A worked example first (RULER's one-shot): three-letter names, 10 noise paragraphs.
    const Chains ex = make_chains(rng, t.n_chains, t.n_hops, 3, used);
    const Chains c = make_chains(rng, t.n_chains, t.n_hops, 5, used);
    const std::string ex_context = hide_chains(rng, noise_lines(10 * kNoiseSentences), ex);
    const std::string context = hide_chains(rng, noise_lines(n_units), c);
    RulerText out;
    out.document = std::string(kVtInstruction) + "\n\n" + ex_context + "\n" + vt_question(ex.value) + " " +
                   vt_prefix(t.n_hops + 1, ex.value) + " " + join(ex.vars[0], " ") + "\n\n" + kVtInstruction + "\n\n" +
                   context;
    out.question = vt_question(c.value);
    out.answer_prefix = vt_prefix(t.n_hops + 1, c.value);
    out.references = c.vars[0];
    out.needles = c.statements[0];
    return out;
}

const char* const kCweInstruction =
    "Below is a numbered list of words. Some words occur in it more often than the others; memorize the ones "
    "that occur most often.";

RulerText cwe_text(const RulerTaskSpec& t, const RulerData& d, uint64_t seed, int64_t n_units, int64_t length) {
    Rng rng(seed);
    // RULER shortens the example and the repeats below 4K tokens.
    const bool small = length < 4096;
    auto make = [&](int64_t n_words, int64_t common_reps, int64_t uncommon_reps, std::vector<std::string>& common) {
        std::vector<std::string> picked;
        for (int64_t i : rng.sample(static_cast<int64_t>(d.common_words.size()), n_words))
            picked.push_back(d.common_words[static_cast<size_t>(i)]);
        common.assign(picked.begin(), picked.begin() + std::min<int64_t>(t.n_common, n_words));
        std::vector<std::string> list;
        for (size_t i = 0; i < picked.size(); ++i)
            for (int64_t r = 0; r < (static_cast<int64_t>(i) < t.n_common ? common_reps : uncommon_reps); ++r)
                list.push_back(picked[i]);
        rng.shuffle(list);
        return numbered(list);
    };
    std::vector<std::string> ex_common, common;
    const std::string ex_context = small ? make(20, 3, 1, ex_common) : make(40, 10, 3, ex_common);
    const std::string context = small ? make(n_units, 6, 1, common)
                                      : make(n_units, t.common_repeats, t.uncommon_repeats, common);
    const std::string n = std::to_string(t.n_common);
    const std::string question = "Question: which " + n + " words occur most often in the list above?";
    const std::string prefix = "Answer: The " + n + " words that occur most often in the list are:";
    RulerText out;
    out.document = std::string(kCweInstruction) + "\n" + ex_context + "\n" + question + " " + prefix + " " +
                   numbered(ex_common) + "\n" + kCweInstruction + "\n" + context;
    out.question = question;
    out.answer_prefix = prefix;
    out.references = common;
    return out;
}

double zeta(double s) {
    // Sum of the first terms plus the Euler-Maclaurin tail; exact to ~1e-12 for s >= 1.1.
    const int n = 1000;
    double sum = 0;
    for (int k = 1; k < n; ++k) sum += std::pow(k, -s);
    const double nn = n;
    return sum + std::pow(nn, 1 - s) / (s - 1) + 0.5 * std::pow(nn, -s) + s / 12.0 * std::pow(nn, -s - 1);
}

RulerText fwe_text(const RulerTaskSpec& t, uint64_t seed, int64_t n_units, int64_t length) {
    Rng rng(seed);
    // RULER: a vocabulary of length / 50 six-letter coded words; the most frequent one is "..." (noise).
    const auto vocab_size = static_cast<size_t>(std::max<int64_t>(length / 50, 8));
    std::set<std::string> set;
    while (set.size() < vocab_size) {
        std::string w;
        for (int i = 0; i < 6; ++i) w += static_cast<char>('a' + rng.below(26));
        set.insert(w);
    }
    std::vector<std::string> vocab(set.begin(), set.end());
    rng.shuffle(vocab);
    vocab[0] = "...";
    const double z = zeta(t.alpha);
    std::vector<std::string> words;
    for (size_t k = 0; k < vocab.size(); ++k) {
        const auto count = static_cast<int64_t>(static_cast<double>(n_units) * std::pow(k + 1.0, -t.alpha) / z);
        for (int64_t i = 0; i < count; ++i) words.push_back(vocab[k]);
    }
    rng.shuffle(words);
    RulerText out;
    out.document =
        "Read the coded text below and keep count of how often each coded word occurs; find the three "
        "coded words that occur most often. " +
        join(words, " ");
    out.question =
        "Question: give no explanation and ignore the dots '....'. Which three coded words occur most "
        "often in the coded text above?";
    out.answer_prefix = "Answer: The three coded words that occur most often in the coded text above are:";
    out.references = {vocab[1], vocab[2], vocab[3]};
    return out;
}

std::vector<std::string> read_words(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw InputError("RULER word list '" + path + "' cannot be opened");
    std::vector<std::string> out;
    std::string line;
    for (int64_t n = 1; std::getline(in, line); ++n) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        for (char c : line)
            if (c < 'a' || c > 'z')
                throw InputError("RULER word list '" + path + "' line " + std::to_string(n) + ": '" + line +
                                 "' is not one lower-case word (a-z)");
        out.push_back(line);
    }
    if (out.size() < 20)
        throw InputError("RULER word list '" + path + "' holds " + std::to_string(out.size()) +
                         " words; at least 20 are needed");
    return out;
}

}  // namespace

const std::vector<RulerTaskSpec>& ruler_tasks() {
    static const std::vector<RulerTaskSpec> tasks = [] {
        auto niah = [](const char* name, const char* hay, const char* key, const char* value, int64_t k, int64_t v,
                       int64_t q) {
            RulerTaskSpec t;
            t.name = name;
            t.family = RulerFamily::Niah;
            t.answer_tokens = 128;
            t.haystack = hay;
            t.key_type = key;
            t.value_type = value;
            t.n_keys = k;
            t.n_values = v;
            t.n_queries = q;
            return t;
        };
        std::vector<RulerTaskSpec> v = {
            niah("niah_single_1", "noise", "words", "numbers", 1, 1, 1),
            niah("niah_single_2", "essay", "words", "numbers", 1, 1, 1),
            niah("niah_single_3", "essay", "words", "uuids", 1, 1, 1),
            niah("niah_multikey_1", "essay", "words", "numbers", 4, 1, 1),
            niah("niah_multikey_2", "needles", "words", "numbers", 1, 1, 1),
            niah("niah_multikey_3", "needles", "uuids", "uuids", 1, 1, 1),
            niah("niah_multivalue", "essay", "words", "numbers", 1, 4, 1),
            niah("niah_multiquery", "essay", "words", "numbers", 1, 1, 4),
        };
        RulerTaskSpec vt;
        vt.name = "vt";
        vt.family = RulerFamily::VariableTracking;
        vt.answer_tokens = 30;
        v.push_back(vt);
        RulerTaskSpec cwe;
        cwe.name = "cwe";
        cwe.family = RulerFamily::CommonWords;
        cwe.answer_tokens = 120;
        v.push_back(cwe);
        RulerTaskSpec fwe;
        fwe.name = "fwe";
        fwe.family = RulerFamily::FrequentWords;
        fwe.answer_tokens = 50;
        v.push_back(fwe);
        return v;
    }();
    return tasks;
}

const RulerTaskSpec& find_ruler_task(const std::string& name) {
    std::string names;
    for (const auto& t : ruler_tasks()) {
        if (t.name == name) return t;
        names += (names.empty() ? "" : ", ") + t.name;
    }
    const bool qa = name.rfind("qa", 0) == 0;
    throw ParamError("tasks", "'" + name + "' is not a RULER task here; allowed: all, " + names +
                                  (qa ? " (the QA tasks need SQuAD and HotpotQA and are left out)" : ""));
}

std::vector<std::string> parse_ruler_tasks(const std::string& list) {
    std::vector<std::string> out;
    std::stringstream ss(list);
    std::string item;
    while (std::getline(ss, item, ',')) {
        const size_t a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
        if (a == std::string::npos) throw ParamError("tasks", "empty item in '" + list + "'");
        item = item.substr(a, b - a + 1);
        if (item == "all") {
            for (const auto& t : ruler_tasks())
                if (std::find(out.begin(), out.end(), t.name) == out.end()) out.push_back(t.name);
            continue;
        }
        find_ruler_task(item);
        if (std::find(out.begin(), out.end(), item) != out.end())
            throw ParamError("tasks", "'" + item + "' is given twice");
        out.push_back(item);
    }
    if (out.empty()) throw ParamError("tasks", "the list is empty");
    return out;
}

RulerData load_ruler_data(const std::string& words_dir, const std::string& essay_text) {
    RulerData d;
    d.adjectives = read_words(words_dir + "/adjectives.txt");
    d.nouns = read_words(words_dir + "/nouns.txt");
    d.verbs = read_words(words_dir + "/verbs.txt");
    std::set<std::string> all(d.adjectives.begin(), d.adjectives.end());
    all.insert(d.nouns.begin(), d.nouns.end());
    all.insert(d.verbs.begin(), d.verbs.end());
    d.common_words.assign(all.begin(), all.end());
    d.words_fnv = fnv1a_hex(join(d.adjectives, "\n") + "\n\n" + join(d.nouns, "\n") + "\n\n" + join(d.verbs, "\n"));
    // The essays' body: paragraphs (blank-line separated) that are not headings (#) or bylines (*).
    std::istringstream in(essay_text);
    std::string line, para, body;
    auto flush = [&] {
        const size_t a = para.find_first_not_of(" \t\n");
        if (a != std::string::npos && para[a] != '#' && para[a] != '*') body += para + "\n";
        para.clear();
    };
    while (std::getline(in, line)) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) flush();
        else para += line + "\n";
    }
    flush();
    std::istringstream words(body);
    std::string w;
    while (words >> w) d.essay_words.push_back(w);
    if (d.essay_words.empty()) throw InputError("RULER essays: the essays hold no body text");
    d.essays_fnv = fnv1a_hex(join(d.essay_words, " "));
    return d;
}

int64_t ruler_min_units(const RulerTaskSpec& t) {
    switch (t.family) {
    case RulerFamily::Niah:
        if (t.haystack == "noise") return kNoiseSentences * std::max(t.n_keys, t.n_queries) * t.n_values;
        return t.haystack == "needles" ? 1 : 0;
    case RulerFamily::VariableTracking: return kNoiseSentences;
    case RulerFamily::CommonWords: return t.n_common;
    case RulerFamily::FrequentWords: return 100;
    }
    return 0;
}

int64_t ruler_max_units(const RulerTaskSpec& t, const RulerData& d) {
    return t.family == RulerFamily::CommonWords ? static_cast<int64_t>(d.common_words.size()) : -1;
}

RulerText generate_ruler_text(const RulerTaskSpec& t, const RulerData& d, uint64_t seed, int64_t n_units,
                              int64_t length) {
    switch (t.family) {
    case RulerFamily::Niah: return niah_text(t, d, seed, n_units);
    case RulerFamily::VariableTracking: return vt_text(t, seed, n_units);
    case RulerFamily::CommonWords: return cwe_text(t, d, seed, n_units, length);
    case RulerFamily::FrequentWords: return fwe_text(t, seed, n_units, length);
    }
    throw Error("ruler: unknown task family");
}

uint64_t ruler_sample_seed(uint64_t seed, const std::string& task, int64_t length, int64_t index) {
    uint64_t x = splitmix64(seed);
    for (unsigned char c : task) x = splitmix64(x ^ c);
    x = splitmix64(x ^ static_cast<uint64_t>(length));
    return splitmix64(x ^ static_cast<uint64_t>(index));
}

RulerSample size_ruler_sample(const RulerTaskSpec& t, const RulerData& d, uint64_t seed, int64_t length,
                              const RulerTokenCount& count, int64_t max_prompt) {
    const int64_t target = length - t.answer_tokens;
    std::map<int64_t, int64_t> tried;  // units -> prompt tokens
    auto tokens = [&](int64_t n) {
        auto it = tried.find(n);
        if (it != tried.end()) return it->second;
        return tried[n] = count(generate_ruler_text(t, d, seed, n, length));
    };
    const std::string what = t.name + " at length " + std::to_string(length);
    const int64_t lo_units = ruler_min_units(t), max_units = ruler_max_units(t, d);
    const int64_t fewest = tokens(lo_units);
    if (fewest > target || (max_prompt > 0 && fewest > max_prompt))
        throw ParamError("lengths", what + " is too short: its instructions, needles and question alone take " +
                                        std::to_string(fewest) + " prompt tokens + " + std::to_string(t.answer_tokens) +
                                        " answer tokens (allowed from " + std::to_string(fewest + t.answer_tokens) +
                                        ")");
    // Bracket: lo fits (<= target), hi does not. Tokens per unit from a small probe give a first
    // guess a little past the target (so that long lengths tokenize few oversized texts), then double.
    int64_t lo = lo_units;
    int64_t probe = lo_units + 16;
    if (max_units >= 0) probe = std::min(probe, max_units);
    const double per_unit = probe > lo_units ? std::max(0.25, static_cast<double>(tokens(probe) - fewest) /
                                                                  static_cast<double>(probe - lo_units))
                                             : 1.0;
    int64_t hi = lo_units + 1 + static_cast<int64_t>(1.05 * static_cast<double>(target - fewest) / per_unit);
    if (max_units >= 0) hi = std::min(hi, max_units);
    while (tokens(hi) <= target) {
        lo = hi;
        if (max_units >= 0 && hi >= max_units) break;
        hi = max_units >= 0 ? std::min(hi * 2, max_units) : hi * 2;
    }
    if (tokens(hi) <= target) {
        // The word list ran out (cwe): fine within 1%, refused beyond.
        if (static_cast<double>(tokens(hi) + t.answer_tokens) < 0.99 * static_cast<double>(length))
            throw ParamError("lengths", what + " needs more distinct words than the word list's " +
                                            std::to_string(max_units) + " (they fill " +
                                            std::to_string(tokens(hi) + t.answer_tokens) +
                                            " tokens); choose a shorter length");
    } else {
        while (hi - lo > 1) {
            const int64_t mid = lo + (hi - lo) / 2;
            (tokens(mid) <= target ? lo : hi) = mid;
        }
    }
    // The closest of the neighbours (counts can step back by a token or two where a few more units
    // tokenize differently), never over max_prompt; ties go to the shorter.
    int64_t best = lo;
    for (int64_t n = std::max(lo_units, lo - 2); n <= lo + 2; ++n) {
        if (max_units >= 0 && n > max_units) break;
        const int64_t c = tokens(n);
        if (max_prompt > 0 && c > max_prompt) continue;
        const int64_t e = std::llabs(c - target), eb = std::llabs(tokens(best) - target);
        if (e < eb || (e == eb && c < tokens(best))) best = n;
    }
    RulerSample s;
    s.n_units = best;
    s.text = generate_ruler_text(t, d, seed, best, length);
    s.prompt_tokens = tokens(best);
    return s;
}

}  // namespace snapkv::eval
