// The trainer's submission journal: every accepted submission is appended
// and flushed to disk before the submitter hears "accepted", so a trainer
// killed between checkpoints loses nothing it acknowledged. A checkpoint
// holds the queue as it was when the checkpoint began; the journal then
// starts a new segment, and the segments before it are deleted once the
// checkpoint is safely written. On start, the trainer replays every
// remaining segment after its checkpoint (ids already seen are skipped, so a
// replayed submission is never trained twice).
//
// Segments: <dir>/journal-<n>.bin, records of [kind byte][u32 length][a
// serialized SubmitGroupRequest or SubmitExamplesRequest]. A torn last
// record (a crash mid-append) is ignored. Thread-compatible: the training
// loop calls it under its lock.
#ifndef CRL_SERVICES_TRAINER_JOURNAL_H_
#define CRL_SERVICES_TRAINER_JOURNAL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "crl/v1/trainer.pb.h"

namespace crl::trainer {

class Journal {
 public:
  // Opens a new segment after the existing ones in `dir` (created).
  static absl::StatusOr<std::unique_ptr<Journal>> Open(const std::string& dir);
  ~Journal();

  // Appends and fsyncs.
  absl::Status Append(const v1::SubmitGroupRequest& request);
  absl::Status Append(const v1::SubmitExamplesRequest& request);
  // Starts a new segment; returns the number of the first segment that a
  // checkpoint taken now does not cover (pass it to DropBefore once the
  // checkpoint is written).
  absl::StatusOr<int64_t> Rotate();
  // Deletes the segments before `segment`.
  void DropBefore(int64_t segment);

  // Calls `on_group` / `on_examples` for every record of every segment in
  // `dir`, in order. Unreadable or torn records end their segment.
  static absl::Status Replay(const std::string& dir,
                             const std::function<void(const v1::SubmitGroupRequest&)>& on_group,
                             const std::function<void(const v1::SubmitExamplesRequest&)>& on_examples);

 private:
  Journal(std::string dir, int64_t segment) : dir_(std::move(dir)), segment_(segment) {}
  absl::Status OpenSegment();
  absl::Status Write(char kind, const std::string& bytes);

  std::string dir_;
  int64_t segment_;
  int fd_ = -1;
};

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_JOURNAL_H_
