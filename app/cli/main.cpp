// `snapkv`: the command-line twin of SnapKV Studio. Every subcommand is a thin layer over
// core/session (the GUI's API): parse options, call the session, print text or JSON.
// Errors go to stderr with exit code 1; usage errors (options CLI11 refuses, or that contradict
// each other) exit 2 whatever CLI11's own code for the kind; Ctrl-C exits 130.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/man_page.h"
#include "core/common/errors.h"
#include "core/session/runtime.h"

#ifndef SNAPKV_VERSION
#define SNAPKV_VERSION "0.0.0"
#endif

namespace {

std::atomic<bool> g_cancel{false};

void on_sigint(int) { g_cancel.store(true); }

}  // namespace

int main(int argc, char** argv) {
    // chat-template renders text and runs no tensor code: it skips the runtime set-up, whose
    // re-exec (to set OpenBLAS's and OpenMP's environment) loads LibTorch a second time.
    if (argc < 2 || std::string(argv[1]) != "chat-template") snapkv::init_runtime(argc, argv);
    std::signal(SIGINT, on_sigint);
    CLI::App app{"snapkv: SnapKV KV-cache compression, from the command line"};
    app.require_subcommand(1);
    app.set_help_all_flag("--help-all", "Show help for every subcommand");
    app.set_version_flag("--version", "snapkv " SNAPKV_VERSION);
    snapkv::cli::register_commands(app, &g_cancel);
    // Hidden: the build writes snapkv(1) from these same definitions.
    if (argc == 2 && std::string(argv[1]) == "--man-page") {
        snapkv::cli::write_man_page(app, SNAPKV_VERSION, std::cout);
        return 0;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);  // prints help, or the error with a hint
        return code == 0 ? 0 : 2;      // CLI11 uses 100+ per kind of parse error
    } catch (const snapkv::Cancelled&) {
        std::cerr << "snapkv: cancelled\n";
        return 130;
    } catch (const snapkv::Error& e) {
        std::cerr << "snapkv: error: " << e.what() << "\n";
        return 1;
    } catch (const std::bad_alloc&) {
        std::cerr << "snapkv: error: out of memory\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "snapkv: error: " << snapkv::describe_exception(e) << "\n";
        return 1;
    }
    return 0;
}
