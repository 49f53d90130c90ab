// Numbered directories committed atomically: checkpoints
// (out/checkpoints/step-N) and published policy versions (out/policy/vN).
// A directory is written under a staging name, fsynced, renamed into place,
// and only then named by the `latest` file beside it; a crash at any point
// leaves the previous latest intact (staging leftovers are removed on the
// next commit).
#ifndef CRL_SERVICES_TRAINER_CHECKPOINT_DIRS_H_
#define CRL_SERVICES_TRAINER_CHECKPOINT_DIRS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace crl::trainer {

// `parent`/.staging-<prefix><number>: where to write before Commit.
std::string StagingDirectory(const std::string& parent, const std::string& prefix, int64_t number);

// Moves the staging directory to `parent`/<prefix><number>, records it in
// `parent`/latest, and removes all but the `keep` highest-numbered
// directories of that prefix (keep < 1: none removed). Returns the final path.
absl::StatusOr<std::string> CommitDirectory(const std::string& parent, const std::string& prefix,
                                            int64_t number, int keep);

// The directory `parent`/latest names; NOT_FOUND when none was committed.
absl::StatusOr<std::string> LatestDirectory(const std::string& parent);

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_CHECKPOINT_DIRS_H_
