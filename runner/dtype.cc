// runner/dtype.cc — see dtype.h.
#include "runner/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "crl/kernel.h"

namespace crl::runner {

size_t DtypeSize(int32_t dtype) {
  switch (dtype) {
    case CRL_FLOAT32: return 4;
    case CRL_FLOAT64: return 8;
    case CRL_FLOAT16: return 2;
    case CRL_BFLOAT16: return 2;
    case CRL_INT32: return 4;
    case CRL_INT64: return 8;
    case CRL_INT8: return 1;
    case CRL_UINT8: return 1;
    case CRL_BOOL: return 1;
    default: return 0;
  }
}

namespace {
struct NamedDtype {
  const char* name;
  int32_t dtype;
};
constexpr NamedDtype kNames[] = {
    {"float32", CRL_FLOAT32}, {"float64", CRL_FLOAT64}, {"float16", CRL_FLOAT16},
    {"bfloat16", CRL_BFLOAT16}, {"int32", CRL_INT32},   {"int64", CRL_INT64},
    {"int8", CRL_INT8},         {"uint8", CRL_UINT8},   {"bool", CRL_BOOL},
};
}  // namespace

const char* DtypeName(int32_t dtype) {
  for (const auto& n : kNames) {
    if (n.dtype == dtype) return n.name;
  }
  return "unknown";
}

bool DtypeFromName(const std::string& name, int32_t* dtype) {
  for (const auto& n : kNames) {
    if (name == n.name) {
      *dtype = n.dtype;
      return true;
    }
  }
  return false;
}

bool DtypeIsFloat(int32_t dtype) {
  return dtype == CRL_FLOAT32 || dtype == CRL_FLOAT64 || dtype == CRL_FLOAT16 ||
         dtype == CRL_BFLOAT16;
}

bool DtypeIsValid(int32_t dtype) { return DtypeSize(dtype) != 0; }

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint64_t DoubleBits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}
double BitsToDouble(uint64_t u) {
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

uint16_t FloatToHalf(float f) {
  const uint32_t x = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax >= 0x7F800000u) {  // inf or NaN
    if (ax > 0x7F800000u) {
      // Quiet NaN, keeping the top payload bits.
      return static_cast<uint16_t>(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
    }
    return static_cast<uint16_t>(sign | 0x7C00u);
  }
  if (ax >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520
  if (ax < 0x33000000u) return sign;  // < 2^-25: rounds to zero (2^-25 ties to 0)
  const uint32_t e = ax >> 23;
  if (ax < 0x38800000u) {  // half subnormal range: [2^-25, 2^-14)
    const uint32_t mant = (ax & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t r = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = ((e - 112) << 10) | ((ax >> 13) & 0x3FFu);
  const uint32_t rem = ax & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;  // carry may reach inf
  return static_cast<uint16_t>(sign | r);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in float.
    float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return (sign != 0) ? -v : v;
  }
  if (exp == 31) return BitsToFloat(sign | 0x7F800000u | (mant << 13));
  return BitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t FloatToBfloat16(float f) {
  const uint32_t x = FloatBits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
  }
  const uint32_t bias = 0x7FFFu + ((x >> 16) & 1u);  // nearest, ties to even
  return static_cast<uint16_t>((x + bias) >> 16);
}

float Bfloat16ToFloat(uint16_t b) { return BitsToFloat(static_cast<uint32_t>(b) << 16); }

double ElementAsDouble(const void* data, int32_t dtype, int64_t i) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  switch (dtype) {
    case CRL_FLOAT32: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case CRL_FLOAT64: {
      double v;
      std::memcpy(&v, p + 8 * i, 8);
      return v;
    }
    case CRL_FLOAT16: {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return HalfToFloat(v);
    }
    case CRL_BFLOAT16: {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return Bfloat16ToFloat(v);
    }
    case CRL_INT32: {
      int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case CRL_INT64: {
      int64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      return static_cast<double>(v);
    }
    case CRL_INT8: return static_cast<int8_t>(p[i]);
    case CRL_UINT8: return p[i];
    case CRL_BOOL: return p[i];
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

}  // namespace crl::runner
