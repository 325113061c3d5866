// See qa_set.h.
#include "core/eval/qa_set.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/eval/chat_settings.h"
#include "core/eval/param_error.h"
#include "core/eval/text_score.h"

namespace snapkv::eval {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string read_all(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// A value names a file when it is one short line ending in a text-file extension.
bool looks_like_file(const std::string& v) {
    if (v.empty() || v.size() > 512 || v.find('\n') != std::string::npos) return false;
    const std::string ext = fs::path(v).extension().string();
    return ext == ".md" || ext == ".txt" || ext == ".text";
}

}  // namespace

QaSet load_qa_set(const std::string& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) throw ParamError("set", "'" + path + "' is not a file");
    QaSet set;
    set.path = path;
    const std::string bytes = read_all(path);
    set.fnv = fnv1a_hex(bytes);
    const fs::path folder = fs::path(path).parent_path();
    std::istringstream in(bytes);
    std::string line;
    for (int64_t n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string at = "question set '" + path + "' line " + std::to_string(n);
        json j;
        try {
            j = json::parse(line);
        } catch (const json::parse_error& e) {
            throw InputError(at + " is not valid JSON: " + e.what());
        }
        if (!j.is_object()) throw InputError(at + " is not a JSON object");
        auto field = [&](const char* key, bool required) -> std::string {
            if (!j.contains(key) || j[key].is_null()) {
                if (required)
                    throw InputError(at + ": '" + key + "' is missing (each item needs document and question)");
                return "";
            }
            if (!j[key].is_string()) throw InputError(at + ": '" + key + "' must be a string");
            return j[key].get<std::string>();
        };
        QaItem item;
        item.id = j.contains("id") ? (j["id"].is_string() ? j["id"].get<std::string>() : j["id"].dump())
                                   : "item " + std::to_string(set.items.size() + 1);
        const std::string doc = field("document", true);
        item.question = field("question", true);
        if (j.contains("answer") && !j["answer"].is_null()) {
            item.answer = field("answer", false);
            item.has_answer = true;
        }
        if (looks_like_file(doc)) {
            const fs::path p = fs::path(doc).is_absolute() ? fs::path(doc) : folder / doc;
            if (!fs::is_regular_file(p, ec))
                throw InputError(at + ": document '" + doc + "' names a file that does not exist (looked for '" +
                                 p.string() + "')");
            item.document = read_all(p);
            item.document_file = doc;
        } else {
            item.document = doc;
        }
        if (item.document.find_first_not_of(" \t\r\n") == std::string::npos)
            throw InputError(at + ": the document is empty");
        if (item.question.find_first_not_of(" \t\r\n") == std::string::npos)
            throw InputError(at + ": the question is empty");
        set.items.push_back(std::move(item));
    }
    if (set.items.empty()) throw ParamError("set", "'" + path + "' holds no items (the document set is empty)");
    return set;
}

void check_same_set(const json& st, const QaSet& set) {
    const json& s = st.contains("set") ? st["set"] : json();
    if (!s.is_object() || s.value("fnv1a", std::string()) != set.fnv)
        throw InputError("the results were made with another question set (" +
                         (s.is_object() ? s.value("file", std::string("?")) : std::string("?")) + ") than '" +
                         set.path + "'; choose the same set file");
}

SweepTask::SweepTask(const Session& s, QaSet set, ChatSettings chat, int64_t max_tokens)
    : m_set(std::move(set)), m_chat(task_chat(s, std::move(chat))) {
    const int64_t n_ctx = s.model_info().config.n_ctx_train;
    for (size_t i = 0; i < m_set.items.size(); ++i) {
        const auto n = static_cast<int64_t>(s.build_prompt(prompt_for(m_set.items[i])).ids.size());
        if (n_ctx > 0 && n + max_tokens > n_ctx)
            throw ParamError("set", "item " + std::to_string(i + 1) + " ('" + m_set.items[i].id + "') has " +
                                        std::to_string(n) + " prompt tokens; with " + std::to_string(max_tokens) +
                                        " answer tokens that is above the model's context of " + std::to_string(n_ctx));
    }
}

json SweepTask::settings() const {
    json st = {
        {"set",
         {{"file", fs::path(m_set.path).filename().string()}, {"fnv1a", m_set.fnv}, {"items", m_set.items.size()}}}};
    add_chat_settings(st, m_chat);
    return st;
}

PromptSpec SweepTask::prompt_for(const QaItem& item) const {
    PromptSpec p;
    p.document = item.document;
    p.question = item.question;
    p.chat = m_chat;
    return p;
}

std::string SweepTask::cell_label(int64_t cell) const { return m_set.items[static_cast<size_t>(cell)].id; }

CellPrompt SweepTask::prepare(const Session&, int64_t cell) const {
    const QaItem& item = m_set.items[static_cast<size_t>(cell)];
    CellPrompt cp;
    cp.prompt = prompt_for(item);
    cp.has_reference = item.has_answer;
    cp.reference = item.answer;
    cp.fields = {{"item", cell}, {"item_id", item.id}, {"question", item.question}};
    if (!item.document_file.empty()) cp.fields["document_file"] = item.document_file;
    return cp;
}

}  // namespace snapkv::eval
