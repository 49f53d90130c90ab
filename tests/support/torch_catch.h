// Catch2 for tests that include LibTorch. LibTorch's glog defines CHECK as
// an aborting assertion, which silently replaces Catch's CHECK when the
// headers come in the other order (a failed check would abort instead of
// being reported). Include this first instead of catch2/catch.hpp.
#ifndef CRL_TESTS_SUPPORT_TORCH_CATCH_H_
#define CRL_TESTS_SUPPORT_TORCH_CATCH_H_

#include <torch/torch.h>
#undef CHECK
#include <catch2/catch.hpp>

#endif  // CRL_TESTS_SUPPORT_TORCH_CATCH_H_
