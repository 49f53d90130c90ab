// Short names of the API's enums, as people and JSON reports see them
// ("WRONG_ANSWER", "SIDE_STREAM", "CONVERGED"), and which flags void a
// measured speedup. One place, so every report spells them the same way.
#ifndef CRL_LIB_REWARD_NAMES_H_
#define CRL_LIB_REWARD_NAMES_H_

#include <string>
#include <vector>

#include <google/protobuf/repeated_field.h>

#include "crl/v1/common.pb.h"
#include "crl/v1/timing.pb.h"

namespace crl {

// The enum value's name without its prefix: VERDICT_WRONG_ANSWER ->
// "WRONG_ANSWER"; an unknown number gives its decimal text.
std::string VerdictShortName(v1::Verdict verdict);
std::string FlagShortName(v1::Flag flag);
std::string StopReasonShortName(v1::StopReason reason);

// Appends the short names of `flags` not already in `names`: a flag that
// verification and timing both raised (a reused output buffer is
// WRITE_AFTER_RETURN at both) is listed once.
void AddFlagNamesOnce(const google::protobuf::RepeatedField<int>& flags, std::vector<std::string>* names);

// A short name as a Prometheus label value: lower case ("wrong_answer").
std::string LabelValue(const std::string& short_name);

// True for every flag that casts doubt on a measurement (all but
// FLAG_NO_CUSTOM_KERNEL, which labels a pure-framework rewrite, and
// FLAG_UNSPECIFIED). A speedup carrying one is never reported as fast; it is
// not rewarded either, except a NOISY one, rewarded at the end of its
// interval nearest 1 (rewards.h).
bool IsTrustFlag(v1::Flag flag);
// True for the trust flags that say a candidate may be cheating (all but
// FLAG_NOISY, which says only that the measurement was not precise enough).
// A verified candidate carrying one is never imitated (SFT,
// keep-the-successes); one that is merely NOISY is (its correctness stands;
// its speed is rewarded only at the end of its interval nearest 1).
bool IsHonestyFlag(v1::Flag flag);

// IsTrustFlag for a name, with or without the "FLAG_" prefix; unknown names
// count as trust flags (a flag we cannot read is not one we can clear).
bool IsTrustFlagName(const std::string& name);

// Adds `flag` to a message's flags unless it is there: a result's flags are
// a set (its evidence lines may say more than once why).
void AddFlag(google::protobuf::RepeatedField<int>* flags, v1::Flag flag);

}  // namespace crl

#endif  // CRL_LIB_REWARD_NAMES_H_
