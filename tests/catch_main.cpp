// Catch2 v2 main for tests that do not use LibTorch.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
