// Command line and default paths.
#include "app/gui/app_options.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <limits>

#include "app/gui/gui_types.h"
#include "app/gui/param_state.h"
#include "app/gui/walkthrough.h"

#ifndef SNAPKV_SOURCE_DIR
#define SNAPKV_SOURCE_DIR ""
#endif

namespace studio {

namespace {

QStringList searchRoots() {
    QStringList roots;
    roots << QDir::currentPath();
    const QString exe = QCoreApplication::applicationDirPath();
    if (!exe.isEmpty()) roots << exe << exe + "/.." << exe + "/../.." << exe + "/../../..";
    if (QString(SNAPKV_SOURCE_DIR).size()) roots << QString(SNAPKV_SOURCE_DIR);
    return roots;
}

// --name's value as a whole number in [min, max]; nullopt when not given or bad (then *error is
// set, unless an earlier option already set it).
std::optional<int> intOption(const QCommandLineParser& p, const QString& name, int min, int max,
                             const QString& why, QString* error) {
    if (!p.isSet(name)) return std::nullopt;
    bool ok = false;
    const int v = p.value(name).trimmed().toInt(&ok);
    QString problem;
    if (!ok) problem = QString("--%1 expects a whole number, got \"%2\"").arg(name, p.value(name));
    else if (v < min || v > max)
        problem = QString("--%1 %2 is out of range; allowed %3..%4%5").arg(name).arg(v).arg(min).arg(max).arg(why);
    if (problem.isEmpty()) return v;
    if (error->isEmpty()) *error = problem;
    return std::nullopt;
}

// --name's value, one of `allowed`; empty when not given or bad (then *error is set).
QString nameOption(const QCommandLineParser& p, const QString& name, const QStringList& allowed, QString* error) {
    if (!p.isSet(name)) return {};
    const QString v = p.value(name);
    if (allowed.contains(v)) return v;
    if (error->isEmpty())
        *error = QString("--%1 \"%2\" is not allowed; allowed: %3").arg(name, v, allowed.join(", "));
    return {};
}

}  // namespace

QString defaultModelFileName() { return "SmolLM2-135M-Instruct.Q4_1.gguf"; }

QString defaultModelPath() {
    const QString env = qEnvironmentVariable("SNAPKV_MODEL");
    if (!env.isEmpty() && QFileInfo::exists(env)) return QFileInfo(env).absoluteFilePath();
    for (const QString& root : searchRoots()) {
        const QString p = QDir(root).filePath("models/" + defaultModelFileName());
        if (QFileInfo::exists(p)) return QFileInfo(p).canonicalFilePath();
    }
    return {};
}

QStringList modelFolders() {
    QStringList folders;
    for (const QString& root : searchRoots()) {
        const QFileInfo fi(QDir(root).filePath("models"));
        if (fi.isDir() && !folders.contains(fi.canonicalFilePath())) folders << fi.canonicalFilePath();
    }
    return folders;
}

QString findDatasetFile(const QString& name) {
    for (const QString& root : searchRoots()) {
        const QString p = QDir(root).filePath("datasets/" + name);
        if (QFileInfo::exists(p)) return QFileInfo(p).canonicalFilePath();
    }
    return {};
}

std::optional<QString> readTextFile(const QString& path, QString* error) {
    const QFileInfo fi(path);
    if (!fi.exists()) {
        *error = QString("cannot open %1: no such file").arg(path);
        return std::nullopt;
    }
    if (fi.isDir()) {
        *error = QString("cannot open %1: it is a folder, not a text file").arg(path);
        return std::nullopt;
    }
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QString("cannot open %1: %2").arg(path, f.errorString());
        return std::nullopt;
    }
    const QByteArray bytes = f.readAll();
    if (f.error() != QFileDevice::NoError) {
        *error = QString("cannot read %1: %2").arg(path, f.errorString());
        return std::nullopt;
    }
    if (bytes.contains('\0')) {
        *error = QString("%1 looks like a binary file (it contains NUL bytes), not text").arg(path);
        return std::nullopt;
    }
    return QString::fromUtf8(bytes);
}

bool AppOptions::overridesSettings() const {
    return headless() || !session.isEmpty() || budget || window || kernel || !pooling.isEmpty() ||
           !policy.isEmpty() || !gqa.isEmpty() || !tieBreak.isEmpty() || maxTokensSet;
}

AppOptions parseOptions(const QStringList& arguments) {
    QCommandLineParser p;
    p.setApplicationDescription(
        "SnapKV Studio: see and tune SnapKV KV-cache compression.\n"
        "Headless: QT_QPA_PLATFORM=offscreen snapkv-studio --model M --document D --question Q --run "
        "--screenshot out.png --view compare\n"
        "Evaluate tab from a results file: snapkv-studio --results R.jsonl --view evaluate --screenshot out.png");
    p.addHelpOption();
    p.addVersionOption();
    p.addOptions({
        {"model", "Model: GGUF file or Hugging Face folder.", "path"},
        {"document", "Document to compress (text or markdown).", "path"},
        {"question", "Question: a text file, or the question itself.", "text|path"},
        {"session", "Open a saved session (.snapkv.json).", "path"},
        {"run", "Run right away (load, prefill, select)."},
        {"screenshot", "After the run, save a 1600x1000 screenshot of the window and exit.", "file.png"},
        {"view", "View to show: overview, head, document, compare or evaluate.", "name"},
        {"results", "Show an evaluation results file (snapkv needle/sweep JSON Lines) in the Evaluate tab.", "path"},
        {"max-tokens", "Tokens to generate for the compare view (headless).", "n", "32"},
        {"budget", "Budget C: tokens kept per head.", "n"},
        {"window", "Observation window W.", "n"},
        {"kernel", "Pooling kernel K (odd).", "n"},
        {"pooling", "Pooling: max, avg or none.", "name"},
        {"policy", "Policy: snapkv, streaming, h2o, random, pyramid, adakv.", "name"},
        {"gqa", "Grouped-query attention: kv-head (default: one selection per KV head, the cache shrinks) or "
                "query-head (official SnapKV: one per query head).", "mode"},
        {"tie-break", "Which of equal scores top-k keeps: later (default, as torch.topk did) or earlier.", "order"},
        {"walkthrough", QString("Open the guided walkthrough at step N (1-%1) after the run.")
                            .arg(walkthroughSteps().size()), "n"},
        {"bench-retune", "Time N budget changes after the run and print the timings.", "n"},
    });
    p.process(arguments);
    AppOptions o;
    o.model = p.value("model");
    o.document = p.value("document");
    o.question = p.value("question");
    o.session = p.value("session");
    o.results = p.value("results");
    // A screenshot of a results file needs no prefill unless --run asks for one.
    o.run = p.isSet("run") || (p.isSet("screenshot") && o.results.isEmpty()) || p.isSet("bench-retune");
    o.screenshot = p.value("screenshot");
    o.view = nameOption(p, "view", {"overview", "head", "document", "compare", "evaluate"}, &o.error);
    if (auto v = intOption(p, "max-tokens", 1, kMaxNewTokens, " (tokens generated for the compare view)", &o.error))
        o.maxTokens = *v, o.maxTokensSet = true;
    const int wmax = static_cast<int>(appMaxWindow());
    o.budget = intOption(p, "budget", 2, std::numeric_limits<int>::max(), " (tokens kept per head, window included)",
                         &o.error);
    o.window = intOption(p, "window", 1, wmax,
                         QString(" (the app captures the queries of the last %1 prompt tokens)").arg(wmax), &o.error);
    o.kernel = intOption(p, "kernel", 1, 1023, " (an odd pooling kernel)", &o.error);
    if (o.kernel && *o.kernel % 2 == 0 && o.error.isEmpty())
        o.error = QString("--kernel %1 is even; the pooling kernel must be odd").arg(*o.kernel);
    if (auto v = intOption(p, "bench-retune", 1, 100000, QString(), &o.error)) o.benchRetune = *v;
    const int steps = static_cast<int>(walkthroughSteps().size());
    if (auto v = intOption(p, "walkthrough", 1, steps, " (the walkthrough's steps)", &o.error)) o.walkthroughStep = *v;
    o.pooling = nameOption(p, "pooling", poolingNames() + QStringList{"maxpool", "avgpool"}, &o.error);
    o.policy = nameOption(p, "policy", policyNames() + QStringList{"streamingllm", "pyramidkv"}, &o.error);
    o.gqa = nameOption(p, "gqa", {"query-head", "kv-head"}, &o.error);
    o.tieBreak = nameOption(p, "tie-break", {"later", "earlier"}, &o.error);
    if (o.budget && o.window && *o.budget <= *o.window && o.error.isEmpty())
        o.error = QString("--budget %1 must be larger than --window %2 (the budget counts the window)")
                      .arg(*o.budget)
                      .arg(*o.window);
    for (const char* name : {"model", "document", "session", "screenshot", "results"})
        if (p.isSet(name) && p.value(name).isEmpty() && o.error.isEmpty())
            o.error = QString("--%1 is empty; give a path").arg(name);
    if (!o.session.isEmpty() && (!o.model.isEmpty() || !o.document.isEmpty() || !o.question.isEmpty()) &&
        o.error.isEmpty())
        o.error = "--session already holds the model, the document and the question; give either --session or "
                  "--model/--document/--question";
    if (!p.positionalArguments().isEmpty() && o.error.isEmpty())
        o.error = QString("unexpected argument \"%1\" (see --help)").arg(p.positionalArguments().first());
    return o;
}

}  // namespace studio
