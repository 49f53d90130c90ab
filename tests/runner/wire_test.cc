// tests/runner/wire_test.cc — message codec round trips, framing, and
// rejection of garbage.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "crl/kernel.h"
#include "runner/protocol.h"
#include "runner/wire.h"

namespace crl::runner {
namespace {

uint64_t NextRandom(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

CallRequest SampleCall() {
  CallRequest m;
  m.call_id = 0x1122334455667788ull;
  m.inputs = {{"x", CRL_FLOAT32, {4, 3}}, {"idx", CRL_INT64, {}}};
  m.outputs = {{"y", CRL_BFLOAT16, {2, 1, 7}}};
  m.scalars = {1e-5, -0.0, std::numeric_limits<double>::infinity()};
  m.input_data = {std::string(48, '\x7f'), std::string("\0\1\2\3\4\5\6\7", 8)};
  m.return_inputs = true;
  return m;
}

TEST_CASE("every message round-trips", "[wire]") {
  std::string err;
  {
    LoadRequest m{"/tmp/lib.so", "cuda", 3, 256ull << 20, true, std::string("\x7f" "ELF\0\1", 6)}, d;
    REQUIRE(Decode(Encode(m), &d, &err));
    CHECK(d.library_path == m.library_path);
    CHECK(d.backend == m.backend);
    CHECK(d.device == 3);
    CHECK(d.l2_flush_bytes == m.l2_flush_bytes);
    CHECK(d.warm_only);
    CHECK(d.library_bytes == m.library_bytes);
  }
  {
    LoadResult m{true, "", "NVIDIA H100"}, d;
    REQUIRE(Decode(Encode(m), &d, &err));
    CHECK(d.ok);
    CHECK(d.device_name == "NVIDIA H100");
  }
  {
    CallRequest m = SampleCall(), d;
    REQUIRE(Decode(Encode(m), &d, &err));
    CHECK(d.call_id == m.call_id);
    REQUIRE(d.inputs.size() == 2);
    CHECK(d.inputs[0].name == "x");
    CHECK(d.inputs[0].shape == std::vector<int64_t>{4, 3});
    CHECK(d.inputs[1].shape.empty());
    CHECK(d.outputs[0].dtype == CRL_BFLOAT16);
    CHECK(std::signbit(d.scalars[1]));
    CHECK(std::isinf(d.scalars[2]));
    CHECK(d.input_data == m.input_data);
    CHECK(d.return_inputs);
  }
  {
    CallResult m, d;
    m.call_id = 9;
    m.status = kCandidateError;
    m.error = "crl_run returned 42";
    m.output_data = {std::string(1000, 'a')};
    m.input_data_after = {"", "z"};
    m.host_seconds = 0.125;
    m.threads_before = 1;
    m.threads_after = 3;
    REQUIRE(Decode(Encode(m), &d, &err));
    CHECK(d.status == kCandidateError);
    CHECK(d.error == m.error);
    CHECK(d.output_data == m.output_data);
    CHECK(d.input_data_after == m.input_data_after);
    CHECK(d.host_seconds == 0.125);
    CHECK(d.threads_after == 3);
  }
  {
    TimedCallRequest m, d;
    m.call_id = 5;
    m.inputs = {{"x", CRL_FLOAT16, {128}}};
    m.outputs = {{"y", CRL_FLOAT16, {128}}};
    m.seed = ~0ull;
    m.distributions = {"normal(0, 1)"};
    m.flush_l2 = false;
    m.return_outputs = true;
    REQUIRE(Decode(Encode(m), &d, &err));
    CHECK(d.seed == ~0ull);
    CHECK(d.distributions == m.distributions);
    CHECK_FALSE(d.flush_l2);
    CHECK(d.return_outputs);
  }
  {
    TimedCallResult m, d;
    m.call_id = 5;
    m.stream_event_seconds = 1e-6;
    m.device_sync_seconds = 2e-6;
    m.host_seconds = 3e-6;
    m.output_data = {"abc"};
    REQUIRE(Decode(Encode(m), &d, &err));
    CHECK(d.stream_event_seconds == 1e-6);
    CHECK(d.device_sync_seconds == 2e-6);
    CHECK(d.host_seconds == 3e-6);
    CHECK(d.output_data == m.output_data);
  }
  {
    Shutdown d;
    CHECK(Decode(Encode(Shutdown{}), &d, &err));
    CHECK_FALSE(Decode("x", &d, &err));
  }
}

TEST_CASE("truncated, padded and random payloads are rejected", "[wire]") {
  const std::string good = Encode(SampleCall());
  CallRequest d;
  std::string err;
  for (size_t n = 0; n < good.size(); ++n) {
    INFO("prefix " << n);
    CHECK_FALSE(Decode(std::string_view(good).substr(0, n), &d, &err));
  }
  CHECK_FALSE(Decode(good + "x", &d, &err));
  CHECK(err.find("trailing") != std::string::npos);

  // Absurd counts must fail fast, without allocating.
  WireWriter w;
  w.PutU64(1);
  w.PutU64(~0ull >> 1);  // inputs vector "count"
  CHECK_FALSE(Decode(w.data(), &d, &err));

  // A bool must be 0 or 1.
  LoadResult lr;
  std::string bad = Encode(LoadResult{true, "", ""});
  bad[0] = 2;
  CHECK_FALSE(Decode(bad, &lr, &err));

  // Random garbage never crashes and (practically) never decodes.
  uint64_t s = 0x9E3779B97F4A7C15ull;
  int decoded = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    std::string junk(NextRandom(&s) % 200, '\0');
    for (char& c : junk) c = static_cast<char>(NextRandom(&s));
    CallRequest c;
    TimedCallResult t;
    if (Decode(junk, &c, &err)) ++decoded;
    if (Decode(junk, &t, &err)) ++decoded;
  }
  CHECK(decoded == 0);
}

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int p[2];
    REQUIRE(pipe2(p, O_CLOEXEC) == 0);
    r = p[0];
    w = p[1];
  }
  ~Pipe() {
    if (r >= 0) close(r);
    if (w >= 0) close(w);
  }
  void CloseWrite() {
    close(w);
    w = -1;
  }
};

TEST_CASE("frames over a pipe", "[wire]") {
  std::string err;
  SECTION("round trip, including a payload larger than the pipe buffer") {
    Pipe p;
    CallRequest m = SampleCall();
    m.input_data[0] = std::string(3 << 20, 'q');
    m.inputs[0].shape = {static_cast<int64_t>(3 << 20) / 4};
    std::thread writer([&] {
      std::string e;
      CHECK(WriteMessage(p.w, m, &e));
      CHECK(WriteMessage(p.w, Shutdown{}, &e));
    });
    CallRequest d;
    REQUIRE(ReadMessage(p.r, &d, &err, 5));
    CHECK(d.input_data[0] == m.input_data[0]);
    Frame f;
    CHECK(ReadFrame(p.r, &f, &err, 5) == ReadStatus::kOk);
    CHECK(f.type == static_cast<uint32_t>(MessageType::kShutdown));
    writer.join();
    p.CloseWrite();
    CHECK(ReadFrame(p.r, &f, &err, 5) == ReadStatus::kEof);
  }
  SECTION("bad magic") {
    Pipe p;
    REQUIRE(write(p.w, "GARBAGE-GARBAGE-GARBAGE", 23) == 23);
    Frame f;
    CHECK(ReadFrame(p.r, &f, &err, 1) == ReadStatus::kError);
    CHECK(err.find("magic") != std::string::npos);
  }
  SECTION("oversized length is refused before reading the payload") {
    Pipe p;
    WireWriter w;
    w.PutU32(kFrameMagic);
    w.PutU32(static_cast<uint32_t>(MessageType::kCallResult));
    w.PutU64(~0ull);
    REQUIRE(write(p.w, w.data().data(), w.data().size()) == 16);
    Frame f;
    CHECK(ReadFrame(p.r, &f, &err, 1) == ReadStatus::kError);
    CHECK(err.find("exceeds") != std::string::npos);
    // A caller-chosen smaller limit works the same way.
    Pipe q;
    REQUIRE(WriteFrame(q.w, 4, std::string(100, 'x'), &err));
    CHECK(ReadFrame(q.r, &f, &err, 1, 99) == ReadStatus::kError);
    // More than 4 GiB is within the default limit (a large reference output):
    // this one fails only because its payload never comes.
    Pipe big;
    WireWriter h;
    h.PutU32(kFrameMagic);
    h.PutU32(static_cast<uint32_t>(MessageType::kCallResult));
    h.PutU64((uint64_t{4} << 30) + 498);
    REQUIRE(write(big.w, h.data().data(), h.data().size()) == 16);
    big.CloseWrite();
    err.clear();
    CHECK(ReadFrame(big.r, &f, &err, 1) == ReadStatus::kError);
    CHECK(err.find("exceeds") == std::string::npos);
  }
  SECTION("EOF inside a frame is an error, a silent peer a timeout") {
    Pipe p;
    WireWriter w;
    w.PutU32(kFrameMagic);
    w.PutU32(4);
    w.PutU64(1000);
    w.PutString("short");
    REQUIRE(write(p.w, w.data().data(), w.data().size()) > 0);
    Frame f;
    CHECK(ReadFrame(p.r, &f, &err, 0.2) == ReadStatus::kTimeout);
    p.CloseWrite();
    Pipe q;
    REQUIRE(write(q.w, w.data().data(), w.data().size()) > 0);
    q.CloseWrite();
    CHECK(ReadFrame(q.r, &f, &err, 1) == ReadStatus::kError);
  }
  SECTION("wrong message type") {
    Pipe p;
    REQUIRE(WriteMessage(p.w, Shutdown{}, &err));
    CallResult r;
    CHECK_FALSE(ReadMessage(p.r, &r, &err, 1));
    CHECK(err.find("expected CallResult") != std::string::npos);
  }
  SECTION("write timeout on a full non-blocking pipe") {
    Pipe p;
    fcntl(p.w, F_SETFL, O_NONBLOCK);
    std::string big(4 << 20, 'x');
    CHECK_FALSE(WriteFrame(p.w, 1, big, &err, 0.2));
    CHECK(err.find("timed out") != std::string::npos);
  }
}

TEST_CASE("spec helpers and poison", "[wire]") {
  int64_t n;
  uint64_t b;
  CHECK(SpecNumel({"x", CRL_FLOAT32, {}}, &n));
  CHECK(n == 1);
  CHECK(SpecBytes({"x", CRL_FLOAT64, {3, 0, 2}}, &b));
  CHECK(b == 0);
  CHECK_FALSE(SpecNumel({"x", CRL_FLOAT32, {-1}}, &n));
  CHECK_FALSE(SpecNumel({"x", CRL_FLOAT32, {1, 1, 1, 1, 1, 1, 1, 1, 1}}, &n));
  CHECK_FALSE(SpecBytes({"x", CRL_FLOAT32, {1ll << 40, 1ll << 40}}, &b));
  CHECK_FALSE(SpecBytes({"x", 99, {4}}, &b));

  unsigned char buf[12];
  PoisonHost(buf, CRL_FLOAT32, 12);
  uint32_t w;
  std::memcpy(&w, buf + 8, 4);
  CHECK(w == kPoisonFloat32);
  float f;
  std::memcpy(&f, buf, 4);
  CHECK(std::isnan(f));
  PoisonHost(buf, CRL_INT32, 12);
  for (unsigned char c : buf) CHECK(c == kPoisonByte);
}

}  // namespace
}  // namespace crl::runner
