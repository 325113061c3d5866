// Command line and default paths.
#include "app/gui/app_options.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

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

std::optional<int> intOption(const QCommandLineParser& p, const QString& name, QString* error) {
    if (!p.isSet(name)) return std::nullopt;
    bool ok = false;
    const int v = p.value(name).toInt(&ok);
    if (!ok) {
        *error = QString("--%1 expects a whole number, got \"%2\"").arg(name, p.value(name));
        return std::nullopt;
    }
    return v;
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

QString findDatasetFile(const QString& name) {
    for (const QString& root : searchRoots()) {
        const QString p = QDir(root).filePath("datasets/" + name);
        if (QFileInfo::exists(p)) return QFileInfo(p).canonicalFilePath();
    }
    return {};
}

std::optional<QString> readTextFile(const QString& path, QString* error) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QString("cannot open %1: %2").arg(path, f.errorString());
        return std::nullopt;
    }
    const QByteArray bytes = f.readAll();
    if (bytes.contains('\0')) {
        *error = QString("%1 looks like a binary file, not text").arg(path);
        return std::nullopt;
    }
    return QString::fromUtf8(bytes);
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
        {"walkthrough", "Open the guided walkthrough at step N (1-8) after the run.", "n"},
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
    o.view = p.value("view");
    if (!o.view.isEmpty() && !QStringList{"overview", "head", "document", "compare", "evaluate"}.contains(o.view))
        o.error = QString("--view must be overview, head, document, compare or evaluate, got \"%1\"").arg(o.view);
    if (auto v = intOption(p, "max-tokens", &o.error)) o.maxTokens = *v;
    o.budget = intOption(p, "budget", &o.error);
    o.window = intOption(p, "window", &o.error);
    o.kernel = intOption(p, "kernel", &o.error);
    if (auto v = intOption(p, "bench-retune", &o.error)) o.benchRetune = *v;
    if (auto v = intOption(p, "walkthrough", &o.error)) o.walkthroughStep = *v;
    o.pooling = p.value("pooling");
    o.policy = p.value("policy");
    if (!p.positionalArguments().isEmpty())
        o.error = QString("unexpected argument \"%1\" (see --help)").arg(p.positionalArguments().first());
    return o;
}

}  // namespace studio
