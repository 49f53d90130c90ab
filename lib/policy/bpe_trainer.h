// Trains a byte-level BPE tokenizer in the tokenizer.json format that
// Tokenizer reads (and Hugging Face's libraries load): the same regex
// pre-tokenizer as Qwen, 256 byte symbols, merges by pair frequency, and
// ChatML's special tokens, so the embedded policy has a tokenizer of its own
// in the field's format.
#ifndef CRL_LIB_POLICY_BPE_TRAINER_H_
#define CRL_LIB_POLICY_BPE_TRAINER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace crl::policy {

struct BpeTrainOptions {
  // Vocabulary size including the 256 byte symbols and the special tokens
  // (smaller when the corpus runs out of pairs seen min_frequency times).
  int vocab_size = 4096;
  // Pairs seen fewer times than this are never merged.
  int min_frequency = 2;
  // Added as special tokens after the vocabulary (ChatML's by default).
  std::vector<std::string> special_tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
};

// tokenizer.json text trained on `documents`. Deterministic: ties between
// equally frequent pairs go to the lexicographically smaller pair.
absl::StatusOr<std::string> TrainBpe(const std::vector<std::string>& documents,
                                     const BpeTrainOptions& options);

// The text files under `dir` (recursively; source, manifest, template and
// prose extensions), sorted by path: the corpus the CLI trains on.
absl::StatusOr<std::vector<std::string>> ReadCorpus(const std::string& dir);

// A tokenizer_config.json declaring the ChatML chat format and its eos token.
std::string ChatMlTokenizerConfig();

}  // namespace crl::policy

#endif  // CRL_LIB_POLICY_BPE_TRAINER_H_
