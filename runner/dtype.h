// runner/dtype.h — element-type helpers for the crl_dtype values of
// include/crl/kernel.h, and float16/bfloat16 <-> float32 conversions.
//
// Conversions from float32 round to nearest, ties to even; NaN stays NaN
// (quiet, sign kept); overflow becomes +-inf; float16 subnormals are produced
// and read exactly. All functions are pure and thread-safe.
#ifndef CRL_RUNNER_DTYPE_H_
#define CRL_RUNNER_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace crl::runner {

// Bytes per element; 0 for an unknown dtype.
size_t DtypeSize(int32_t dtype);

// Manifest name ("float32", "bfloat16", "bool", ...); "unknown" otherwise.
const char* DtypeName(int32_t dtype);

// Parses a manifest name into a crl_dtype value. False if unknown.
bool DtypeFromName(const std::string& name, int32_t* dtype);

// True for float32/float64/float16/bfloat16.
bool DtypeIsFloat(int32_t dtype);

// True for a known dtype value.
bool DtypeIsValid(int32_t dtype);

// Element i of a dense buffer of `dtype`, widened to double (bool -> 0/1 as
// stored: a byte other than 0/1 is returned as its value). Unknown dtype: NaN.
double ElementAsDouble(const void* data, int32_t dtype, int64_t i);

// IEEE binary16 <-> float32.
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);

// bfloat16 <-> float32.
uint16_t FloatToBfloat16(float f);
float Bfloat16ToFloat(uint16_t b);

// Bit casts.
uint32_t FloatBits(float f);
float BitsToFloat(uint32_t u);
uint64_t DoubleBits(double d);
double BitsToDouble(uint64_t u);

}  // namespace crl::runner

#endif  // CRL_RUNNER_DTYPE_H_
