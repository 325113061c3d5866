// The run forecast in the app: the status bar shows the time and peak before a prefill, a run that
// does not fit (SNAPKV_MEMORY_LIMIT) stops before the prefill with its cheaper choices as buttons,
// the KV cache type is chosen in the Device row and applied at the next Run without a reload, and
// session files keep it.
#include <catch2/catch.hpp>

#include <QComboBox>
#include <QDir>
#include <QEventLoop>
#include <QJsonObject>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTimer>

#include <cstdlib>

#include "app/gui/files/session_file.h"
#include "app/gui/panels/cheaper_choices_dialog.h"
#include "app/gui/panels/prompt_panel.h"
#include "app/gui/view_registry.h"
#include "app/gui/workers/run_controller.h"
#include "gui_test_util.h"

using namespace guitest;

namespace {

// A forecast as a 4K-token run of a 1B model on a small machine would read.
snapkv::RunForecast tightForecast() {
    snapkv::RunForecast f;
    f.n_tokens = 4096;
    f.n_context = 4000;
    f.memory.weights = 700ll << 20;
    f.memory.kv_cache = 2048ll << 20;
    f.memory.capture = 96ll << 20;
    f.memory.scorer = 300ll << 20;
    f.memory.activations = 200ll << 20;
    f.available.bytes = 1536ll << 20;
    f.available.source = "MemAvailable in /proc/meminfo";
    f.seconds = 83;
    snapkv::CheaperChoice q8;
    q8.cache_type = snapkv::KvType::Q8_0;
    q8.n_tokens = 4096;
    q8.peak_bytes = 1900ll << 20;
    snapkv::CheaperChoice cut;
    cut.kind = snapkv::CheaperChoice::Kind::ShorterDocument;
    cut.n_tokens = 2100;
    cut.document_tokens = 2004;
    cut.document_share = 0.501;
    cut.peak_bytes = 2200ll << 20;
    f.choices = {q8, cut};
    return f;
}

}  // namespace

TEST_CASE("a run that does not fit offers its cheaper choices as buttons", "[gui][forecast]") {
    qRegisterMetaType<snapkv::CheaperChoice>();
    const snapkv::RunForecast f = tightForecast();
    REQUIRE_FALSE(f.fits());
    studio::CheaperChoicesDialog dialog(f);
    dialog.setAttribute(Qt::WA_DeleteOnClose, false);
    dialog.show();
    settle();
    const auto* text = dialog.findChild<QLabel*>("doesNotFitText");
    REQUIRE(text);
    CHECK(text->text().contains("The prefill of 4,096 tokens would need 3.1 GiB at its peak"));
    CHECK(text->text().contains("but 2.2 GiB is free (MemAvailable in /proc/meminfo)"));
    const auto* q8 = dialog.findChild<QPushButton*>("cacheTypeChoice");
    auto* cut = dialog.findChild<QPushButton*>("cutChoice");
    REQUIRE(q8);
    REQUIRE(cut);
    CHECK(q8->text() == "Use q8_0 cache (peak 1.9 GiB)");
    CHECK(cut->text() == "Cut the document to 2,004 tokens (50 % of it, peak 2.1 GiB)");
    // The picture a person sees (judged by eye in the report), beside the other screenshots.
    const QString shot = QDir::current().filePath("cheaper_choices_dialog.png");
    CHECK(dialog.grab().save(shot));
    QSignalSpy chosen(&dialog, &studio::CheaperChoicesDialog::choiceMade);
    cut->click();
    REQUIRE(chosen.count() == 1);
    const auto c = chosen.at(0).at(0).value<snapkv::CheaperChoice>();
    CHECK(c.kind == snapkv::CheaperChoice::Kind::ShorterDocument);
    CHECK(c.n_tokens == 2100);
}

TEST_CASE("the status bar shows the forecast before the prefill, and the cache type applies without a reload",
          "[gui][forecast]") {
    qRegisterMetaType<snapkv::RunForecast>();
    auto w = makeWindow();
    QSignalSpy forecasts(w->controller(), &studio::RunController::forecastMade);
    REQUIRE(runAndWait(*w).what == "finished");
    REQUIRE(forecasts.count() == 1);
    const auto first = forecasts.at(0).at(0).value<snapkv::RunForecast>();
    CHECK(first.cache_type == snapkv::KvType::F32);
    CHECK(first.n_tokens == w->state()->prefill().n_tokens);
    const auto* label = w->findChild<QLabel*>("forecastLabel");
    REQUIRE(label);
    INFO(label->text().toStdString());
    CHECK(label->text().startsWith("about "));
    CHECK(label->text().contains(", peak "));
    CHECK(label->text().contains(" free"));

    // f16 from the Device row: the next Run prefills again in it, with the same model (no load).
    auto* combo = w->findChild<QComboBox*>("cacheTypeCombo");
    REQUIRE(combo);
    combo->setCurrentIndex(combo->findData("f16"));
    CHECK(w->promptPanel()->loadOptions().cache_type == "f16");
    QSignalSpy loads(w->controller(), &studio::RunController::modelLoaded);
    const int64_t kvF32 = w->state()->prefill().kv_bytes_full;
    REQUIRE(runAndWait(*w).what == "finished");
    CHECK(loads.count() == 0);
    REQUIRE(forecasts.count() == 2);
    const auto second = forecasts.at(1).at(0).value<snapkv::RunForecast>();
    CHECK(second.cache_type == snapkv::KvType::F16);
    CHECK(second.memory.kv_cache < first.memory.kv_cache);
    // The app's KV numbers are the stored bytes.
    CHECK(w->state()->prefill().kv_bytes_full < kvF32);
}

TEST_CASE("a run over the memory limit stops before its prefill and says what it would need", "[gui][forecast]") {
    auto w = makeWindow();
    setenv("SNAPKV_MEMORY_LIMIT", "1", 1);
    QSignalSpy refused(w->controller(), &studio::RunController::runDoesNotFit);
    QEventLoop loop;
    QObject::connect(w->controller(), &studio::RunController::runDoesNotFit, &loop, &QEventLoop::quit);
    QObject::connect(w->controller(), &studio::RunController::runFinished, &loop, &QEventLoop::quit);
    QTimer::singleShot(120000, &loop, &QEventLoop::quit);
    w->run();
    if (refused.count() == 0) loop.exec();
    unsetenv("SNAPKV_MEMORY_LIMIT");
    settle();
    REQUIRE(refused.count() == 1);
    const auto f = refused.at(0).at(0).value<snapkv::RunForecast>();
    CHECK_FALSE(f.fits());
    CHECK(f.choices.empty());  // one byte: nothing helps
    CHECK_FALSE(w->state()->hasPrefill());
    CHECK(w->lastError().contains("would need"));
    CHECK(w->lastError().contains("No cache type and no shorter document would fit"));
    CHECK_FALSE(w->controller()->busy());
}

TEST_CASE("a session file keeps the KV cache type and refuses an unknown one", "[gui][forecast]") {
    studio::SessionFile s;
    s.modelPath = modelPath();
    s.load.cache_type = "q8_0";
    QString error;
    const QJsonObject o = s.toJson();
    CHECK(o["model"].toObject()["cache_type"].toString() == "q8_0");
    const auto back = studio::SessionFile::fromJson(o, QString(), studio::viewNames(), &error);
    REQUIRE(back);
    CHECK(back->load.cache_type == "q8_0");
    QJsonObject bad = o;
    QJsonObject model = bad["model"].toObject();
    model["cache_type"] = "q4_0";
    bad["model"] = model;
    CHECK_FALSE(studio::SessionFile::fromJson(bad, QString(), studio::viewNames(), &error));
    INFO(error.toStdString());
    CHECK(error.contains("cache_type"));
    CHECK(error.contains("q4_0"));
    // Saved before cache types: f32.
    QJsonObject old = o;
    model = old["model"].toObject();
    model.remove("cache_type");
    old["model"] = model;
    const auto legacy = studio::SessionFile::fromJson(old, QString(), studio::viewNames(), &error);
    REQUIRE(legacy);
    CHECK(legacy->load.cache_type == "f32");
}

TEST_CASE("The weights choice native-q8 loads the model with 8-bit inputs and says so", "[gui]") {
    auto w = makeWindow();
    auto* combo = w->findChild<QComboBox*>("weightsCombo");
    REQUIRE(combo);
    const int i = combo->findData("native-q8");
    REQUIRE(i >= 0);
    combo->setCurrentIndex(i);
    CHECK(w->promptPanel()->loadOptions().weights == "native-q8");
    QSignalSpy loads(w->controller(), &studio::RunController::modelLoaded);
    REQUIRE(runAndWait(*w).what == "finished");
    CHECK(loads.count() == 1);
    CHECK(w->state()->model().weights == "native-q8");
    const auto* status = w->findChild<QLabel*>("modelStatusLabel");
    REQUIRE(status);
    INFO(status->text().toStdString());
    CHECK(status->text().contains("native-q8"));
}
