// The Catch2 main of crl_runner_tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
