// Budget sweeps over a document set: the question set (JSON Lines of {document, question,
// answer?, id?}; `document` is the text itself or a file name relative to the set's folder) and
// the task that turns item i into cell i. Errors name the file, the line and the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/eval/eval_runner.h"

namespace snapkv::eval {

struct QaItem {
    std::string id;  // "id" field, else "item N" (1-based line order)
    std::string document;
    std::string document_file;  // the file it came from ("" when inline)
    std::string question;
    bool has_answer = false;
    std::string answer;
};

struct QaSet {
    std::string path;
    std::string fnv;  // FNV-1a of the file's bytes
    std::vector<QaItem> items;
};

QaSet load_qa_set(const std::string& path);

// Throws InputError unless `set` is the question set a run's settings (EvalRun::settings()["sweep"])
// were made with (same bytes, by FNV-1a).
void check_same_set(const nlohmann::json& sweep_settings, const QaSet& set);

class SweepTask : public EvalTask {
public:
    // Checks that every item's prompt fits the model's context with max_tokens to spare.
    // chat: passed through task_chat (core/eval/chat_settings.h).
    SweepTask(const Session& s, QaSet set, ChatSettings chat, int64_t max_tokens);

    std::string name() const override { return "sweep"; }
    int64_t n_cells() const override { return static_cast<int64_t>(m_set.items.size()); }
    nlohmann::json settings() const override;
    CellPrompt prepare(const Session& s, int64_t cell) const override;
    std::string cell_label(int64_t cell) const override;  // the item's id

    const QaSet& set() const { return m_set; }

private:
    PromptSpec prompt_for(const QaItem& item) const;

    QaSet m_set;
    ChatSettings m_chat;
};

}  // namespace snapkv::eval
