// The prompt as the model sees it: after a Run on SmolLM2 (which has a chat template) the dock
// shows the rendered template around the document and question, the system prompt from the
// Prompt panel, and the special tokens marked; on stories260K (no template) it says the prompt
// is plain text. A session file keeps the system prompt.
#include <catch2/catch.hpp>

#include <QDockWidget>
#include <QJsonObject>
#include <QTextEdit>

#include "app/gui/files/session_file.h"
#include "app/gui/panels/prompt_panel.h"
#include "app/gui/state/analysis_state.h"
#include "app/gui/view_registry.h"
#include "app/gui/views/prompt_text_view.h"
#include "gui_test_util.h"
#include "tests/common/test_util.h"

using namespace guitest;

TEST_CASE("The prompt dock shows SmolLM2's chat template with the system prompt and special tokens", "[gui][chat]") {
    const std::string model = snapkv::test::smollm2_path();
    INFO("SmolLM2 is fetched by scripts/setup.sh; expected at " << model);
    REQUIRE(snapkv::test::file_exists(model));
    auto w = makeWindow(64);
    w->setModelPath(QString::fromStdString(model));
    w->promptPanel()->setChat(true);
    w->promptPanel()->setSystemPrompt("Answer in one word.");
    REQUIRE(runAndWait(*w).what == "finished");
    const snapkv::PrefillSummary& pre = w->state()->prefill();
    CHECK(pre.template_source == "model");
    CHECK(pre.prompt_text.rfind("<|im_start|>system\nAnswer in one word.<|im_end|>\n<|im_start|>user\n", 0) == 0);
    CHECK(pre.prompt_text.size() > 100);
    REQUIRE(pre.special.size() == pre.ids.size());
    int specials = 0;
    for (uint8_t s : pre.special) specials += s;
    CHECK(specials == 5);  // <|im_start|> x3, <|im_end|> x2

    w->showPromptText();
    settle();
    w->promptTextView()->refreshNow();
    CHECK_FALSE(w->promptTextView()->emptyStateShown());
    const QString text = w->promptTextView()->textView()->toPlainText();
    CHECK(text.contains("Answer in one word."));
    CHECK(text.contains("<|im_start|>"));
    CHECK(text.contains("What did Lily find on the beach?"));
    CHECK(w->promptTextView()->summary().contains("the model's chat template"));
    CHECK(w->promptTextView()->summary().contains("5 special"));
}

TEST_CASE("A session file keeps the system prompt", "[gui][chat]") {
    studio::SessionFile s;
    s.system = "Be brief.";
    QString error;
    const auto back = studio::SessionFile::fromJson(s.toJson(), QString(), studio::viewNames(), &error);
    REQUIRE(back.has_value());
    CHECK(back->system == "Be brief.");
    studio::SessionFile none;
    CHECK_FALSE(none.toJson()["prompt"].toObject().contains("system"));
}

TEST_CASE("The prompt dock says so when the model has no chat template", "[gui][chat]") {
    auto w = makeWindow(64);
    w->showPromptText();
    settle();
    w->promptTextView()->refreshNow();
    CHECK(w->promptTextView()->emptyStateShown());
    REQUIRE(runAndWait(*w).what == "finished");
    settle();
    w->promptTextView()->refreshNow();
    CHECK(w->state()->prefill().template_source == "none");
    CHECK(w->promptTextView()->summary().contains("no chat template"));
    CHECK(w->promptTextView()->textView()->toPlainText().contains("What did Lily find on the beach?"));
}
