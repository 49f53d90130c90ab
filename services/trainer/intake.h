// What the trainer accepts: submitted groups and examples checked field by
// field and turned into TrainSequences. Errors are INVALID_ARGUMENT naming
// the field ("completions[2].behaviour_logprobs: 5 values for 7 tokens");
// a group that is valid but teaches nothing gets an outcome instead
// (SKIPPED_TOO_FEW, SKIPPED_EQUAL_REWARDS). Rewards that are not OK
// (infrastructure retry, withheld) are left out, never read as zero.
#ifndef CRL_SERVICES_TRAINER_INTAKE_H_
#define CRL_SERVICES_TRAINER_INTAKE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "crl/v1/trainer.pb.h"
#include "lib/policy/tokenizer.h"
#include "services/trainer/batch.h"
#include "services/trainer/objective.h"

namespace crl::trainer {

struct IntakeOptions {
  AdvantageOptions advantages;
  int64_t max_seq_len = 4096;
  int vocab_size = 0;
};

// A checked group.
struct IntakeGroup {
  std::string id;  // group_id, or a content hash when the client gave none
  v1::GroupOutcome outcome = v1::GROUP_OUTCOME_QUEUED;
  int64_t policy_version = 0;
  int used = 0;                     // completions with an OK reward
  std::vector<double> advantages;   // of the used completions
  std::vector<TrainSequence> sequences;  // empty unless QUEUED
};

// "" -> 0; INVALID_ARGUMENT naming `field` for anything but a decimal.
absl::StatusOr<int64_t> ParsePolicyVersion(const std::string& text, const std::string& field);

// Thread-safe (the tokenizer is).
class Intake {
 public:
  // `tokenizer` must outlive the intake; `chat` is the chat format prompts
  // given as text are wrapped in (an error status: encoded as plain text).
  Intake(const policy::Tokenizer* tokenizer, absl::StatusOr<policy::ChatFormat> chat,
         IntakeOptions options);

  absl::StatusOr<IntakeGroup> Group(const v1::SubmitGroupRequest& request) const;
  // Every example checked; the first bad one fails the request, naming it.
  absl::StatusOr<std::vector<TrainSequence>> Examples(const v1::SubmitExamplesRequest& request) const;

 private:
  absl::StatusOr<std::vector<int>> PromptIds(const std::string& text,
                                             const google::protobuf::RepeatedField<int32_t>& ids,
                                             const std::string& field) const;
  absl::StatusOr<std::vector<int>> CompletionIds(const std::string& text,
                                                 const google::protobuf::RepeatedField<int32_t>& ids,
                                                 const std::string& field) const;
  absl::Status CheckIds(const std::vector<int>& ids, const std::string& field) const;

  const policy::Tokenizer* tokenizer_;
  absl::StatusOr<policy::ChatFormat> chat_;
  IntakeOptions options_;
};

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_INTAKE_H_
