// crl-trainer: SFT, keep-the-successes and GRPO training of a Hugging Face
// policy in LibTorch, checkpoints that resume bit for bit, and published
// policy versions the sampler loads.
//
//   crl-trainer --model DIR --out_dir OUT [--lora] ...          serve TrainerService
//   crl-trainer --model DIR --out_dir OUT --offline DATA.jsonl  train from a file, then exit
//   ... --world_size 2 --rank R --dist_store FILE               data parallel (rank 0 serves)
//   RANK=R WORLD_SIZE=N MASTER_ADDR=H MASTER_PORT=P crl-trainer ...   the same, as torchrun sets it
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

#include "common/logging.h"
#include "common/memory.h"
#include "common/service_main.h"
#include "common/status.h"
#include "services/trainer/offline.h"
#include "services/trainer/trainer_service.h"
#include "services/trainer/trainer_setup.h"

namespace {

// A rank > 0: resumes with rank 0 (which broadcasts nothing about it), then
// does what rank 0 broadcasts until it says stop.
absl::Status Follow(crl::trainer::TrainerParts& parts, bool resume) {
  if (resume) {
    auto resumed = parts.trainer->Resume();
    if (!resumed.ok() && resumed.status().code() != absl::StatusCode::kNotFound) return resumed.status();
  }
  return parts.runner->Follow();
}

// Offline training and ranks > 0 serve nothing: SIGTERM/SIGINT (blocked by
// ServiceMain) set `stop` for the offline run, and end a follower at once.
int RunWithoutServer(const crl::trainer::TrainerServiceOptions& options,
                     const crl::trainer::OfflineOptions& offline) {
  static std::atomic<bool> stop{false};
  const bool follower = options.dist.rank > 0;
  std::thread([follower] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    int sig = 0;
    sigwait(&set, &sig);
    if (follower) std::_Exit(128 + sig);
    stop.store(true);
  }).detach();
  auto parts = crl::trainer::BuildTrainerParts(options, crl::RealClock::Get());
  if (!parts.ok()) {
    CRL_LOG(ERROR) << "crl-trainer: start-up: " << parts.status();
    return 1;
  }
  absl::Status s;
  if (follower) {
    s = Follow(**parts, options.loop.resume);
  } else {
    crl::trainer::OfflineOptions o = offline;
    o.groups_per_step = options.loop.groups_per_step;
    o.examples_per_step = options.loop.examples_per_step;
    o.checkpoint_every = options.loop.checkpoint_every;
    o.resume = options.loop.resume;
    s = crl::trainer::RunOffline((*parts)->runner.get(), *(*parts)->intake, o, &stop, stdout);
  }
  if (!s.ok()) {
    CRL_LOG(ERROR) << "crl-trainer: " << s;
    return 1;
  }
  return 0;
}

// A rank > 0 under ServiceMain: health (SERVING once it has joined the
// group and loaded the model) and metrics, no TrainerService. Rank 0's
// "stop" ends it like SIGTERM; a failed collective ends it with status 1.
int ServeFollower(crl::ServiceMain& service_main, int argc, char** argv,
                  const crl::trainer::TrainerServiceOptions& options) {
  std::unique_ptr<crl::trainer::TrainerParts> parts;
  static std::atomic<bool> followed{false};
  const int code = service_main.Run(argc, argv, [&](crl::ServiceSetup&) -> absl::Status {
    CRL_ASSIGN_OR_RETURN(parts, crl::trainer::BuildTrainerParts(options, crl::RealClock::Get()));
    std::thread([&parts, resume = options.loop.resume] {
      if (absl::Status s = Follow(*parts, resume); !s.ok()) {
        CRL_LOG(ERROR) << "crl-trainer: " << s;
        std::fflush(stderr);
        std::_Exit(1);
      }
      followed.store(true);
      kill(getpid(), SIGTERM);
    }).detach();
    return absl::OkStatus();
  });
  // Stopped from outside while rank 0 still leads: the follower thread is
  // blocked in a collective; nothing of this rank needs saving.
  if (!followed.load()) std::_Exit(code);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  crl::RetainFreedHeap();
  crl::ServiceMain service_main(
      {"crl-trainer", "crl.v1.TrainerService",
       "Policy training in LibTorch (SFT, keep-the-successes, GRPO) and policy versions.",
       "127.0.0.1:50055", {"trainer", 4, 256}});
  crl::trainer::TrainerServiceOptions options;
  crl::trainer::BindTrainerOptions(service_main.flags(), &options);
  crl::trainer::OfflineOptions offline;
  service_main.flags()->Add("offline", &offline.data,
                            "train from this JSON-lines file of groups / examples, then exit");
  service_main.flags()->Add("epochs", &offline.epochs, "offline: passes over the file");
  service_main.flags()->Add("max_steps", &offline.max_steps, "offline: stop after this many steps");
  bool serve_followers = false;
  service_main.flags()->Add("serve_followers", &serve_followers,
                            "ranks > 0 serve health and metrics too (the probes of a StatefulSet); "
                            "only rank 0 serves TrainerService");
  if (int exit_code = service_main.Parse(argc, argv); exit_code >= 0) return exit_code;
  // Under a launcher (torchrun, a StatefulSet, Slurm) the rank comes from
  // its environment.
  if (absl::Status s = crl::trainer::ApplyLauncherEnvironment(&options.dist, std::getenv); !s.ok()) {
    CRL_LOG(ERROR) << "crl-trainer: options: " << s;
    return 1;
  }
  // A rank that is gone stops the others: the launcher restarts them all,
  // and they resume from the last checkpoint (the journal keeps what rank
  // 0 had accepted since).
  options.dist.on_peer_lost = [rank = options.dist.rank](const absl::Status& why) {
    CRL_LOG(ERROR) << "crl-trainer: rank " << rank << " stops: " << why.message()
                   << "; restart every rank (with --resume) to continue from the last checkpoint";
    std::fflush(stderr);
    std::_Exit(1);
  };
  if (!offline.data.empty() || (options.dist.rank > 0 && !serve_followers)) {
    return RunWithoutServer(options, offline);
  }
  if (options.dist.rank > 0) return ServeFollower(service_main, argc, argv, options);

  std::unique_ptr<crl::trainer::TrainerParts> parts;
  std::unique_ptr<crl::trainer::TrainerMetrics> metrics;
  std::unique_ptr<crl::TrainerServiceImpl> service;
  return service_main.Run(argc, argv, [&](crl::ServiceSetup& setup) -> absl::Status {
    CRL_ASSIGN_OR_RETURN(parts, crl::trainer::BuildTrainerParts(options, crl::RealClock::Get()));
    metrics = std::make_unique<crl::trainer::TrainerMetrics>(setup.registry());
    CRL_RETURN_IF_ERROR(parts->StartLoop(options.loop, metrics.get(), crl::RealClock::Get()));
    service = std::make_unique<crl::TrainerServiceImpl>(parts->loop.get(), metrics.get(),
                                                        setup.call_env());
    setup.AddService(service.get());
    setup.SetDrain([&] { parts->loop->Drain(); });
    return absl::OkStatus();
  });
}
