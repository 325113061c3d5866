// The command line: option definitions (--help, the man page), parsing and checking. The view
// names --view accepts and prints come from the view registry; the paths the app looks in from
// files/app_files.h.
#include "app/gui/app_options.h"

#include <QCommandLineParser>
#include <QFileInfo>

#include <limits>

#include "app/gui/panels/walkthrough.h"
#include "app/gui/state/gui_types.h"
#include "app/gui/state/param_state.h"
#include "app/gui/view_registry.h"
#include "core/common/path_checks.h"
#include "core/snapkv/snapkv_params.h"

namespace studio {

namespace {

// --name's value as a whole number in [min, max]; nullopt when not given or bad (then *error is
// set, unless an earlier option already set it).
std::optional<int> intOption(const QCommandLineParser& p, const QString& name, int min, int max, const QString& why,
                             QString* error) {
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
    if (error->isEmpty()) *error = QString("--%1 \"%2\" is not allowed; allowed: %3").arg(name, v, allowed.join(", "));
    return {};
}

}  // namespace

bool AppOptions::overridesSettings() const {
    return headless() || !session.isEmpty() || budget || window || kernel || decodeBudget || decodeInterval ||
           !pooling.isEmpty() || !policy.isEmpty() || !gqa.isEmpty() || !tieBreak.isEmpty() || !weights.isEmpty() ||
           maxTokensSet;
}

QString applicationDescription() {
    return "SnapKV Studio: see and tune SnapKV KV-cache compression.\n"
           "Headless: QT_QPA_PLATFORM=offscreen snapkv-studio --model M --document D --question Q --run "
           "--screenshot out.png --view compare\n"
           "Evaluate tab from a results file: snapkv-studio --results R.jsonl --view evaluate --screenshot out.png";
}

QList<QCommandLineOption> applicationOptions() {
    return {
        {"model", "Model: GGUF file or Hugging Face folder.", "path"},
        {"document", "Document to compress (text or markdown).", "path"},
        {"question", "Question: a text file, or the question itself.", "text|path"},
        {"session", "Open a saved session (.snapkv.json).", "path"},
        {"run", "Run right away (load, prefill, select)."},
        {"screenshot", "After the run, save a 1600x1000 screenshot of the window and exit.", "file.png"},
        {"view", QString("View to show: %1.").arg(viewNamesText()), "name"},
        {"results", "Show an evaluation results file (snapkv needle, sweep or ruler JSON Lines) in the Evaluate tab.",
         "path"},
        {"max-tokens", "Tokens to generate for the compare view (headless).", "n", "32"},
        {"budget", "Budget C: tokens kept per head.", "n"},
        {"window", "Observation window W.", "n"},
        {"kernel", "Pooling kernel K (odd).", "n"},
        {"decode-budget", "Compress while generating: tokens kept per head at each event (0: off).", "n"},
        {"decode-interval", "Generated tokens between decoding compression events.", "n"},
        {"pooling", "Pooling: max, avg or none.", "name"},
        {"policy", QString("Policy: %1.").arg(QString::fromStdString(snapkv::policy_list_text())), "name"},
        {"gqa",
         "Grouped-query attention: kv-head (default: one selection per KV head, the cache shrinks) or "
         "query-head (official SnapKV: one per query head).",
         "mode"},
        {"tie-break", "Which of equal scores top-k keeps: later (default, as torch.topk did) or earlier.", "order"},
        {"weights",
         "How the model's weights are held: native (the file's formats, default), native-q8 (the same, decode's "
         "products quantize their input to 8 bits as llama.cpp does: faster, results differ slightly) or f32.",
         "mode"},
        {"walkthrough",
         QString("Open the guided walkthrough at step N (1-%1) after the run.").arg(walkthroughSteps().size()), "n"},
        {"bench-retune", "Time N budget changes after the run and print the timings.", "n"},
        {"get-model", "Open Help > Get a Model (where to get a model; downloads the default one on request)."},
        {"system", "System message put before the question in the model's chat template.", "text"},
        {"show-prompt", "Open the prompt as the model sees it (the chat template's text, special tokens marked)."},
    };
}

QString fileArgumentHelp() { return "A model (GGUF file or Hugging Face folder) or a session (.snapkv.json) to open."; }

namespace {
// Text as roff: backslashes escaped, hyphens as \- (so man does not hyphenate options), a leading
// dot or quote neutralised.
QString roff(QString t) {
    t.replace('\\', "\\e");
    t.replace('-', "\\-");
    QStringList lines = t.split('\n');
    for (QString& l : lines)
        if (l.startsWith('.') || l.startsWith('\'')) l.prepend("\\&");
    return lines.join('\n');
}
}  // namespace

QString manPage(const QString& version) {
    QString m;
    m += QString(".TH SNAPKV\\-STUDIO 1 \"\" \"snapkv\\-studio %1\" \"User Commands\"\n").arg(version);
    m += ".SH NAME\nsnapkv\\-studio \\- see and tune SnapKV KV\\-cache compression (desktop app)\n";
    m += ".SH SYNOPSIS\n.B snapkv\\-studio\n[\\fIOPTIONS\\fR] [\\fIFILE\\fR]\n";
    m += ".SH DESCRIPTION\n";
    for (const QString& para : applicationDescription().split('\n')) m += roff(para) + "\n.PP\n";
    m += roff(QString("FILE: ") + fileArgumentHelp()) + "\n";
    m += ".SH OPTIONS\n";
    m += ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nShow the options and exit.\n";
    m += ".TP\n\\fB\\-v\\fR, \\fB\\-\\-version\\fR\nShow the version and exit.\n";
    // The same option list --help prints (applicationOptions()), so the two cannot drift apart.
    for (const QCommandLineOption& o : applicationOptions()) {
        if (o.flags() & QCommandLineOption::HiddenFromHelp) continue;
        QStringList names;
        for (const QString& n : o.names())
            names << QString("\\fB%1%2\\fR").arg(n.size() == 1 ? "\\-" : "\\-\\-", roff(n));
        m += ".TP\n" + names.join(", ");
        if (!o.valueName().isEmpty()) m += " \\fI" + roff(o.valueName()) + "\\fR";
        m += "\n" + roff(o.description());
        if (!o.defaultValues().isEmpty()) m += " Default: " + roff(o.defaultValues().join(",")) + ".";
        m += "\n";
    }
    m += ".SH ENVIRONMENT\n"
         ".TP\n\\fBSNAPKV_MODEL\\fR\nThe model to open when none is given.\n"
         ".TP\n\\fBSNAPKV_MODELS_DIR\\fR\nWhere Help > Get a Model and snapkv\\-fetch\\-model put the default model "
         "(default: ~/.local/share/snapkv\\-studio/models).\n"
         ".TP\n\\fBSNAPKV_DATASETS\\fR\nThe bundled data folder (default: the installed copy).\n"
         ".TP\n\\fBSNAPKV_THREADS\\fR\nLibTorch and kernel threads (default: the number of cores).\n"
         ".TP\n\\fBSNAPKV_MEMORY_LIMIT\\fR\nCap of the memory a run may plan to use, e.g. 4G.\n";
    m += ".SH SEE ALSO\n\\fBsnapkv\\fR(1), \\fBsnapkv\\-fetch\\-model\\fR(1)\n";
    return m;
}

AppOptions parseOptions(const QStringList& arguments) {
    QCommandLineParser p;
    p.setApplicationDescription(applicationDescription());
    p.addHelpOption();
    p.addVersionOption();
    p.addOptions(applicationOptions());
    p.addPositionalArgument("file", fileArgumentHelp(), "[file]");
    p.process(arguments);
    AppOptions o;
    o.model = p.value("model");
    o.document = p.value("document");
    o.question = p.value("question");
    o.session = p.value("session");
    o.results = p.value("results");
    o.getModel = p.isSet("get-model");
    o.system = p.value("system");
    o.showPrompt = p.isSet("show-prompt");
    // A screenshot of a results file needs no prefill unless --run asks for one.
    o.run = p.isSet("run") || (p.isSet("screenshot") && o.results.isEmpty()) || p.isSet("bench-retune");
    o.screenshot = p.value("screenshot");
    o.view = nameOption(p, "view", viewNames(), &o.error);
    if (auto v = intOption(p, "max-tokens", 1, kMaxNewTokens, " (tokens generated for the compare view)", &o.error))
        o.maxTokens = *v, o.maxTokensSet = true;
    const int wmax = static_cast<int>(appMaxWindow());
    o.budget = intOption(p, "budget", 2, std::numeric_limits<int>::max(), " (tokens kept per head, window included)",
                         &o.error);
    o.window = intOption(p, "window", 1, wmax,
                         QString(" (the app captures the queries of the last %1 prompt tokens)").arg(wmax), &o.error);
    o.kernel = intOption(p, "kernel", 1, 1023, " (an odd pooling kernel)", &o.error);
    o.decodeBudget = intOption(p, "decode-budget", 0, std::numeric_limits<int>::max(), " (0 turns it off)", &o.error);
    o.decodeInterval = intOption(p, "decode-interval", 1, std::numeric_limits<int>::max(), QString(), &o.error);
    if (auto v = intOption(p, "bench-retune", 1, 100000, QString(), &o.error)) o.benchRetune = *v;
    const int steps = static_cast<int>(walkthroughSteps().size());
    if (auto v = intOption(p, "walkthrough", 1, steps, " (the walkthrough's steps)", &o.error)) o.walkthroughStep = *v;
    o.pooling = nameOption(p, "pooling", poolingNames() + QStringList{"maxpool", "avgpool"}, &o.error);
    QStringList policySpellings;
    for (const auto& name : snapkv::policy_spellings()) policySpellings << QString::fromStdString(name);
    o.policy = nameOption(p, "policy", policySpellings, &o.error);
    o.gqa = nameOption(p, "gqa", {"query-head", "kv-head"}, &o.error);
    o.tieBreak = nameOption(p, "tie-break", {"later", "earlier"}, &o.error);
    o.weights = nameOption(p, "weights", {"native", "native-q8", "f32", "float32"}, &o.error);
    // The selection options given, over the defaults, through core's one parameter check. Only a
    // problem among the options given is reported here (the saved settings they land on are
    // checked again when applied): an even --kernel, a --budget not above the --window.
    if (o.error.isEmpty() && (o.budget || o.window || o.kernel)) {
        snapkv::SelectionParams probe = snapkv::default_params();
        if (o.budget) probe.budget = *o.budget;
        if (o.window) probe.window = *o.window;
        if (o.kernel) probe.kernel = *o.kernel;
        if (!o.policy.isEmpty()) probe.policy = snapkv::parse_policy(o.policy.toStdString());
        if (!o.pooling.isEmpty()) probe.pooling = snapkv::parse_pooling(o.pooling.toStdString());
        const auto option = [](const std::string& field) {
            return field == "window" || field == "kernel" || field == "budget" ? "--" + field : std::string();
        };
        const auto bad = snapkv::check_params(probe, {0, appMaxWindow()});
        const bool given = bad &&
                           ((bad->field == "kernel" && o.kernel) || (bad->field == "budget" && o.budget && o.window) ||
                            (bad->field == "window" && o.window));
        if (given) o.error = QString::fromStdString(option(bad->field) + " " + bad->sentence(option));
    }
    for (const char* name : {"model", "document", "session", "screenshot", "results"})
        if (p.isSet(name) && p.value(name).isEmpty() && o.error.isEmpty())
            o.error = QString("--%1 is empty; give a path").arg(name);
    if (!o.session.isEmpty() && (!o.model.isEmpty() || !o.document.isEmpty() || !o.question.isEmpty()) &&
        o.error.isEmpty())
        o.error =
            "--session already holds the model, the document and the question; give either --session or "
            "--model/--document/--question";
    // One file to open, as a file manager passes it (the .desktop entry's %f): a session or a model.
    const QStringList files = p.positionalArguments();
    if (files.size() > 1 && o.error.isEmpty())
        o.error = QString("unexpected argument \"%1\": give one file to open (see --help)").arg(files.at(1));
    if (files.size() == 1 && o.error.isEmpty()) {
        const QString f = files.first();
        const bool isSession = f.endsWith(".snapkv.json", Qt::CaseInsensitive);
        QString& slot = isSession ? o.session : o.model;
        if (f.isEmpty()) o.error = "the file to open is empty; give a path";
        else if (!slot.isEmpty())
            o.error =
                QString("\"%1\" and --%2 both name the %2 to open; give one").arg(f, isSession ? "session" : "model");
        else if (isSession && (!o.model.isEmpty() || !o.document.isEmpty() || !o.question.isEmpty()))
            o.error =
                "a session already holds the model, the document and the question; give either a session or "
                "--model/--document/--question";
        else slot = f;
    }
    // The screenshot never replaces a file the run reads (a symlink or hard link to it included).
    if (!o.screenshot.isEmpty() && o.error.isEmpty()) {
        const std::vector<snapkv::NamedPath> inputs = {
            {"the model (--model)", o.model.toStdString()},
            {"the document (--document)", o.document.toStdString()},
            {"the question file (--question)", QFileInfo(o.question).isFile() ? o.question.toStdString() : ""},
            {"the session (--session)", o.session.toStdString()},
            {"the results file (--results)", o.results.toStdString()}};
        const std::string shot = o.screenshot.toStdString();
        if (const auto hit = snapkv::clobbered_input(shot, inputs))
            o.error = "--screenshot: " + QString::fromStdString(snapkv::clobber_message(shot, *hit));
    }
    return o;
}

}  // namespace studio
