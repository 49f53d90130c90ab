// Content hashes: build-cache keys, task identities, artifact ids.
#ifndef CRL_COMMON_HASH_H_
#define CRL_COMMON_HASH_H_

#include <cstdint>
#include <string>

namespace crl {

// Lower-case hex SHA-256 of `data` (64 characters). Thread-safe.
std::string Sha256Hex(const std::string& data);

// The first 8 bytes of SHA-256(`data`) as a number: the same in every
// process and on every machine (unlike absl::Hash, which is salted per
// process), for seeds derived from names. Thread-safe.
uint64_t StableHash64(const std::string& data);

}  // namespace crl

#endif  // CRL_COMMON_HASH_H_
