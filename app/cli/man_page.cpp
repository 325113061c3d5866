// See man_page.h.
#include "app/cli/man_page.h"

#include <sstream>

namespace snapkv::cli {

namespace {

// Text as roff: backslashes escaped, hyphens as \- (man would otherwise hyphenate option names
// and print them with a typographic hyphen), a leading dot or quote neutralised.
std::string roff(const std::string& text) {
    std::string out;
    bool line_start = true;
    for (char c : text) {
        if (line_start && (c == '.' || c == '\'')) out += "\\&";
        if (c == '\\') out += "\\e";
        else if (c == '-') out += "\\-";
        else out += c;
        line_start = c == '\n';
    }
    return out;
}

// "-o, --out FILE" in bold/italic, as CLI11 names the option in --help.
std::string option_head(const CLI::Option& o) {
    std::string names = o.get_name(false, true);  // "-o,--out"
    std::string head;
    std::stringstream ss(names);
    for (std::string n; std::getline(ss, n, ',');) head += (head.empty() ? "" : ", ") + ("\\fB" + roff(n) + "\\fR");
    if (o.get_type_size() != 0 && !o.get_type_name().empty()) head += " \\fI" + roff(o.get_type_name()) + "\\fR";
    return head;
}

// A sentence: --help's descriptions have no final full stop; the man page appends more after them.
std::string sentence(std::string text) {
    if (!text.empty() && text.back() != '.' && text.back() != '?') text += '.';
    return text;
}

void write_options(const CLI::App& app, bool top_level, std::ostream& out) {
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_group().empty()) continue;  // hidden, as in --help
        // Every subcommand inherits -h/--help and --help-all; GLOBAL OPTIONS lists them once.
        if (!top_level && (o == app.get_help_ptr() || o == app.get_help_all_ptr())) continue;
        if (o->get_positional()) {
            out << ".TP\n\\fI" << roff(o->get_name(true)) << "\\fR\n";
        } else {
            out << ".TP\n" << option_head(*o) << "\n";
        }
        out << roff(sentence(o->get_description()));
        if (o->get_required()) out << " Required.";
        if (!o->get_default_str().empty()) out << " Default: " << roff(o->get_default_str()) << ".";
        out << "\n";
    }
}

}  // namespace

void write_man_page(const CLI::App& app, const std::string& version, std::ostream& out) {
    out << ".TH SNAPKV 1 \"\" \"snapkv " << roff(version) << "\" \"User Commands\"\n"
        << ".SH NAME\nsnapkv \\- SnapKV KV\\-cache compression from the command line\n"
        << ".SH SYNOPSIS\n.B snapkv\n\\fISUBCOMMAND\\fR [\\fIOPTIONS\\fR]\n.br\n"
        << ".B snapkv\n\\fISUBCOMMAND\\fR \\fB\\-\\-help\\fR\n"
        << ".SH DESCRIPTION\n"
        << roff(sentence(app.get_description())) << "\n.PP\n"
        << "The command\\-line twin of \\fBsnapkv\\-studio\\fR(1): every subcommand loads a model (a GGUF file or "
           "a Hugging Face folder) and prints text, or JSON with \\fB\\-\\-json\\fR.\n"
        << ".SH GLOBAL OPTIONS\n";
    write_options(app, true, out);
    out << ".SH SUBCOMMANDS\n";
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        out << ".TP\n\\fB" << roff(sub->get_name()) << "\\fR\n" << roff(sub->get_description()) << "\n";
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        out << ".SH \"SNAPKV " << roff(sub->get_name()) << "\"\n"
            << ".B snapkv " << roff(sub->get_name()) << "\n[\\fIOPTIONS\\fR]\n.PP\n"
            << roff(sentence(sub->get_description())) << "\n";
        write_options(*sub, false, out);
    }
    out << ".SH EXIT STATUS\n"
           "0 on success, 2 for a usage error (an unknown or malformed option, a value out of range, options "
           "that contradict each other), 130 after Ctrl\\-C, 1 for anything else.\n"
           ".SH ENVIRONMENT\n"
           ".TP\n\\fBSNAPKV_THREADS\\fR\nLibTorch and kernel threads (default: the number of cores).\n"
           ".TP\n\\fBSNAPKV_MEMORY_LIMIT\\fR\nCap of the memory a run may plan to use, e.g. 4G.\n"
           ".TP\n\\fBSNAPKV_DATASETS\\fR\nThe bundled data folder (needles, haystacks, question set); default: "
           "\\&./datasets, then the installed copy.\n"
           ".TP\n\\fBSNAPKV_CPU_PATH\\fR\nForce the weight kernels' path: scalar, avx2 or avx512.\n"
           ".SH FILES\n"
           ".TP\n\\fI/usr/share/snapkv\\-studio/datasets\\fR\nThe bundled sample document, question, needles, "
           "haystack essays and question set.\n"
           ".TP\n\\fI/usr/share/snapkv\\-studio/cluster\\fR\nSlurm scripts for sharded \\fBneedle\\fR and "
           "\\fBsweep\\fR runs (\\fBsubmit.sh \\-\\-help\\fR).\n"
           ".SH SEE ALSO\n\\fBsnapkv\\-studio\\fR(1), \\fBsnapkv\\-fetch\\-model\\fR(1)\n";
}

}  // namespace snapkv::cli
