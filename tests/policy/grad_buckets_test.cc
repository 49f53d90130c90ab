// Gradient buckets (services/trainer/grad_buckets.h) against a fake world
// of two ranks: gradients live in the buckets, the reductions are queued
// during the last backward and start in one fixed order, the sums are
// right, and a gradient accumulated after its bucket was queued is an
// error. The real collectives are checked end to end by process_test.cc
// (two Gloo ranks equal one process).
#include "tests/support/torch_catch.h"

#include "services/trainer/fake_distributed.h"
#include "services/trainer/grad_buckets.h"

namespace crl::trainer {
namespace {

using Params = std::vector<std::pair<std::string, torch::Tensor>>;

// a: 3 floats, b: 4, c: 5; 20-byte buckets hold one each, last first:
// bucket 0 = c, 1 = b, 2 = a.
Params ThreeParams() {
  return {{"a", torch::ones({3}).requires_grad_(true)},
          {"b", torch::ones({2, 2}).requires_grad_(true)},
          {"c", torch::ones({5}).requires_grad_(true)}};
}

torch::Tensor Loss(const Params& p, double scale, bool use_b = true) {
  torch::Tensor loss = (p[0].second * scale).sum() + (p[2].second * 3 * scale).sum();
  if (use_b) loss = loss + (p[1].second * 2 * scale).sum();
  return loss;
}

TEST_CASE("gradient buckets: views of the buckets, summed during the last backward, in order", "[trainer]") {
  Params p = ThreeParams();
  FakeDistributed world(2);
  REQUIRE(GradientBuckets::Supports(p));
  GradientBuckets buckets(p, &world, 20);
  CHECK(buckets.buckets() == 3);
  CHECK(buckets.Holds(p));
  CHECK_FALSE(buckets.Holds(ThreeParams()));

  {  // in one bucket, the three gradients share its storage
    Params q = ThreeParams();
    GradientBuckets one(q, &world, 1 << 20);
    CHECK(one.buckets() == 1);
    one.Zero();
    CHECK(q[0].second.grad().storage().data() == q[2].second.grad().storage().data());
    CHECK(q[1].second.grad().storage().data() == q[2].second.grad().storage().data());
  }
  for (int pass = 0; pass < 2; ++pass) {  // the second pass finds its views and zeroes them
    INFO("pass " << pass);
    world.started.clear();
    world.waited.clear();
    buckets.Zero();
    for (auto& [name, t] : p) CHECK(t.grad().defined());
    CHECK(p[0].second.grad().sum().item<double>() == 0);
    Loss(p, 1).backward();  // a micro-batch before the last: nothing is queued
    CHECK(buckets.started_early() == 0);
    buckets.Arm();
    Loss(p, 10).backward();
    // All three were queued during the backward (the sender thread starts
    // them), c's bucket first.
    CHECK(buckets.started_early() == 3);
    REQUIRE(buckets.Finish().ok());
    CHECK(world.started == std::vector<int64_t>{5, 4, 3});
    CHECK(world.waited == std::vector<bool>{true, true, true});
    // (1 + 10) per micro-batch's scale, summed over two equal ranks.
    CHECK(torch::allclose(p[0].second.grad(), torch::full({3}, 22.0)));
    CHECK(torch::allclose(p[1].second.grad(), torch::full({2, 2}, 44.0)));
    CHECK(torch::allclose(p[2].second.grad(), torch::full({5}, 66.0)));
  }
}

TEST_CASE("gradient buckets: a bucket the backward did not fill holds the later ones back", "[trainer]") {
  Params p = ThreeParams();
  FakeDistributed world(2);
  GradientBuckets buckets(p, &world, 20);
  buckets.Zero();
  buckets.Arm();
  Loss(p, 1, /*use_b=*/false).backward();
  // c's bucket was queued; b's never filled, so a's (ready) waits behind
  // it: every rank starts them in one order.
  CHECK(buckets.started_early() == 1);
  REQUIRE(buckets.Finish().ok());
  CHECK(world.started == std::vector<int64_t>{5, 4, 3});
  CHECK(p[1].second.grad().abs().sum().item<double>() == 0);
  CHECK(torch::allclose(p[0].second.grad(), torch::full({3}, 2.0)));

  // A rank with no micro-batch (no backward armed) still starts them all.
  world.started.clear();
  buckets.Zero();
  REQUIRE(buckets.Finish().ok());
  CHECK(world.started == std::vector<int64_t>{5, 4, 3});
}

// Accumulates its saved parameter's gradient in a backward of its own (as a
// reentrant checkpoint does), before the outer backward reaches it.
struct NestedUse : public torch::autograd::Function<NestedUse> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& param) {
    ctx->saved_data["param"] = param;
    return x.clone();
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    torch::Tensor param = ctx->saved_data["param"].toTensor();
    {
      torch::AutoGradMode on(true);
      torch::autograd::backward({(param * 3).sum()});
    }
    return {grads[0], torch::Tensor()};
  }
};

TEST_CASE("gradient buckets: a gradient accumulated after its bucket went out is an error", "[trainer]") {
  Params p = {{"w", torch::ones({4}).requires_grad_(true)}};
  FakeDistributed world(2);
  GradientBuckets buckets(p, &world, 1 << 20);
  buckets.Zero();
  buckets.Arm();
  torch::Tensor w = p[0].second;
  NestedUse::apply(w * 2, w).sum().backward();
  absl::Status s = buckets.Finish();
  CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(s.message()), Catch::Contains("gradient of w was accumulated twice"));
}

TEST_CASE("gradient buckets: only distinct float32 leaves on one device", "[trainer]") {
  torch::Tensor a = torch::ones({2}).requires_grad_(true);
  CHECK(GradientBuckets::Supports({{"a", a}}));
  CHECK_FALSE(GradientBuckets::Supports({}));
  CHECK_FALSE(GradientBuckets::Supports({{"a", a}, {"again", a}}));
  CHECK_FALSE(GradientBuckets::Supports({{"h", torch::ones({2}, torch::kBFloat16).requires_grad_(true)}}));
  CHECK_FALSE(GradientBuckets::Supports({{"a", a}, {"not a leaf", a * 2}}));
  CHECK_FALSE(GradientBuckets::Supports({{"frozen", torch::ones({2})}}));
}

}  // namespace
}  // namespace crl::trainer
