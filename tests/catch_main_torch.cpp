// Catch2 v2 main for LibTorch tests: the same runtime set-up as the apps (BLAS kernels for this
// CPU, intra-op threads = cores) so tests measure what users run.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "core/session/runtime.h"

int main(int argc, char** argv) {
    snapkv::init_runtime(argc, argv);
    return Catch::Session().run(argc, argv);
}
