// Reads HF tokenizer.json / tokenizer_config.json with nlohmann_json into VocabData, choosing the
// llama.cpp family ("gpt2" byte-level or "llama" SentencePiece-style) and pre-tokenizer name the
// way convert_hf_to_gguf.py would. Does not run any tokenizer and does not interpret Jinja.
#include "core/io/tokenizer_json.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <nlohmann/json.hpp>

#include "core/common/clip_text.h"
#include "core/common/errors.h"
#include "core/io/json_text.h"

namespace snapkv {
namespace {

using json = nlohmann::json;

// The two split regexes whose tokenizer.json form we recognise (Llama 3 and Qwen2).
const char* const k_llama3_regex =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
const char* const k_qwen2_regex =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

const char* const k_eog_texts[] = {"<|eot_id|>",    "<|im_end|>", "<|end|>", "<end_of_turn>",
                                   "<|endoftext|>", "<|eom_id|>", "<EOT>"};

const char* const k_space_marker = "\xE2\x96\x81";  // U+2581 "▁"

// Where we are, for messages: "tokenizer.json '/path/tokenizer.json'".
struct Source {
    std::string where;

    [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
        throw FileError(FileError::Kind::BadJson, where + ": key '" + key + "': " + problem);
    }
    // A valid part we cannot reproduce: refused rather than skipped (a skipped normalizer once
    // turned a 5-token prompt into 7 tokens without a word).
    [[noreturn]] void unsupported(const std::string& key, const std::string& problem) const {
        throw FileError(FileError::Kind::Unsupported, where + ": key '" + key + "': " + problem);
    }
    const json& require(const json& obj, const char* key, const std::string& path) const {
        const auto it = obj.find(key);
        if (it == obj.end()) fail(path, "missing");
        return *it;
    }
    void expect(const json& v, json::value_t type, const std::string& key, const char* expected) const {
        const bool ok = type == json::value_t::number_integer ? v.is_number_integer() : v.type() == type;
        if (!ok) fail(key, std::string("expected ") + expected + ", found " + v.type_name());
    }
};

json parse_file(const std::string& path, const std::string& label) {
    return read_json_file(path, label + " '" + path + "': ");  // nesting limited (json_text.h)
}

// Flattens {"type":"Sequence", <list_key>: [...]} into its steps; null gives none.
std::vector<const json*> flatten(const json& node, const char* list_key) {
    std::vector<const json*> steps;
    if (node.is_null()) return steps;
    if (node.is_object() && node.value("type", "") == "Sequence" && node.contains(list_key) &&
        node[list_key].is_array()) {
        for (const json& child : node[list_key]) {
            for (const json* s : flatten(child, list_key)) steps.push_back(s);
        }
    } else if (node.is_object()) {
        steps.push_back(&node);
    }
    return steps;
}

std::string type_of(const json* step) { return step->value("type", ""); }

// Walks a normalizer / pre_tokenizer / decoder tree, Sequence nodes included, and calls check on
// every step with its type and key ("normalizer.normalizers[1]"). Nodes that are not objects with
// a type are malformed (flatten above would pass over them).
void walk_steps(const Source& src, const json& node, const std::string& key, const char* list_key,
                const std::function<void(const json&, const std::string&, const std::string&)>& check) {
    if (node.is_null()) return;
    if (!node.is_object()) src.fail(key, std::string("expected an object or null, found ") + node.type_name());
    const auto type = node.find("type");
    if (type == node.end() || !type->is_string()) src.fail(key + ".type", "missing; expected the part's type name");
    const std::string name = type->get<std::string>();
    if (name == "Sequence") {
        const auto list = node.find(list_key);
        if (list == node.end() || !list->is_array())
            src.fail(key + "." + list_key, "expected an array of the Sequence's parts");
        for (size_t i = 0; i < list->size(); ++i)
            walk_steps(src, (*list)[i], key + "." + list_key + "[" + std::to_string(i) + "]", list_key, check);
        return;
    }
    check(node, name, key);
}

// The normalizers the tokenizers reproduce. SentencePiece-style: Prepend "▁" (add_space_prefix)
// and Replace " " -> "▁" (what SpmTokenizer does to spaces). NFC (Qwen2) is accepted as llama.cpp
// does: its converter drops it too, and text typed or saved as UTF-8 is NFC already.
void check_normalizer(const Source& src, const json& s, const std::string& type, const std::string& key) {
    if (type == "NFC") return;
    if (type == "Prepend") {
        if (s.value("prepend", json()) != k_space_marker)
            src.unsupported(key, "Prepend of " + clip_text(s.value("prepend", json()).dump()) +
                                     ": only \"\u2581\" (SentencePiece's space) is supported");
        return;
    }
    if (type == "Replace") {
        if (s.value("pattern", json()) != json{{"String", " "}} || s.value("content", json()) != k_space_marker)
            src.unsupported(key, "Replace of " + clip_text(s.value("pattern", json()).dump()) + " with " +
                                     clip_text(s.value("content", json()).dump()) +
                                     ": only \" \" with \"\u2581\" (SentencePiece's spaces) is supported");
        return;
    }
    src.unsupported(
        key, "normalizer type '" + clip_text(type) + "' is not supported (supported: Prepend, Replace, NFC, Sequence)");
}

// Split's pattern must be {"Regex": ...} or {"String": ...}; a regex must compile (PCRE2 with the
// options the pre-tokenizer runs it with).
void check_split(const Source& src, const json& s, const std::string& key) {
    const json pattern = s.value("pattern", json());
    if (pattern.is_object() && pattern.size() == 1 && pattern.contains("String") && pattern["String"].is_string())
        return;
    if (!pattern.is_object() || pattern.size() != 1 || !pattern.contains("Regex") || !pattern["Regex"].is_string())
        src.fail(key + ".pattern",
                 "expected {\"Regex\": string} or {\"String\": string}, found " + clip_text(pattern.dump()));
    const std::string regex = pattern["Regex"].get<std::string>();
    int err = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex.data()), regex.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &offset, nullptr);
    if (code != nullptr) {
        pcre2_code_free(code);
        return;
    }
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw FileError(FileError::Kind::BadValue, src.where + ": key '" + key + ".pattern.Regex': Split regex '" +
                                                   clip_text(regex) + "' does not compile (at offset " +
                                                   std::to_string(offset) + "): " + reinterpret_cast<const char*>(msg));
}

void check_pre_tokenizer(const Source& src, const json& s, const std::string& type, const std::string& key) {
    if (type == "Split") return check_split(src, s, key);
    if (type == "ByteLevel" || type == "Digits" || type == "Metaspace") return;
    src.unsupported(key, "pre-tokenizer type '" + clip_text(type) +
                             "' is not supported (supported: ByteLevel, Digits, Split, Metaspace, Sequence)");
}

// Decoders only turn ids back into text, but an unknown one would still print the wrong text.
void check_decoder(const Source& src, const json&, const std::string& type, const std::string& key) {
    for (const char* known : {"ByteLevel", "Replace", "ByteFallback", "Fuse", "Strip", "Metaspace"})
        if (type == known) return;
    src.unsupported(key, "decoder type '" + clip_text(type) +
                             "' is not supported (supported: ByteLevel, Replace, ByteFallback, Fuse, Strip, "
                             "Metaspace, Sequence)");
}

// "Split + ByteLevel", for messages.
std::string step_types(const std::vector<const json*>& steps) {
    std::string out;
    for (const json* s : steps) out += (out.empty() ? "" : " + ") + clip_text(type_of(s), 40);
    return out.empty() ? "none" : out;
}

bool any_of_type(const std::vector<const json*>& steps, const char* type) {
    return std::any_of(steps.begin(), steps.end(), [&](const json* s) { return type_of(s) == type; });
}

// A string or {"content": "..."} (tokenizer_config.json writes both); "" for null or absent.
std::string token_string(const Source& src, const json& cfg, const char* key) {
    const auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return std::string();
    if (it->is_string()) return it->get<std::string>();
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
        return (*it)["content"].get<std::string>();
    }
    src.fail(key, std::string("expected a string or {\"content\": string}, found ") + it->type_name());
}

// The pre-tokenizer name llama.cpp's converter would write for a byte-level tokenizer.json.
std::string detect_pre(const std::vector<const json*>& pre) {
    auto byte_level_regex = [](const json* s) { return type_of(s) == "ByteLevel" && s->value("use_regex", true); };
    if (pre.size() == 1 && byte_level_regex(pre[0])) return "gpt-2";
    if (pre.size() == 2 && type_of(pre[0]) == "Digits" && pre[0]->value("individual_digits", false) &&
        byte_level_regex(pre[1])) {
        return "smollm";
    }
    if (pre.size() == 2 && type_of(pre[0]) == "Split" && type_of(pre[1]) == "ByteLevel" &&
        !pre[1]->value("use_regex", true)) {
        const json& pattern = (*pre[0]).value("pattern", json());
        const std::string regex = pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()
                                      ? pattern["Regex"].get<std::string>()
                                      : std::string();
        if (regex == k_llama3_regex) return "llama-bpe";
        if (regex == k_qwen2_regex) return "qwen2";
    }
    return "default";
}

bool is_byte_token(const std::string& text) {
    return text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>' &&
           std::isxdigit(static_cast<unsigned char>(text[3])) && std::isxdigit(static_cast<unsigned char>(text[4]));
}

// TemplateProcessing "single": does it start (BOS) or end (EOS) with a special token?
struct TemplateSpecials {
    bool found = false;  // a TemplateProcessing exists
    std::string first;   // text of a leading SpecialToken, "" if none
    std::string last;    // text of a trailing SpecialToken, "" if none
};

TemplateSpecials template_specials(const json& post) {
    TemplateSpecials out;
    for (const json* step : flatten(post, "processors")) {
        if (type_of(step) != "TemplateProcessing") continue;
        const json single = step->value("single", json());
        if (!single.is_array() || single.empty()) continue;
        out.found = true;
        auto special_id = [](const json& item) -> std::string {
            if (item.is_object() && item.contains("SpecialToken") && item["SpecialToken"].is_object()) {
                return item["SpecialToken"].value("id", "");
            }
            return std::string();
        };
        out.first = special_id(single.front());
        if (single.size() > 1) out.last = special_id(single.back());
    }
    return out;
}

}  // namespace

static VocabData read_tokenizer_json_impl(const std::string& tokenizer_json_path,
                                          const std::string& tokenizer_config_json_path);

VocabData read_tokenizer_json(const std::string& tokenizer_json_path, const std::string& tokenizer_config_json_path) {
    try {
        return read_tokenizer_json_impl(tokenizer_json_path, tokenizer_config_json_path);
    } catch (const json::exception& e) {
        // A value of an unexpected type that a lookup above did not check explicitly.
        throw FileError(FileError::Kind::BadJson, "tokenizer.json '" + tokenizer_json_path + "' / config '" +
                                                      tokenizer_config_json_path + "': " + e.what());
    }
}

static VocabData read_tokenizer_json_impl(const std::string& tokenizer_json_path,
                                          const std::string& tokenizer_config_json_path) {
    const Source src{"tokenizer.json '" + tokenizer_json_path + "'"};
    const json root = parse_file(tokenizer_json_path, "tokenizer.json");
    if (!root.is_object()) src.fail("(root)", std::string("expected an object, found ") + root.type_name());

    const json& model = src.require(root, "model", "model");
    src.expect(model, json::value_t::object, "model", "an object");
    // Old files omit model.type; vocab + merges is BPE.
    const std::string model_type = model.contains("type") && model["type"].is_string()
                                       ? model["type"].get<std::string>()
                                       : (model.contains("merges") ? "BPE" : "");
    if (model_type != "BPE") {
        throw FileError(FileError::Kind::Unsupported,
                        src.where + ": key 'model.type': '" + clip_text(model_type) + "': unsupported; supported: BPE");
    }

    // Tokens: model.vocab plus added_tokens; ids may leave holes, filled like llama.cpp's converter.
    const json& vocab_json = src.require(model, "vocab", "model.vocab");
    src.expect(vocab_json, json::value_t::object, "model.vocab", "an object");
    std::map<int64_t, std::string> by_id;
    const int64_t k_max_id = 1 << 24;  // 16M tokens: far above any real vocabulary
    for (auto it = vocab_json.begin(); it != vocab_json.end(); ++it) {
        const std::string key = "model.vocab." + clip_text(it.key());
        src.expect(it.value(), json::value_t::number_integer, key, "an integer id");
        const int64_t id = it.value().get<int64_t>();
        if (id < 0 || id >= k_max_id) src.fail(key, std::to_string(id) + ": out of range; expected 0..16777215");
        if (!by_id.emplace(id, it.key()).second) {
            src.fail(key, "id " + std::to_string(id) + " already used by '" + clip_text(by_id[id]) + "'");
        }
    }
    struct Added {
        int64_t id;
        std::string content;
        bool special;
    };
    std::vector<Added> added;
    if (root.contains("added_tokens") && !root["added_tokens"].is_null()) {
        const json& arr = root["added_tokens"];
        src.expect(arr, json::value_t::array, "added_tokens", "an array");
        for (size_t i = 0; i < arr.size(); ++i) {
            const std::string key = "added_tokens[" + std::to_string(i) + "]";
            const json& t = arr[i];
            src.expect(t, json::value_t::object, key, "an object");
            const json& id = src.require(t, "id", key + ".id");
            src.expect(id, json::value_t::number_integer, key + ".id", "an integer");
            const json& content = src.require(t, "content", key + ".content");
            src.expect(content, json::value_t::string, key + ".content", "a string");
            const int64_t v = id.get<int64_t>();
            if (v < 0 || v >= k_max_id)
                src.fail(key + ".id", std::to_string(v) + ": out of range; expected 0..16777215");
            added.push_back({v, content.get<std::string>(), t.value("special", false)});
            by_id[v] = content.get<std::string>();  // an added token's text wins
        }
    }
    if (by_id.empty()) src.fail("model.vocab", "empty; expected at least one token");
    // Ids may leave holes (filled below), but not millions of them: one id near 2^24 in a small
    // file would otherwise size a 16M-token vocabulary. Real files leave none or a few.
    const int64_t k_max_holes = 65536;
    const int64_t holes = by_id.rbegin()->first + 1 - static_cast<int64_t>(by_id.size());
    if (holes > k_max_holes)
        throw FileError(FileError::Kind::BadValue,
                        src.where + ": key 'model.vocab': the highest id is " + std::to_string(by_id.rbegin()->first) +
                            " but there are " + std::to_string(by_id.size()) + " tokens: " + std::to_string(holes) +
                            " unused ids, allowed at most " + std::to_string(k_max_holes));

    VocabData v;
    const size_t n = size_t(by_id.rbegin()->first) + 1;
    v.tokens.resize(n);
    v.types.assign(n, 1);  // normal
    std::vector<bool> present(n, false);
    for (const auto& [id, text] : by_id) {
        v.tokens[size_t(id)] = text;
        present[size_t(id)] = true;
    }
    for (size_t i = 0; i < n; ++i) {
        if (!present[i]) {
            v.tokens[i] = "[PAD" + std::to_string(i) + "]";
            v.types[i] = 5;  // unused
        }
    }
    for (const Added& a : added) v.types[size_t(a.id)] = a.special ? 3 : 4;  // control / user-defined
    std::unordered_map<std::string, int32_t> text_to_id;
    for (size_t i = 0; i < n; ++i) text_to_id[v.tokens[i]] = int32_t(i);
    auto id_of = [&](const std::string& text) -> int32_t {
        const auto it = text_to_id.find(text);
        return it == text_to_id.end() ? -1 : it->second;
    };

    // Merges: "a b" strings, or ["a", "b"] pairs (tokenizers >= 0.20).
    std::vector<std::string> merges;
    if (model.contains("merges") && !model["merges"].is_null()) {
        const json& arr = model["merges"];
        src.expect(arr, json::value_t::array, "model.merges", "an array");
        merges.reserve(arr.size());
        for (size_t i = 0; i < arr.size(); ++i) {
            const json& m = arr[i];
            const std::string key = "model.merges[" + std::to_string(i) + "]";
            if (m.is_string()) {
                const std::string s = m.get<std::string>();
                if (s.size() < 3 || s.find(' ', 1) == std::string::npos) {
                    src.fail(key, "'" + clip_text(s) + "': expected \"left right\"");
                }
                merges.push_back(s);
            } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
                merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
            } else {
                src.fail(key, std::string("expected \"left right\" or [left, right], found ") + m.type_name());
            }
        }
    }

    // Family: byte-level if a ByteLevel pre-tokenizer or decoder is present; SentencePiece-style
    // if it falls back to bytes or writes spaces as "▁".
    const json null_json;
    const json& pre_json = root.contains("pre_tokenizer") ? root["pre_tokenizer"] : null_json;
    const json& norm_json = root.contains("normalizer") ? root["normalizer"] : null_json;
    const json& dec_json = root.contains("decoder") ? root["decoder"] : null_json;
    walk_steps(src, norm_json, "normalizer", "normalizers",
               [&](const json& s, const std::string& t, const std::string& k) { check_normalizer(src, s, t, k); });
    walk_steps(src, pre_json, "pre_tokenizer", "pretokenizers",
               [&](const json& s, const std::string& t, const std::string& k) { check_pre_tokenizer(src, s, t, k); });
    walk_steps(src, dec_json, "decoder", "decoders",
               [&](const json& s, const std::string& t, const std::string& k) { check_decoder(src, s, t, k); });
    const auto pre_steps = flatten(pre_json, "pretokenizers");
    const auto norm_steps = flatten(norm_json, "normalizers");
    const auto dec_steps = flatten(dec_json, "decoders");
    const bool byte_level = any_of_type(pre_steps, "ByteLevel") || any_of_type(dec_steps, "ByteLevel");
    bool prepend_space = false;
    bool marker_spaces = false;
    for (const json* s : norm_steps) {
        if (type_of(s) == "Prepend" && s->value("prepend", "") == k_space_marker) prepend_space = true;
        if (type_of(s) == "Replace" && s->value("content", "") == k_space_marker) marker_spaces = true;
    }
    for (const json* s : pre_steps) {
        if (type_of(s) != "Metaspace") continue;
        marker_spaces = true;
        const std::string scheme = s->value("prepend_scheme", "");
        if (scheme == "always" || scheme == "first" || (scheme.empty() && s->value("add_prefix_space", true))) {
            prepend_space = true;
        }
    }
    const bool sentencepiece = model.value("byte_fallback", false) || marker_spaces;

    if (byte_level) {
        v.model = "gpt2";
        for (const json* step : norm_steps)
            if (type_of(step) != "NFC")
                src.unsupported("normalizer", "normalizer " + step_types(norm_steps) +
                                                  " with a byte-level vocabulary: only NFC (or none) is supported");
        v.pre = detect_pre(pre_steps);
        // Any other arrangement would be tokenized with a regex the file does not ask for.
        if (v.pre == "default")
            src.unsupported("pre_tokenizer",
                            "byte-level pre-tokenizer " + step_types(pre_steps) +
                                " cannot be reproduced (supported: ByteLevel with use_regex; Digits + ByteLevel "
                                "(SmolLM); Split with the Llama 3 or Qwen2 regex + ByteLevel without use_regex)");
        v.merges = std::move(merges);
        v.add_space_prefix = false;
    } else if (sentencepiece) {
        for (const json* step : pre_steps)
            if (type_of(step) != "Metaspace")
                src.unsupported("pre_tokenizer", "pre-tokenizer " + step_types(pre_steps) +
                                                     " with a SentencePiece-style vocabulary: only Metaspace "
                                                     "(or none) is supported");
        v.model = "llama";
        v.pre = "default";
        v.add_space_prefix = prepend_space;
        // llama.cpp's SentencePiece merging ranks adjacent pairs by the score of the token they
        // form; HF ranks pairs by merge order. Score = -(rank of the first merge producing the
        // token) keeps that order. Tokens no merge produces (single characters, bytes, specials)
        // get a score below every merge: they only start a merge in llama.cpp if no listed merge
        // applies, which HF would never do; both agree on all vocabularies converted from
        // SentencePiece, where every multi-character token has a merge.
        v.scores.assign(n, -float(merges.size()));
        for (size_t r = merges.size(); r-- > 0;) {
            const std::string& m = merges[r];
            const size_t space = m.find(' ', 1);
            const int32_t id = id_of(m.substr(0, space) + m.substr(space + 1));
            if (id >= 0) v.scores[size_t(id)] = -float(r);
        }
        for (size_t i = 0; i < n; ++i) {
            if (v.types[i] == 1 && is_byte_token(v.tokens[i])) v.types[i] = 6;  // byte
        }
    } else {
        throw FileError(FileError::Kind::Unsupported,
                        src.where +
                            ": key 'pre_tokenizer': BPE that is neither byte-level (ByteLevel) nor "
                            "SentencePiece-style (byte_fallback, Metaspace or \"▁\" normalizer); "
                            "supported: those two");
    }
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
        v.unk_id = id_of(model["unk_token"].get<std::string>());
        if (v.unk_id >= 0) v.types[size_t(v.unk_id)] = 2;  // unknown
    }

    // Special ids and add_bos/add_eos: tokenizer_config.json, else the post_processor template,
    // else the family's defaults (llama.cpp: SentencePiece adds BOS, byte-level does not).
    const TemplateSpecials tmpl = template_specials(root.contains("post_processor") ? root["post_processor"]
                                                                                    : null_json);
    std::string bos_text = tmpl.first, eos_text, pad_text;
    bool have_add_bos = false;
    v.add_bos = !tmpl.first.empty();
    v.add_eos = !tmpl.last.empty();
    if (!tmpl.last.empty()) eos_text = tmpl.last;
    json cfg;
    std::string cfg_where;
    if (!tokenizer_config_json_path.empty() && std::ifstream(tokenizer_config_json_path).good()) {
        cfg = parse_file(tokenizer_config_json_path, "tokenizer_config.json");
        const Source csrc{"tokenizer_config.json '" + tokenizer_config_json_path + "'"};
        cfg_where = csrc.where;
        if (!cfg.is_object()) csrc.fail("(root)", std::string("expected an object, found ") + cfg.type_name());
        if (const std::string s = token_string(csrc, cfg, "bos_token"); !s.empty()) bos_text = s;
        if (const std::string s = token_string(csrc, cfg, "eos_token"); !s.empty()) eos_text = s;
        pad_text = token_string(csrc, cfg, "pad_token");
        for (const char* key : {"add_bos_token", "add_eos_token"}) {
            if (!cfg.contains(key) || cfg[key].is_null()) continue;
            csrc.expect(cfg[key], json::value_t::boolean, key, "a boolean");
            const bool value = cfg[key].get<bool>();
            if (std::strcmp(key, "add_bos_token") == 0) {
                v.add_bos = value;
                have_add_bos = true;
            } else {
                v.add_eos = value;
            }
        }
        if (cfg.contains("chat_template") && !cfg["chat_template"].is_null()) {
            const json& ct = cfg["chat_template"];
            if (ct.is_string()) {
                v.chat_template = ct.get<std::string>();
            } else if (ct.is_array()) {
                // Named templates: [{"name": "default", "template": "..."}, {"name": "tool_use", ...}]
                for (size_t i = 0; i < ct.size(); ++i) {
                    const json& t = ct[i];
                    const std::string key = "chat_template[" + std::to_string(i) + "]";
                    if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || !t.contains("template") ||
                        !t["template"].is_string())
                        csrc.fail(key, std::string("expected {\"name\": string, \"template\": string}, found ") +
                                           clip_text(t.dump()));
                    const std::string name = t["name"].get<std::string>();
                    if (name == "default") v.chat_template = t["template"].get<std::string>();
                    else v.chat_templates.emplace_back(name, t["template"].get<std::string>());
                }
            } else {
                csrc.fail("chat_template",
                          std::string("expected a string or a list of named templates, found ") + ct.type_name());
            }
        }
    }
    if (v.model == "llama") {
        if (bos_text.empty() && id_of("<s>") >= 0) bos_text = "<s>";
        if (eos_text.empty() && id_of("</s>") >= 0) eos_text = "</s>";
        // HF's LlamaTokenizer defaults to add_bos_token = true, as does llama.cpp for SentencePiece.
        if (!have_add_bos && !tmpl.found) v.add_bos = !bos_text.empty();
    } else if (eos_text.empty() && id_of("<|endoftext|>") >= 0) {
        eos_text = "<|endoftext|>";
    }
    auto special_id = [&](const std::string& text, const char* key) -> int32_t {
        if (text.empty()) return -1;
        const int32_t id = id_of(text);
        if (id < 0) {
            throw FileError(FileError::Kind::BadValue, (cfg_where.empty() ? src.where : cfg_where) + ": key '" + key +
                                                           "': '" + clip_text(text) + "' is not a token of " +
                                                           src.where);
        }
        return id;
    };
    v.bos_id = special_id(bos_text, "bos_token");
    v.eos_id = special_id(eos_text, "eos_token");
    v.pad_id = special_id(pad_text, "pad_token");
    if (v.add_bos && v.bos_id < 0) v.add_bos = false;
    if (v.add_eos && v.eos_id < 0) v.add_eos = false;
    for (const char* text : k_eog_texts) {
        const int32_t id = id_of(text);
        if (id >= 0 && id != v.eos_id) v.eog_ids.push_back(id);
    }
    return v;
}

}  // namespace snapkv
