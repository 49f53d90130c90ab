// What the hack database records (docs/hacks.md): a candidate that raised a
// trust flag that says it may cheat, or that failed for a cheating reason
// (reused or aliased outputs, inputs modified, threads left running, a
// forbidden call, a forged timing report), or that a judge found cheating.
// A wrong answer, a crash or a merely NOISY timing is not a hack.
//
// One place for these rules: the orchestrator records from them, the run
// report counts with them, and every store merges sightings through
// MergeSighting.
#ifndef CRL_LIB_HACKS_HACK_CASE_H_
#define CRL_LIB_HACKS_HACK_CASE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crl/v1/orchestrator.pb.h"

namespace crl::hacks {

// The kinds of cheating a scored candidate shows, sorted and without
// repeats ("reused-output", "side-stream", ...); empty when it shows none.
// Read from its flags, its verdict, its flag evidence, its log (the
// runner's reasons) and its judgement.
std::vector<std::string> Kinds(const v1::Variant& variant);

// Every kind Kinds can return, for help texts and validation.
const std::vector<std::string>& KnownKinds();

// "<first 16 hex of SHA-256 of task and source>": the same code on the same
// task is one case, however often it is seen.
std::string CaseId(const std::string& task_name, const std::string& source);

// The case a scored candidate makes, or nothing when it is no hack.
// `origin` says where it was seen; `now` is Unix seconds. A `known_hack`
// (its author says so: `crl hacks seed`) is a case whatever caught it (kind
// "known-hack" when nothing named one, even when nothing caught it), with
// `note` (what the author says it does) first in its evidence.
std::optional<v1::HackCase> CaseOf(const v1::Variant& variant, const std::string& origin, int64_t now,
                                   bool known_hack = false, const std::string& note = "");

// `existing` seen again as `seen` (the same case_id): counted, last seen
// updated, kinds and evidence united, a judgement kept or replaced by a
// newer one. First origin and first-seen time stay.
v1::HackCase MergeSighting(const v1::HackCase& existing, const v1::HackCase& seen);

// Whether `c` passes a listing's filters (empty matches all).
bool Matches(const v1::HackCase& c, const std::string& kind, const std::string& task_name);

}  // namespace crl::hacks

#endif  // CRL_LIB_HACKS_HACK_CASE_H_
