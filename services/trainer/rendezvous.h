// How data-parallel ranks find each other and notice when one is gone,
// apart from the process group itself (distributed.h) so it is tested
// without LibTorch's collectives.
//
// Launchers (torchrun, a Kubernetes StatefulSet or indexed Job, Slurm
// scripts) describe a rank by environment variables: RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR and MASTER_PORT. ApplyLauncherEnvironment reads
// them when the command line did not set the rank itself.
//
// Every rank beats in the rendezvous store (a counter per rank, once per
// `heartbeat`); PeerWatch turns the counters it reads into "rank R stopped
// beating N s ago", the name a collective's error lacks (Gloo says only
// "connection closed by peer", NCCL waits for its timeout).
#ifndef CRL_SERVICES_TRAINER_RENDEZVOUS_H_
#define CRL_SERVICES_TRAINER_RENDEZVOUS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace crl::trainer {

struct DistributedOptions {
  int rank = 0;
  int world_size = 1;
  // The GPU of this rank on its host (-1: the rank's number).
  int local_rank = -1;
  int gpu() const { return local_rank >= 0 ? local_rank : rank; }
  // "gloo" (CPU tensors) or "nccl" (CUDA tensors).
  std::string backend = "gloo";
  // Rendezvous: a file every rank can reach (FileStore), or HOST:PORT of
  // rank 0 (TCPStore).
  std::string store;
  // The launcher hosts the TCPStore at `store` (torchrun's static
  // rendezvous: TORCHELASTIC_USE_AGENT_STORE=True), so rank 0 connects to it
  // as every other rank does instead of serving it; the keys of each restart
  // attempt go under `store_prefix` ("/worker/attempt_N/", as torchrun's
  // own workers put theirs) so a restart never reads the last attempt's.
  bool launcher_hosts_store = false;
  std::string store_prefix;
  // How long collectives and the rendezvous may take.
  double timeout_seconds = 600;
  // Seconds between a rank's beats, and without a beat before a rank is
  // called gone (0: never while idle; a failed collective still names it).
  double heartbeat_seconds = 1;
  double peer_timeout_seconds = 30;
  // Called once, from the watcher thread, when a rank is gone (or the store
  // on rank 0 is). Null: only failed collectives report it.
  std::function<void(const absl::Status&)> on_peer_lost;
};

// Fills rank, world_size, local_rank and store from the launcher's variables when WORLD_SIZE is set
// (and launcher_hosts_store and store_prefix from torchrun's
// TORCHELASTIC_USE_AGENT_STORE and TORCHELASTIC_RESTART_COUNT) and the command line left a world of one (flags win: an explicit
// --world_size ignores the environment). INVALID_ARGUMENT names the
// variable that is missing or malformed. `getenv` is injected for tests.
absl::Status ApplyLauncherEnvironment(DistributedOptions* options,
                                      const std::function<const char*(const char*)>& getenv);

// The beats of every rank as one rank reads them. Not thread-safe: one
// watcher thread owns it.
class PeerWatch {
 public:
  static constexpr int64_t kLeft = -1;  // a rank that said goodbye

  PeerWatch(int world_size, int self);

  // `beats[r]`: rank r's counter read at `now`, kLeft when it has left.
  void Observe(const std::vector<int64_t>& beats, absl::Time now);

  // Ranks (not this one, not those that left) whose counter has not moved
  // for `stall` by `now`. A rank that has not beaten yet is still starting
  // (the rendezvous timeout covers one that never comes), not gone.
  std::vector<int> Stalled(absl::Time now, absl::Duration stall) const;

  // "rank 1 stopped beating 4.0 s ago" for `ranks` (empty: "").
  std::string Describe(const std::vector<int>& ranks, absl::Time now) const;

 private:
  int self_;
  std::vector<int64_t> last_;
  std::vector<absl::Time> moved_;
};

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_RENDEZVOUS_H_
