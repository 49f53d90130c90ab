// tests/runner/inputs_test.cc — the deterministic generator and dtype
// helpers (fp16/bf16 conversions checked exhaustively).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>

#include "crl/kernel.h"
#include "runner/dtype.h"
#include "runner/inputs.h"

namespace crl::runner {
namespace {

template <typename T>
T At(const std::string& bytes, size_t i) {
  T v;
  std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
  return v;
}

Distribution Parse(const std::string& s) {
  Distribution d;
  std::string err;
  INFO(s);
  REQUIRE(ParseDistribution(s, &d, &err));
  return d;
}

TEST_CASE("splitmix64 matches the reference stream", "[inputs]") {
  // Values computed with an independent implementation (Python).
  uint64_t s = 0;
  CHECK(SplitMix64(&s) == 0xE220A8397B1DCDAFull);
  CHECK(SplitMix64(&s) == 0x6E789E6AA1B965F4ull);
  CHECK(SplitMix64(&s) == 0x06C45D188009454Full);
  CHECK(DeriveSeed(42, 0) == 0xBDD732262FEB6E95ull);
  CHECK(DeriveSeed(42, 1) == 0x28EFE333B266F103ull);
}

TEST_CASE("known generated values", "[inputs]") {
  std::string u = Generate(Parse("uniform(-1, 1)"), CRL_FLOAT32, 4, 12345);
  REQUIRE(u.size() == 16);
  CHECK(FloatBits(At<float>(u, 0)) == 0xBF3BDCFBu);
  CHECK(FloatBits(At<float>(u, 1)) == 0xBF172246u);
  CHECK(FloatBits(At<float>(u, 2)) == 0xBF42CB51u);
  CHECK(FloatBits(At<float>(u, 3)) == 0xBF25D3E3u);

  std::string r = Generate(Parse("randint(0, 9)"), CRL_INT32, 8, 7);
  const int32_t want[] = {3, 0, 9, 5, 4, 2, 4, 3};
  for (int i = 0; i < 8; ++i) CHECK(At<int32_t>(r, i) == want[i]);

  // Box-Muller with our own log/sin/cos agrees with libm to ~1e-15.
  std::string n = Generate(Parse("normal(0, 1)"), CRL_FLOAT64, 4, 99);
  const double wn[] = {0.7633314164679424, 0.15387016353412888, 1.5187363213683973,
                       1.13760682358476};
  for (int i = 0; i < 4; ++i) CHECK(std::fabs(At<double>(n, i) - wn[i]) < 1e-14);
}

TEST_CASE("generation is deterministic and seed-dependent", "[inputs]") {
  for (const char* text : {"uniform(0, 1)", "normal(3, 0.5)", "sparse(0.1, -2, 2)", "constant(1.5)"}) {
    Distribution d = Parse(text);
    for (int32_t dtype : {CRL_FLOAT32, CRL_FLOAT64, CRL_FLOAT16, CRL_BFLOAT16}) {
      std::string a = Generate(d, dtype, 1001, 5);
      CHECK(a == Generate(d, dtype, 1001, 5));
      CHECK(a.size() == 1001 * DtypeSize(dtype));
      if (d.kind != Distribution::kConstant) CHECK(a != Generate(d, dtype, 1001, 6));
    }
  }
}

TEST_CASE("distribution semantics", "[inputs]") {
  const int64_t n = 200000;
  SECTION("uniform real in [a, b)") {
    std::string x = Generate(Parse("uniform(2, 3)"), CRL_FLOAT64, n, 1);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      double v = At<double>(x, i);
      REQUIRE(v >= 2);
      REQUIRE(v < 3);
      sum += v;
    }
    CHECK(std::fabs(sum / n - 2.5) < 0.01);
  }
  SECTION("normal mean and deviation") {
    std::string x = Generate(Parse("normal(1, 4)"), CRL_FLOAT32, n, 2);
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      double v = At<float>(x, i);
      s += v;
      s2 += v * v;
    }
    double mean = s / n;
    double sd = std::sqrt(s2 / n - mean * mean);
    CHECK(std::fabs(mean - 1) < 0.05);
    CHECK(std::fabs(sd - 4) < 0.05);
  }
  SECTION("integer uniform is inclusive, randint covers its range") {
    std::string x = Generate(Parse("uniform(-2, 2)"), CRL_INT8, n, 3);
    int counts[5] = {0};
    for (int64_t i = 0; i < n; ++i) {
      int v = At<int8_t>(x, i);
      REQUIRE(v >= -2);
      REQUIRE(v <= 2);
      ++counts[v + 2];
    }
    for (int c : counts) CHECK(c > n / 5 - 2000);
    std::string b = Generate(Parse("randint(0, 1)"), CRL_BOOL, 1000, 4);
    for (char c : b) REQUIRE((c == 0 || c == 1));
    std::string big = Generate(Parse("randint(-9000000000, 9000000000)"), CRL_INT64, 1000, 5);
    bool beyond_int32 = false;
    for (int i = 0; i < 1000; ++i) {
      if (std::llabs(At<int64_t>(big, i)) > (1ll << 31)) beyond_int32 = true;
    }
    CHECK(beyond_int32);
  }
  SECTION("sparse zero fraction") {
    std::string x = Generate(Parse("sparse(0.25, 1, 2)"), CRL_FLOAT32, n, 6);
    int64_t nonzero = 0;
    for (int64_t i = 0; i < n; ++i) {
      float v = At<float>(x, i);
      if (v != 0) {
        ++nonzero;
        REQUIRE(v >= 1);
        REQUIRE(v <= 2);
      }
    }
    CHECK(std::fabs(static_cast<double>(nonzero) / n - 0.25) < 0.01);
  }
  SECTION("constant") {
    std::string x = Generate(Parse("constant(-7)"), CRL_INT32, 10, 0);
    for (int i = 0; i < 10; ++i) CHECK(At<int32_t>(x, i) == -7);
    std::string h = Generate(Parse("constant(0.1)"), CRL_FLOAT16, 3, 0);
    CHECK(At<uint16_t>(h, 2) == 0x2E66);
  }
}

TEST_CASE("distribution parsing and dtype checks", "[inputs]") {
  Distribution d;
  std::string err;
  CHECK(ParseDistribution("  normal( 0 ,4 ) ", &d, &err));
  CHECK(d.kind == Distribution::kNormal);
  CHECK(d.b == 4);
  CHECK(ParseDistribution("uniform(-1e-3, +2.5E2)", &d, &err));
  CHECK(d.b == 250);
  CHECK(ParseDistribution(DistributionToString(d), &d, &err));
  for (const char* bad : {"", "uniform", "uniform(1)", "uniform(1, 0)", "uniform(0, 1",
                          "uniform(0, 1) x", "gauss(0, 1)", "normal(0, -1)", "randint(0.5, 3)",
                          "sparse(1.5, 0, 1)", "constant(nan)", "uniform(0, inf)",
                          "uniform(0x10, 20)", "constant(1,)"}) {
    INFO(bad);
    CHECK_FALSE(ParseDistribution(bad, &d, &err));
  }
  CHECK_FALSE(CheckDistributionForDtype(Parse("normal(0, 1)"), CRL_INT32, &err));
  CHECK_FALSE(CheckDistributionForDtype(Parse("randint(0, 300)"), CRL_UINT8, &err));
  CHECK_FALSE(CheckDistributionForDtype(Parse("randint(0, 2)"), CRL_BOOL, &err));
  CHECK_FALSE(CheckDistributionForDtype(Parse("constant(0.5)"), CRL_INT8, &err));
  CHECK_FALSE(CheckDistributionForDtype(Parse("uniform(0.2, 0.8)"), CRL_INT8, &err));
  CHECK(CheckDistributionForDtype(Parse("uniform(-128, 127)"), CRL_INT8, &err));
  CHECK(CheckDistributionForDtype(Parse("normal(0, 1)"), CRL_BFLOAT16, &err));
}

TEST_CASE("dtype names and sizes", "[dtype]") {
  for (int32_t t = CRL_FLOAT32; t <= CRL_BOOL; ++t) {
    int32_t back = 0;
    REQUIRE(DtypeFromName(DtypeName(t), &back));
    CHECK(back == t);
    CHECK(DtypeSize(t) > 0);
  }
  int32_t x;
  CHECK_FALSE(DtypeFromName("float", &x));
  CHECK(DtypeSize(0) == 0);
  CHECK(std::string(DtypeName(42)) == "unknown");
  const unsigned char bytes[] = {0xFF, 0x01};
  CHECK(ElementAsDouble(bytes, CRL_INT8, 0) == -1);
  CHECK(ElementAsDouble(bytes, CRL_UINT8, 0) == 255);
  CHECK(ElementAsDouble(bytes, CRL_BOOL, 1) == 1);
  uint16_t h = 0x3C00;
  CHECK(ElementAsDouble(&h, CRL_FLOAT16, 0) == 1.0);
  CHECK(std::isnan(ElementAsDouble(&h, 77, 0)));
}

TEST_CASE("float16 conversion edge cases", "[dtype]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(FloatToHalf(1.0f) == 0x3C00);
  CHECK(FloatToHalf(-2.5f) == 0xC100);
  CHECK(FloatToHalf(65504.0f) == 0x7BFF);
  CHECK(FloatToHalf(65519.99f) == 0x7BFF);
  CHECK(FloatToHalf(65520.0f) == 0x7C00);  // ties to even -> inf
  CHECK(FloatToHalf(inf) == 0x7C00);
  CHECK(FloatToHalf(-inf) == 0xFC00);
  CHECK(FloatToHalf(-0.0f) == 0x8000);
  CHECK((FloatToHalf(std::nanf("")) & 0x7C00) == 0x7C00);
  CHECK((FloatToHalf(std::nanf("")) & 0x03FF) != 0);
  CHECK(FloatToHalf(std::ldexp(1.0f, -24)) == 0x0001);             // smallest subnormal
  CHECK(FloatToHalf(std::ldexp(1.0f, -25)) == 0x0000);             // tie -> even (0)
  CHECK(FloatToHalf(std::ldexp(1.0000001f, -25)) == 0x0001);       // just above the tie
  CHECK(FloatToHalf(std::ldexp(3.0f, -26)) == 0x0001);             // 0.75 ulp -> 1
  CHECK(FloatToHalf(1e-8f) == 0x0000);
  CHECK(FloatToHalf(std::ldexp(1023.0f, -24)) == 0x03FF);          // largest subnormal
  CHECK(HalfToFloat(0x0001) == std::ldexp(1.0f, -24));
  CHECK(HalfToFloat(0x7BFF) == 65504.0f);
  CHECK(std::isinf(HalfToFloat(0xFC00)));
  CHECK(std::isnan(HalfToFloat(0x7E00)));
  CHECK(std::signbit(HalfToFloat(0x8000)));

  // Exhaustive: every half round-trips; every midpoint ties to even; a hair
  // on either side rounds to the nearer neighbour.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      REQUIRE(std::isnan(HalfToFloat(FloatToHalf(f))));
      continue;
    }
    REQUIRE(FloatToHalf(f) == h);
    uint32_t next = h + 1;
    if ((h & 0x7FFF) >= 0x7BFF || h == 0x7FFF || h == 0xFFFF) continue;  // no finite successor
    float g = HalfToFloat(static_cast<uint16_t>(next));
    float mid = (f + g) / 2;  // exact: 12 significant bits
    uint16_t even = (h & 1) == 0 ? h : next;
    REQUIRE(FloatToHalf(mid) == even);
    REQUIRE(FloatToHalf(std::nextafter(mid, f)) == h);
    REQUIRE(FloatToHalf(std::nextafter(mid, g)) == next);
  }
}

TEST_CASE("bfloat16 conversion edge cases", "[dtype]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(FloatToBfloat16(1.0f) == 0x3F80);
  CHECK(FloatToBfloat16(inf) == 0x7F80);
  CHECK(FloatToBfloat16(-inf) == 0xFF80);
  CHECK(FloatToBfloat16(std::numeric_limits<float>::max()) == 0x7F80);  // rounds up to inf
  CHECK(std::isnan(Bfloat16ToFloat(FloatToBfloat16(std::nanf("")))));
  // A NaN whose payload lives only in the low bits must stay NaN.
  CHECK(std::isnan(Bfloat16ToFloat(FloatToBfloat16(BitsToFloat(0x7F800001u)))));
  CHECK(FloatToBfloat16(BitsToFloat(0x00000001u)) == 0x0000);  // tiny subnormal
  CHECK(FloatToBfloat16(BitsToFloat(0x00008000u)) == 0x0000);  // tie -> even
  CHECK(FloatToBfloat16(BitsToFloat(0x00018000u)) == 0x0002);  // tie -> even (up)
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = Bfloat16ToFloat(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    REQUIRE(FloatToBfloat16(f) == b);
    if ((b & 0x7FFF) >= 0x7F7F) continue;
    float g = Bfloat16ToFloat(static_cast<uint16_t>(b + 1));
    // Same sign, adjacent: the midpoint is the average of the bit patterns.
    float mid = BitsToFloat(static_cast<uint32_t>(
        (static_cast<uint64_t>(FloatBits(f)) + FloatBits(g)) / 2));
    uint16_t even = (b & 1) == 0 ? b : b + 1;
    REQUIRE(FloatToBfloat16(mid) == even);
  }
}

}  // namespace
}  // namespace crl::runner
