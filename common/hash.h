// Content hashes: build-cache keys, task identities, artifact ids.
#ifndef CRL_COMMON_HASH_H_
#define CRL_COMMON_HASH_H_

#include <string>

namespace crl {

// Lower-case hex SHA-256 of `data` (64 characters). Thread-safe.
std::string Sha256Hex(const std::string& data);

}  // namespace crl

#endif  // CRL_COMMON_HASH_H_
