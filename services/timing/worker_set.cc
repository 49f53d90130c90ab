#include "services/timing/worker_set.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/resolve.h"
#include "common/status.h"

namespace crl::timing {

WorkerSet::WorkerSet(std::vector<std::string> specs, Factory factory, ClockInterface* clock, absl::Duration refresh)
    : specs_(std::move(specs)), factory_(std::move(factory)), clock_(clock), refresh_(refresh) {}

absl::Status WorkerSet::RefreshLocked() {
  const absl::Time now = clock_->MonotonicNow();
  if (!addresses_.empty() && (!HasDnsEntries(specs_) || now - resolved_at_ < refresh_)) return absl::OkStatus();
  auto resolved = ResolveAddresses(specs_);
  if (!resolved.ok()) {
    // Keep serving the last known workers while the name does not resolve.
    if (!addresses_.empty()) return absl::OkStatus();
    return resolved.status();
  }
  addresses_ = *std::move(resolved);
  resolved_at_ = now;
  return absl::OkStatus();
}

absl::StatusOr<WorkerClientInterface*> WorkerSet::ClientLocked(const std::string& address) {
  auto it = clients_.find(address);
  if (it != clients_.end()) return it->second.get();
  CRL_ASSIGN_OR_RETURN(std::unique_ptr<WorkerClientInterface> c, factory_(address));
  WorkerClientInterface* raw = c.get();
  clients_[address] = std::move(c);
  return raw;
}

absl::StatusOr<WorkerClientInterface*> WorkerSet::Pick(const std::string& hint) {
  absl::MutexLock lock(&mu_);
  CRL_RETURN_IF_ERROR(RefreshLocked());
  if (addresses_.empty()) return absl::UnavailableError("crl-timing: no workers");
  if (!hint.empty() && std::find(addresses_.begin(), addresses_.end(), hint) != addresses_.end()) {
    return ClientLocked(hint);
  }
  const std::string& a = addresses_[next_++ % addresses_.size()];
  return ClientLocked(a);
}

std::vector<std::string> WorkerSet::Addresses() {
  absl::MutexLock lock(&mu_);
  (void)RefreshLocked();
  return addresses_;
}

}  // namespace crl::timing
