#include "services/trainer/rendezvous.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace crl::trainer {
namespace {

absl::Status ReadInt(const std::function<const char*(const char*)>& getenv, const char* name,
                     int low, int high, int* out) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": not set, but WORLD_SIZE is (a launcher sets RANK, WORLD_SIZE, "
                           "MASTER_ADDR and MASTER_PORT together)"));
  }
  int n = 0;
  if (!absl::SimpleAtoi(v, &n) || n < low || n > high) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": '", v, "' is not an integer in [", low, ", ", high, "]"));
  }
  *out = n;
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyLauncherEnvironment(DistributedOptions* p,
                                      const std::function<const char*(const char*)>& getenv) {
  const char* world = getenv("WORLD_SIZE");
  if (world == nullptr || *world == '\0' || p->world_size != 1) return absl::OkStatus();
  DistributedOptions e = *p;
  if (absl::Status s = ReadInt(getenv, "WORLD_SIZE", 1, 1 << 20, &e.world_size); !s.ok()) return s;
  if (e.world_size == 1) return absl::OkStatus();
  if (absl::Status s = ReadInt(getenv, "RANK", 0, e.world_size - 1, &e.rank); !s.ok()) return s;
  if (const char* local = getenv("LOCAL_RANK"); local != nullptr && *local != '\0') {
    if (absl::Status s = ReadInt(getenv, "LOCAL_RANK", 0, 1 << 16, &e.local_rank); !s.ok()) return s;
  }
  int port = 0;
  if (absl::Status s = ReadInt(getenv, "MASTER_PORT", 1, 65535, &port); !s.ok()) return s;
  const char* addr = getenv("MASTER_ADDR");
  if (addr == nullptr || *addr == '\0') {
    return absl::InvalidArgumentError("MASTER_ADDR: not set, but WORLD_SIZE is (the host of rank 0)");
  }
  if (e.store.empty()) e.store = absl::StrCat(addr, ":", port);
  // torchrun's static rendezvous: its agent already serves a TCPStore on
  // MASTER_PORT, so a rank 0 that served one there would find the port taken.
  if (const char* agent = getenv("TORCHELASTIC_USE_AGENT_STORE"); agent != nullptr && std::string(agent) == "True") {
    int attempt = 0;
    if (const char* restarts = getenv("TORCHELASTIC_RESTART_COUNT"); restarts != nullptr && *restarts != '\0') {
      if (absl::Status s = ReadInt(getenv, "TORCHELASTIC_RESTART_COUNT", 0, 1 << 20, &attempt); !s.ok()) return s;
    }
    e.launcher_hosts_store = true;
    e.store_prefix = absl::StrCat("/worker/attempt_", attempt, "/");
  }
  *p = e;
  return absl::OkStatus();
}

PeerWatch::PeerWatch(int world_size, int self)
    : self_(self), last_(world_size, 0), moved_(world_size, absl::InfinitePast()) {}

void PeerWatch::Observe(const std::vector<int64_t>& beats, absl::Time now) {
  for (size_t r = 0; r < last_.size() && r < beats.size(); ++r) {
    if (beats[r] != last_[r]) moved_[r] = now;
    last_[r] = beats[r];
  }
}

std::vector<int> PeerWatch::Stalled(absl::Time now, absl::Duration stall) const {
  std::vector<int> out;
  for (size_t r = 0; r < last_.size(); ++r) {
    if (static_cast<int>(r) == self_ || last_[r] == kLeft || last_[r] == 0) continue;
    if (now - moved_[r] >= stall) out.push_back(static_cast<int>(r));
  }
  return out;
}

std::string PeerWatch::Describe(const std::vector<int>& ranks, absl::Time now) const {
  std::vector<std::string> parts;
  for (int r : ranks) {
    parts.push_back(absl::StrFormat("rank %d stopped beating %.1f s ago", r,
                                    absl::ToDoubleSeconds(now - moved_[r])));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace crl::trainer
