// The timing loop's batching of short calls: how many calls a sample gets,
// that samples come back per call, and that the compared call is drawn from
// the whole batch.
#include "services/worker/measure/pair_loop.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <vector>

namespace crl {
namespace {

TEST_CASE("short calls are batched up to the sample length, the cap and 1 GiB held", "[pair_loop]") {
  CHECK(CallsPerSample(20e-6, 4096, 1e-3, 64) == 50);
  CHECK(CallsPerSample(1e-6, 4096, 1e-3, 64) == 64);             // the cap
  CHECK(CallsPerSample(1e-6, int64_t{256} << 20, 1e-3, 64) == 4);  // 1 GiB of inputs and outputs
  CHECK(CallsPerSample(2e-3, 4096, 1e-3, 64) == 1);              // long enough alone
  CHECK(CallsPerSample(20e-6, 0, 1e-3, 64) == 1);                // inputs unknown: one call
  CHECK(CallsPerSample(20e-6, 4096, -1, 64) == 1);               // batching off
  CHECK(CallsPerSample(0, 4096, 1e-3, 64) == 1);
}

TEST_CASE("a batched sample is timed as calls back to back and reported per call", "[pair_loop]") {
  FakeClock clock;
  v1::MeasurePairRequest request;
  request.set_min_pairs(10);
  request.set_max_pairs(10);
  request.set_check_outputs_every(2);
  const PairLoop loop(request, 7, 70, &clock);
  std::set<int> batch_sizes;
  int reported_bytes = 0;
  auto timed = [&](const PairLoop::Ask& ask, PairLoop::Timed* out) {
    const bool is_ref = ask.is_ref;
    const int calls = ask.calls;
    batch_sizes.insert(calls);
    const double per_call = is_ref ? 100e-6 : 50e-6;
    out->sample.set_device_sync_seconds(per_call * calls);
    out->sample.set_stream_event_seconds(per_call * calls);
    out->sample.set_host_seconds(per_call * calls);
    out->outside_seconds = (per_call + 5e-6) * calls;
    // The candidate's report is not the one that sizes batches.
    out->call_bytes = is_ref ? 4096 : (int64_t{1} << 40);
    out->graph = ask.graph;
    ++reported_bytes;
    return true;
  };
  std::set<int> checked_calls;
  std::set<uint64_t> sample_seeds;
  std::set<int64_t> sample_sizes;
  auto check = [&](int, int call, const OutputSample& sample) {
    checked_calls.insert(call);
    sample_seeds.insert(sample.seed);
    sample_sizes.insert(sample.max_elements);
    return std::string();
  };
  v1::MeasurePairResponse response;
  REQUIRE(loop.Run(timed, check, &response));
  // The defaults: samples of at least 10 ms.
  CHECK(response.calls_per_sample() == 100);
  CHECK(batch_sizes == std::set<int>{1, 100});  // warm-up single, then batches
  REQUIRE(response.reference_samples_size() == 10);
  CHECK(response.reference_samples(0).device_sync_seconds() == Approx(100e-6));
  CHECK(response.candidate_samples(3).device_sync_seconds() == Approx(50e-6));
  CHECK(response.reference_outside_seconds(0) == Approx(105e-6));
  CHECK(response.output_checks() == 5);
  for (int c : checked_calls) CHECK((c >= 0 && c < 100));
  CHECK(checked_calls.size() > 1);  // not always the same call of the batch
  // Each check samples its own positions, a million elements by default.
  CHECK(sample_seeds.size() == 5);
  CHECK(sample_sizes == std::set<int64_t>{int64_t{1} << 20});
}

TEST_CASE("one pair in every N is checked, chosen by the secret, not by the inputs' seed", "[pair_loop]") {
  // A side sees its inputs' seeds (and can invert them to the loop's seed),
  // so which pairs are checked must not follow from the seed: with one seed
  // and two secrets, each group of 5 pairs has one check, and the two
  // secrets check different pairs.
  FakeClock clock;
  v1::MeasurePairRequest request;
  request.set_min_pairs(40);
  request.set_max_pairs(40);
  request.set_check_outputs_every(5);
  auto checked_pairs = [&](uint64_t secret) {
    std::vector<int> checked;
    auto timed = [&](const PairLoop::Ask& ask, PairLoop::Timed* out) {
      out->sample.set_device_sync_seconds(1e-3 * ask.calls);
      out->graph = ask.graph;
      return true;
    };
    v1::MeasurePairResponse response;
    REQUIRE(PairLoop(request, 21, secret, &clock).Run(timed, [&](int p, int, const OutputSample&) {
      checked.push_back(p);
      return std::string();
    }, &response));
    return checked;
  };
  const std::vector<int> a = checked_pairs(1), b = checked_pairs(2);
  REQUIRE(a.size() == 8);
  REQUIRE(b.size() == 8);
  for (size_t g = 0; g < a.size(); ++g) {
    CHECK(a[g] / 5 == static_cast<int>(g));
    CHECK(b[g] / 5 == static_cast<int>(g));
  }
  CHECK(a != b);
  std::set<int> offsets;
  for (int p : a) offsets.insert(p % 5);
  CHECK(offsets.size() > 1);  // not always the same place in the group
}

TEST_CASE("the elements a check compares follow the request; negative is refused", "[pair_loop]") {
  FakeClock clock;
  v1::MeasurePairRequest request;
  request.set_candidate_artifact_id("x");
  request.set_min_pairs(4);
  request.set_max_pairs(4);
  request.set_check_outputs_every(1);
  request.set_checked_elements(1000);
  auto timed = [&](const PairLoop::Ask& ask, PairLoop::Timed* out) {
    out->sample.set_device_sync_seconds(1e-3 * ask.calls);
    out->graph = ask.graph;
    return true;
  };
  std::vector<OutputSample> samples;
  v1::MeasurePairResponse response;
  REQUIRE(PairLoop(request, 11, 110, &clock).Run(timed, [&](int, int, const OutputSample& s) {
    samples.push_back(s);
    return std::string();
  }, &response));
  REQUIRE(samples.size() == 4);
  for (const auto& s : samples) CHECK(s.max_elements == 1000);
  CHECK(ValidatePairRequest(request).ok());
  request.set_checked_elements(-1);
  CHECK(ValidatePairRequest(request).code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("batches are sized from the fastest later warm-up call; the host's samples are shorter", "[pair_loop]") {
  FakeClock clock;
  v1::MeasurePairRequest request;
  request.set_min_pairs(5);
  request.set_max_pairs(5);
  // Five single-call warm-ups of the reference, still warming: the later
  // half's fastest (100 us) sizes the batch, not its median (200 us).
  const std::vector<double> warm = {5e-3, 1e-3, 300e-6, 200e-6, 100e-6};
  for (bool gpu : {true, false}) {
    const PairLoop loop(request, 5, 50, &clock, gpu);
    int ref_calls = 0;
    auto timed = [&](const PairLoop::Ask& ask, PairLoop::Timed* out) {
      const bool is_ref = ask.is_ref;
      const int calls = ask.calls;
      const double per_call = is_ref && ref_calls < 5 ? warm[ref_calls] : 100e-6;
      if (is_ref) ++ref_calls;
      out->sample.set_device_sync_seconds(per_call * calls);
      out->call_bytes = 64;
      out->graph = ask.graph;
      return true;
    };
    v1::MeasurePairResponse response;
    REQUIRE(loop.Run(timed, [](int, int, const OutputSample&) { return std::string(); }, &response));
    CHECK(response.calls_per_sample() == (gpu ? 100 : 50));  // 10 ms, or 5 ms on the host
  }
}

TEST_CASE("a batch sizes batches again: a sample's round trip is shared by its calls", "[pair_loop]") {
  // Every sample costs a 1 ms round trip besides its calls (100 us each on
  // both sides): one call alone looks like 1.1 ms and would size 5-call
  // batches of 1.5 ms. The batches size again, only ever larger, at most
  // twice: 5 -> 17 -> 32 calls.
  FakeClock clock;
  v1::MeasurePairRequest request;
  request.set_min_pairs(5);
  request.set_max_pairs(5);
  for (double round_trip : {1e-3, 0.0}) {
    std::vector<int> sizes;
    auto timed = [&](const PairLoop::Ask& ask, PairLoop::Timed* out) {
      if (ask.is_ref) sizes.push_back(ask.calls);
      out->sample.set_device_sync_seconds(round_trip + 100e-6 * ask.calls);
      out->call_bytes = 64;
      return true;
    };
    v1::MeasurePairResponse response;
    REQUIRE(PairLoop(request, 5, 50, &clock, /*gpu=*/false)
                .Run(timed, [](int, int, const OutputSample&) { return std::string(); }, &response));
    if (round_trip > 0) {
      CHECK(response.calls_per_sample() == 32);
      // Warm-up singles, then two pairs at each size (the first of a size
      // still grows the heap), then the loop's pairs.
      const std::vector<int> probes(sizes.begin() + 5, sizes.begin() + 11);
      CHECK(probes == std::vector<int>{5, 5, 17, 17, 32, 32});
    } else {
      CHECK(response.calls_per_sample() == 50);  // sized right the first time: no more probes
      CHECK(std::count(sizes.begin(), sizes.end(), 50) == 2 + 5);
    }
    CHECK(response.reference_samples(0).device_sync_seconds() ==
          Approx((round_trip + 100e-6 * response.calls_per_sample()) / response.calls_per_sample()));
  }
}

TEST_CASE("a mismatch in a batch names the call", "[pair_loop]") {
  FakeClock clock;
  v1::MeasurePairRequest request;
  request.set_min_pairs(5);
  request.set_max_pairs(5);
  request.set_check_outputs_every(1);
  const PairLoop loop(request, 3, 30, &clock);
  auto timed = [&](const PairLoop::Ask& ask, PairLoop::Timed* out) {
    out->sample.set_device_sync_seconds(10e-6 * ask.calls);
    out->call_bytes = 64;
    out->graph = ask.graph;
    return true;
  };
  v1::MeasurePairResponse response;
  REQUIRE(loop.Run(timed, [](int, int, const OutputSample&) { return std::string("output0 differs"); }, &response));
  CHECK(response.output_mismatches() == 5);
  CHECK_THAT(response.output_mismatch_detail(), Catch::StartsWith("pair 0, call "));
  CHECK_THAT(response.output_mismatch_detail(), Catch::Contains(" of 256: output0 differs"));
}

// A side that replays graphs when asked, unless it "cannot capture"; records
// what each sample asked for.
struct GraphSide {
  bool can_capture = true;
  std::vector<PairLoop::Ask> asks;
};

TEST_CASE("graphs are captured at the warm-up pairs of the sample's size and replayed only when both sides could",
          "[pair_loop]") {
  v1::MeasurePairRequest request;
  request.set_min_pairs(5);
  request.set_max_pairs(5);
  struct Case {
    bool gpu, eager, ref_captures, cand_captures;
    const char* mode;
    const char* fallback;
  };
  const Case cases[] = {
      {true, false, true, true, "graph", ""},
      // A side that cannot be captured ends the loop after the warm-up:
      // the caller measures again with fresh sides, as launched.
      {true, false, true, false, "", "candidate: capture failed: sync"},
      {true, false, false, true, "", "reference: capture failed: sync"},
      {true, true, true, true, "eager", ""},   // eager_timing asked for
      {false, false, true, true, "eager", ""},  // the host has no graphs
  };
  for (const Case& c : cases) {
    CAPTURE(c.gpu, c.eager, c.ref_captures, c.cand_captures);
    FakeClock clock;
    request.set_eager_timing(c.eager);
    const PairLoop loop(request, 9, 90, &clock, c.gpu);
    GraphSide sides[2];
    sides[0].can_capture = c.ref_captures;
    sides[1].can_capture = c.cand_captures;
    auto timed = [&](const PairLoop::Ask& ask, PairLoop::Timed* out) {
      GraphSide& side = sides[ask.is_ref ? 0 : 1];
      side.asks.push_back(ask);
      out->sample.set_device_sync_seconds(1e-3 * ask.calls);
      out->call_bytes = 64;
      out->graph = ask.graph && side.can_capture;
      if (ask.graph && !side.can_capture) out->graph_error = "capture failed: sync";
      return true;
    };
    v1::MeasurePairResponse response;
    REQUIRE(loop.Run(timed, [](int, int, const OutputSample&) { return std::string(); }, &response));
    CHECK(response.timing_mode() == c.mode);
    CHECK(response.reference_samples_size() == (std::string(c.mode).empty() ? 0 : 5));
    CHECK(response.graph_fallback() == c.fallback);
    for (const GraphSide& side : sides) {
      // Five single-call warm-ups as launched, then two pairs at the
      // sample's size (on a GPU 10 calls of 1 ms, asking for graphs unless
      // eager timing was asked for; on the host 5), then the loop. A failed
      // capture ends the warm-up at once: no side is asked to capture again.
      const bool fell_back = std::string(c.mode).empty();
      const size_t probe = fell_back ? 1 : 2;
      const size_t looped = fell_back ? 0 : 5;
      REQUIRE(side.asks.size() == 5 + probe + looped);
      for (int i = 0; i < 5; ++i) CHECK_FALSE(side.asks[i].graph);
      for (size_t i = 5; i < 5 + probe; ++i) {
        CHECK(side.asks[i].graph == (c.gpu && !c.eager));
        CHECK(side.asks[i].calls == (c.gpu ? 10 : 5));
      }
      for (size_t i = 5 + probe; i < side.asks.size(); ++i) {
        CHECK(side.asks[i].graph == (std::string(c.mode) == "graph"));
      }
    }
  }
}

TEST_CASE("a side that stops replaying its graph ends the measurement", "[pair_loop]") {
  FakeClock clock;
  v1::MeasurePairRequest request;
  request.set_min_pairs(5);
  request.set_max_pairs(5);
  const PairLoop loop(request, 9, 90, &clock, /*gpu=*/true);
  int candidate_replays = 0;
  auto timed = [&](const PairLoop::Ask& ask, PairLoop::Timed* out) {
    out->sample.set_device_sync_seconds(1e-3 * ask.calls);
    out->call_bytes = 64;
    out->graph = ask.graph;
    // The candidate's third replay comes back as launched.
    if (ask.graph && !ask.is_ref && ++candidate_replays == 3) out->graph = false;
    return true;
  };
  v1::MeasurePairResponse response;
  CHECK_FALSE(loop.Run(timed, [](int, int, const OutputSample&) { return std::string(); }, &response));
  CHECK(response.verdict() == v1::VERDICT_SANDBOX_VIOLATION);
  REQUIRE(response.messages_size() == 1);
  CHECK_THAT(response.messages(0), Catch::Contains("candidate: stopped replaying its CUDA graph"));
}

}  // namespace
}  // namespace crl
