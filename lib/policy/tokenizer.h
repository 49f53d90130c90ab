// Hugging Face tokenizer.json byte-level BPE (the GPT-2 / Llama 3 / Qwen
// family): added tokens, the NFC normaliser, the regex Split + ByteLevel
// pre-tokenizer (PCRE2 with Unicode properties), BPE merges (with
// ignore_merges), the ByteLevel decoder; and the chat formats of those
// families. Checked against the published Qwen3 and Llama 3 tokenizer files
// and an independent implementation (tests/policy).
//
//   CRL_ASSIGN_OR_RETURN(auto tok, Tokenizer::FromFile("model/tokenizer.json"));
//   std::vector<int> ids = tok->Encode("def f(x):\n    return x");
//   std::string text = tok->Decode(ids);
#ifndef CRL_LIB_POLICY_TOKENIZER_H_
#define CRL_LIB_POLICY_TOKENIZER_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace crl::policy {

// The fields of a byte-level BPE tokenizer.json in Hugging Face tokenizers'
// layout, and its one writer (crl's BPE trainer and Tokenizer::ToJson both
// write through it).
struct ByteLevelBpeJson {
  struct Added {
    int id = 0;
    std::string content;
    bool special = true;
  };
  std::vector<std::pair<std::string, int>> vocab;  // token, id
  std::vector<std::pair<std::string, std::string>> merges;  // by rank
  std::vector<Added> added;                                // written in id order
  std::string pattern;                                     // the Split pre-tokenizer's regex
  bool nfc = true;
  bool add_prefix_space = false;
  bool ignore_merges = false;
  // The tokenizer.json text.
  std::string Dump() const;
};

// Thread-safe (encoding caches pieces under a lock).
class Tokenizer {
 public:
  // Parses tokenizer.json text; INVALID_ARGUMENT naming `source` and the
  // part it cannot handle (only byte-level BPE tokenizers are supported).
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromJson(const std::string& json_text,
                                                            const std::string& source);
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromFile(const std::string& path);
  ~Tokenizer();

  // Token ids of `text`. With `parse_special`, special added tokens written
  // in the text ("<|im_end|>") become their ids; without, they are encoded
  // as plain text (what untrusted content must get). Invalid UTF-8 becomes
  // U+FFFD first.
  std::vector<int> Encode(const std::string& text, bool parse_special = true) const;
  // The text of `ids` (bytes: a prefix may end inside a UTF-8 sequence).
  // Ids out of range are skipped.
  std::string Decode(const std::vector<int>& ids, bool skip_special = false) const;

  // The pre-tokenized pieces of `text` (normalised, split by the regex,
  // byte-level mapped), added tokens not recognised: what BPE merges apply
  // to, and what a BPE trainer counts.
  std::vector<std::string> Pieces(const std::string& text) const;

  int vocab_size() const;  // the largest id + 1, added tokens included
  std::optional<int> TokenId(const std::string& token) const;
  // The vocabulary entry of `id` (byte-level text, e.g. "Ġthe"); "" if none.
  std::string TokenText(int id) const;
  bool IsSpecial(int id) const;

  // tokenizer.json text of this tokenizer.
  std::string ToJson() const;

  struct Data;  // the parsed file (tokenizer.cc)
  explicit Tokenizer(std::unique_ptr<Data> data);

 private:
  std::unique_ptr<Data> data_;
};

// The GPT-2 byte-to-unicode table: byte b as the (UTF-8) character that
// stands for it in byte-level vocabularies.
const std::string& ByteLevelChar(unsigned char b);

// The tokenizer of a model directory (DIR/tokenizer.json) or of a
// tokenizer.json path.
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& model_or_file);

// ---- Chat formats -------------------------------------------------------

// ChatML (Qwen):    <|im_start|>role\ncontent<|im_end|>\n ... <|im_start|>assistant\n
// Llama 3:          <|begin_of_text|><|start_header_id|>role<|end_header_id|>\n\n
//                   content<|eot_id|> ... <|start_header_id|>assistant<|end_header_id|>\n\n
// No default system message is added (the families' own templates differ
// there by version); message contents never turn into special tokens.
enum class ChatFormat { kChatML, kLlama3 };
const char* ChatFormatName(ChatFormat format);

// The format a tokenizer_config.json's chat_template implements;
// INVALID_ARGUMENT saying which templates are supported otherwise.
absl::StatusOr<ChatFormat> DetectChatFormat(const std::string& tokenizer_config_json,
                                            const std::string& source);

// The chat format of a model directory's tokenizer_config.json.
absl::StatusOr<ChatFormat> LoadChatFormat(const std::string& model_dir);

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// The ids of `messages` in `format`, ending with the assistant header when
// `add_generation_prompt`. FAILED_PRECONDITION when the tokenizer lacks the
// format's special tokens.
absl::StatusOr<std::vector<int>> EncodeChat(const Tokenizer& tokenizer, ChatFormat format,
                                            const std::vector<ChatMessage>& messages,
                                            bool add_generation_prompt);
// The ids that end an assistant turn in `format` (<|im_end|>, <|eot_id|>).
std::vector<int> EndOfTurnIds(const Tokenizer& tokenizer, ChatFormat format);

}  // namespace crl::policy

#endif  // CRL_LIB_POLICY_TOKENIZER_H_
