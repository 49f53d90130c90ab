// Addresses of a service's replicas: a list of HOST:PORT, where an entry
// "dns:///NAME:PORT" stands for every address NAME resolves to (a
// Kubernetes headless Service lists one per ready pod). Callers re-resolve
// now and then to follow pods that come and go.
#ifndef CRL_COMMON_RESOLVE_H_
#define CRL_COMMON_RESOLVE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace crl {

// The addresses `specs` name, deduplicated, in order ("10.0.0.5:50051").
// UNAVAILABLE naming the entry when a name resolves to nothing;
// INVALID_ARGUMENT for an entry without a port.
absl::StatusOr<std::vector<std::string>> ResolveAddresses(const std::vector<std::string>& specs);

// Whether any entry needs resolving (a dns:/// entry).
bool HasDnsEntries(const std::vector<std::string>& specs);

}  // namespace crl

#endif  // CRL_COMMON_RESOLVE_H_
