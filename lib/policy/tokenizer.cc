#include "lib/policy/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/file.h"
#include "common/status.h"
#include "common/utf8.h"

namespace crl::policy {
namespace {

using nlohmann::json;

// GPT-2's pre-tokenizer regex (ByteLevel with use_regex: true).
constexpr char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string Utf8(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return out;
}

struct ByteTables {
  std::array<std::string, 256> to_char;
  std::unordered_map<uint32_t, unsigned char> to_byte;  // code point -> byte
  ByteTables() {
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
      const uint32_t cp = printable ? b : 256 + extra++;
      to_char[b] = Utf8(cp);
      to_byte[cp] = static_cast<unsigned char>(b);
    }
  }
};

const ByteTables& Tables() {
  static const ByteTables* tables = new ByteTables();
  return *tables;
}

// Decodes one UTF-8 code point at s[*i] (valid input assumed).
uint32_t NextCodePoint(const std::string& s, size_t* i) {
  const unsigned char c = s[*i];
  int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
  uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
  for (int k = 1; k < len && *i + k < s.size(); ++k) cp = (cp << 6) | (s[*i + k] & 0x3F);
  *i += len;
  return cp;
}

struct AddedToken {
  int id = 0;
  std::string content;
  bool special = false;
};

absl::Status Unsupported(const std::string& source, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": ", what, " (crl reads byte-level BPE tokenizers)"));
}

}  // namespace

struct Tokenizer::Data {
  std::string source;
  std::unordered_map<std::string, int> vocab;
  std::vector<std::string> id_to_token;
  std::vector<std::pair<std::string, std::string>> merges;
  std::unordered_map<std::string, int> merge_rank;  // "a b" -> rank
  std::vector<AddedToken> added;                    // longest first
  std::vector<bool> special;
  bool nfc = false;
  bool ignore_merges = false;
  bool add_prefix_space = false;
  std::string pattern;
  pcre2_code* re = nullptr;
  mutable absl::Mutex mu;
  mutable std::unordered_map<std::string, std::vector<int>> cache ABSL_GUARDED_BY(mu);

  ~Data() {
    if (re) pcre2_code_free(re);
  }

  // Ids of one pre-tokenized piece (already byte-level mapped).
  std::vector<int> Bpe(const std::string& piece) const {
    if (ignore_merges) {
      auto it = vocab.find(piece);
      if (it != vocab.end()) return {it->second};
    }
    std::vector<std::string> syms;
    for (size_t i = 0; i < piece.size();) {
      size_t start = i;
      NextCodePoint(piece, &i);
      syms.push_back(piece.substr(start, i - start));
    }
    while (syms.size() > 1) {
      int best = -1, best_rank = INT32_MAX;
      for (size_t i = 0; i + 1 < syms.size(); ++i) {
        auto it = merge_rank.find(syms[i] + " " + syms[i + 1]);
        if (it != merge_rank.end() && it->second < best_rank) {
          best_rank = it->second;
          best = static_cast<int>(i);
        }
      }
      if (best < 0) break;
      syms[best] += syms[best + 1];
      syms.erase(syms.begin() + best + 1);
    }
    std::vector<int> ids;
    for (const auto& s : syms) {
      auto it = vocab.find(s);
      if (it != vocab.end()) ids.push_back(it->second);
    }
    return ids;
  }

  // Calls fn(piece) for each pre-tokenized piece of text without added
  // tokens, byte-level mapped.
  template <typename Fn>
  void ForEachPiece(const std::string& raw, Fn fn) const {
    std::string text = raw;
    if (nfc) {
      UErrorCode err = U_ZERO_ERROR;
      const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(err);
      if (U_SUCCESS(err)) {
        icu::UnicodeString u = n->normalize(icu::UnicodeString::fromUTF8(raw), err);
        if (U_SUCCESS(err)) {
          text.clear();
          u.toUTF8String(text);
        }
      }
    }
    if (add_prefix_space && !text.empty() && text[0] != ' ') text.insert(0, " ");
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(re, nullptr);
    auto emit = [&](size_t from, size_t to) {
      if (to <= from) return;
      std::string mapped;
      for (size_t i = from; i < to; ++i) {
        mapped += Tables().to_char[static_cast<unsigned char>(text[i])];
      }
      fn(std::move(mapped));
    };
    size_t pos = 0, last = 0;
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    while (pos <= text.size()) {
      int rc = pcre2_match(re, subject, text.size(), pos, 0, md, nullptr);
      if (rc < 0) break;
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      size_t start = ov[0], end = ov[1];
      if (end == start) {  // an empty match: step over one character
        if (start >= text.size()) break;
        size_t next = start;
        NextCodePoint(text, &next);
        pos = next;
        continue;
      }
      emit(last, start);  // the text between matches is a piece too ("Isolated")
      emit(start, end);
      last = pos = end;
    }
    emit(last, text.size());
    pcre2_match_data_free(md);
  }

  // Ids of text without added tokens.
  void EncodeOrdinary(const std::string& text, std::vector<int>* out) const {
    ForEachPiece(text, [&](std::string mapped) {
      {
        absl::MutexLock lock(&mu);
        auto it = cache.find(mapped);
        if (it != cache.end()) {
          out->insert(out->end(), it->second.begin(), it->second.end());
          return;
        }
      }
      std::vector<int> ids = Bpe(mapped);
      out->insert(out->end(), ids.begin(), ids.end());
      absl::MutexLock lock(&mu);
      if (cache.size() > 200000) cache.clear();
      cache.emplace(std::move(mapped), std::move(ids));
    });
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Data> data) : data_(std::move(data)) {}
Tokenizer::~Tokenizer() = default;

const std::string& ByteLevelChar(unsigned char b) { return Tables().to_char[b]; }

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(const std::string& text,
                                                               const std::string& source) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(source, ": not a JSON object"));
  auto d = std::make_unique<Data>();
  d->source = source;
  try {
    const json& model = j.at("model");
    if (model.value("type", "") != "BPE") return Unsupported(source, "model.type is not BPE");
    if (model.value("byte_fallback", false)) return Unsupported(source, "byte_fallback");
    d->ignore_merges = model.value("ignore_merges", false);
    for (auto it = model.at("vocab").begin(); it != model.at("vocab").end(); ++it) {
      d->vocab[it.key()] = it->get<int>();
    }
    int rank = 0;
    for (const auto& m : model.at("merges")) {
      std::string a, b;
      if (m.is_array() && m.size() == 2) {
        a = m[0].get<std::string>();
        b = m[1].get<std::string>();
      } else if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const size_t sp = s.find(' ', 1);
        if (sp == std::string::npos) {
          return absl::InvalidArgumentError(absl::StrCat(source, ": merge '", s, "' has no space"));
        }
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else {
        return absl::InvalidArgumentError(absl::StrCat(source, ": merge #", rank, " is malformed"));
      }
      if (!d->vocab.count(a + b)) {
        return absl::InvalidArgumentError(
            absl::StrCat(source, ": merge '", a, " ", b, "' makes a token not in the vocabulary"));
      }
      d->merge_rank.emplace(a + " " + b, rank++);
      d->merges.emplace_back(std::move(a), std::move(b));
    }
    for (const auto& t : j.value("added_tokens", json::array())) {
      AddedToken a{t.at("id").get<int>(), t.at("content").get<std::string>(),
                   t.value("special", false)};
      if (a.content.empty() || a.id < 0) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": an added token is empty"));
      }
      d->added.push_back(std::move(a));
    }
    // Normaliser.
    const json& norm = j.contains("normalizer") ? j["normalizer"] : json(nullptr);
    if (norm.is_object()) {
      if (norm.value("type", "") != "NFC") {
        return Unsupported(source, absl::StrCat("normalizer ", norm.value("type", "?")));
      }
      d->nfc = true;
    }
    // Pre-tokenizer: ByteLevel (GPT-2 regex), or Split(Regex, Isolated) then
    // ByteLevel without its regex.
    const json& pre = j.at("pre_tokenizer");
    const std::string pre_type = pre.value("type", "");
    if (pre_type == "ByteLevel") {
      if (!pre.value("use_regex", true)) return Unsupported(source, "ByteLevel without a regex alone");
      d->pattern = kGpt2Pattern;
      d->add_prefix_space = pre.value("add_prefix_space", false);
    } else if (pre_type == "Sequence") {
      const json& seq = pre.at("pretokenizers");
      if (seq.size() != 2 || seq[0].value("type", "") != "Split" ||
          seq[1].value("type", "") != "ByteLevel" || seq[1].value("use_regex", true)) {
        return Unsupported(source, "a pre_tokenizer sequence other than Split + ByteLevel");
      }
      if (seq[0].value("behavior", "") != "Isolated" || seq[0].value("invert", false)) {
        return Unsupported(source, "a Split that is not Isolated");
      }
      d->pattern = seq[0].at("pattern").at("Regex").get<std::string>();
      d->add_prefix_space = seq[1].value("add_prefix_space", false);
    } else {
      return Unsupported(source, absl::StrCat("pre_tokenizer ", pre_type));
    }
    const json& dec = j.contains("decoder") ? j["decoder"] : json(nullptr);
    if (dec.is_object() && dec.value("type", "") != "ByteLevel") {
      return Unsupported(source, absl::StrCat("decoder ", dec.value("type", "?")));
    }
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", e.what()));
  }
  for (int b = 0; b < 256; ++b) {
    if (!d->vocab.count(Tables().to_char[b])) {
      return Unsupported(source, absl::StrCat("the vocabulary lacks byte ", b));
    }
  }
  int error = 0;
  PCRE2_SIZE offset = 0;
  d->re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(d->pattern.data()), d->pattern.size(),
                        PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (!d->re) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(error, msg, sizeof(msg));
    return absl::InvalidArgumentError(absl::StrCat(source, ": pre-tokenizer regex at ", offset,
                                                   ": ", reinterpret_cast<char*>(msg)));
  }
  pcre2_jit_compile(d->re, PCRE2_JIT_COMPLETE);  // a speed-up; matching works without it
  int size = 0;
  for (const auto& [token, id] : d->vocab) size = std::max(size, id + 1);
  for (const auto& a : d->added) size = std::max(size, a.id + 1);
  d->id_to_token.assign(size, "");
  d->special.assign(size, false);
  for (const auto& [token, id] : d->vocab) d->id_to_token[id] = token;
  for (const auto& a : d->added) {
    d->id_to_token[a.id] = a.content;
    d->special[a.id] = a.special;
  }
  std::stable_sort(d->added.begin(), d->added.end(), [](const AddedToken& a, const AddedToken& b) {
    return a.content.size() > b.content.size();
  });
  return std::make_unique<Tokenizer>(std::move(d));
}

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromFile(const std::string& path) {
  CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, "tokenizer"));
  return FromJson(text, path);
}

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& model_or_file) {
  std::error_code ec;
  const std::string path = std::filesystem::is_directory(model_or_file, ec)
                               ? (std::filesystem::path(model_or_file) / "tokenizer.json").string()
                               : model_or_file;
  return Tokenizer::FromFile(path);
}

absl::StatusOr<ChatFormat> LoadChatFormat(const std::string& model_dir) {
  const std::string path = (std::filesystem::path(model_dir) / "tokenizer_config.json").string();
  CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, "tokenizer config"));
  return DetectChatFormat(text, path);
}

std::vector<int> Tokenizer::Encode(const std::string& raw, bool parse_special) const {
  const std::string text = ValidUtf8(raw);
  std::vector<int> out;
  size_t segment = 0;
  for (size_t i = 0; i < text.size();) {
    const AddedToken* hit = nullptr;
    for (const AddedToken& a : data_->added) {  // longest first
      if (!parse_special && a.special) continue;
      if (text.compare(i, a.content.size(), a.content) == 0) {
        hit = &a;
        break;
      }
    }
    if (!hit) {
      ++i;
      continue;
    }
    data_->EncodeOrdinary(text.substr(segment, i - segment), &out);
    out.push_back(hit->id);
    i += hit->content.size();
    segment = i;
  }
  data_->EncodeOrdinary(text.substr(segment), &out);
  return out;
}

std::string Tokenizer::Decode(const std::vector<int>& ids, bool skip_special) const {
  std::string out;
  const ByteTables& t = Tables();
  for (int id : ids) {
    if (id < 0 || id >= static_cast<int>(data_->id_to_token.size())) continue;
    if (data_->special[id]) {
      if (!skip_special) out += data_->id_to_token[id];
      continue;
    }
    const std::string& token = data_->id_to_token[id];
    if (!data_->vocab.count(token)) {  // an added token that is not special
      out += token;
      continue;
    }
    for (size_t i = 0; i < token.size();) {
      const size_t start = i;
      const uint32_t cp = NextCodePoint(token, &i);
      auto b = t.to_byte.find(cp);
      if (b != t.to_byte.end()) out.push_back(static_cast<char>(b->second));
      else out.append(token, start, i - start);
    }
  }
  return out;
}

std::vector<std::string> Tokenizer::Pieces(const std::string& text) const {
  std::vector<std::string> pieces;
  data_->ForEachPiece(ValidUtf8(text), [&](std::string p) { pieces.push_back(std::move(p)); });
  return pieces;
}

int Tokenizer::vocab_size() const { return static_cast<int>(data_->id_to_token.size()); }

std::optional<int> Tokenizer::TokenId(const std::string& token) const {
  for (const AddedToken& a : data_->added) {
    if (a.content == token) return a.id;
  }
  auto it = data_->vocab.find(token);
  if (it == data_->vocab.end()) return std::nullopt;
  return it->second;
}

std::string Tokenizer::TokenText(int id) const {
  if (id < 0 || id >= vocab_size()) return "";
  return data_->id_to_token[id];
}

bool Tokenizer::IsSpecial(int id) const {
  return id >= 0 && id < vocab_size() && data_->special[id];
}

std::string ByteLevelBpeJson::Dump() const {
  std::vector<Added> by_id = added;
  std::sort(by_id.begin(), by_id.end(), [](const Added& x, const Added& y) { return x.id < y.id; });
  json added_list = json::array();
  for (const Added& a : by_id) {
    added_list.push_back({{"id", a.id}, {"content", a.content}, {"single_word", false}, {"lstrip", false},
                          {"rstrip", false}, {"normalized", false}, {"special", a.special}});
  }
  json vocab_map = json::object();
  for (const auto& [token, id] : vocab) vocab_map[token] = id;
  json merge_list = json::array();
  for (const auto& [x, y] : merges) merge_list.push_back({x, y});
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space},
                           {"trim_offsets", false}, {"use_regex", false}};
  const json j = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added_list},
      {"normalizer", nfc ? json{{"type", "NFC"}} : json(nullptr)},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
          byte_level}}}},
      {"post_processor", nullptr},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false},
        {"ignore_merges", ignore_merges}, {"vocab", vocab_map}, {"merges", merge_list}}}};
  return j.dump(1) + "\n";
}

std::string Tokenizer::ToJson() const {
  ByteLevelBpeJson out;
  for (const AddedToken& a : data_->added) out.added.push_back({a.id, a.content, a.special});
  out.vocab.assign(data_->vocab.begin(), data_->vocab.end());
  out.merges = data_->merges;
  out.pattern = data_->pattern;
  out.nfc = data_->nfc;
  out.add_prefix_space = data_->add_prefix_space;
  out.ignore_merges = data_->ignore_merges;
  return out.Dump();
}

// ---- Chat formats -----------------------------------------------------------

const char* ChatFormatName(ChatFormat format) {
  return format == ChatFormat::kLlama3 ? "llama3" : "chatml";
}

absl::StatusOr<ChatFormat> DetectChatFormat(const std::string& config_json,
                                            const std::string& source) {
  json j = json::parse(config_json, nullptr, false);
  std::string tmpl;
  if (j.is_object() && j.contains("chat_template") && j["chat_template"].is_string()) {
    tmpl = j["chat_template"].get<std::string>();
  }
  if (tmpl.find("<|im_start|>") != std::string::npos) return ChatFormat::kChatML;
  if (tmpl.find("<|start_header_id|>") != std::string::npos) return ChatFormat::kLlama3;
  return absl::InvalidArgumentError(absl::StrCat(
      source, ": chat_template is ", tmpl.empty() ? "missing" : "not one crl implements",
      "; supported: ChatML (<|im_start|>, Qwen) and Llama 3 (<|start_header_id|>)"));
}

absl::StatusOr<std::vector<int>> EncodeChat(const Tokenizer& tok, ChatFormat format,
                                            const std::vector<ChatMessage>& messages,
                                            bool add_generation_prompt) {
  auto special = [&](const char* name) -> absl::StatusOr<int> {
    auto id = tok.TokenId(name);
    if (!id) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the tokenizer has no ", name, " token, which the ", ChatFormatName(format),
          " chat format needs"));
    }
    return *id;
  };
  std::vector<int> ids;
  auto text = [&](const std::string& s) {
    std::vector<int> t = tok.Encode(s, /*parse_special=*/false);
    ids.insert(ids.end(), t.begin(), t.end());
  };
  if (format == ChatFormat::kChatML) {
    CRL_ASSIGN_OR_RETURN(int start, special("<|im_start|>"));
    CRL_ASSIGN_OR_RETURN(int end, special("<|im_end|>"));
    for (const ChatMessage& m : messages) {
      ids.push_back(start);
      text(m.role + "\n" + m.content);
      ids.push_back(end);
      text("\n");
    }
    if (add_generation_prompt) {
      ids.push_back(start);
      text("assistant\n");
    }
    return ids;
  }
  CRL_ASSIGN_OR_RETURN(int bos, special("<|begin_of_text|>"));
  CRL_ASSIGN_OR_RETURN(int header_start, special("<|start_header_id|>"));
  CRL_ASSIGN_OR_RETURN(int header_end, special("<|end_header_id|>"));
  CRL_ASSIGN_OR_RETURN(int eot, special("<|eot_id|>"));
  ids.push_back(bos);
  auto trim = [](const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  for (const ChatMessage& m : messages) {
    ids.push_back(header_start);
    text(m.role);
    ids.push_back(header_end);
    text("\n\n" + trim(m.content));
    ids.push_back(eot);
  }
  if (add_generation_prompt) {
    ids.push_back(header_start);
    text("assistant");
    ids.push_back(header_end);
    text("\n\n");
  }
  return ids;
}

std::vector<int> EndOfTurnIds(const Tokenizer& tok, ChatFormat format) {
  std::vector<int> ids;
  for (const char* name : format == ChatFormat::kChatML
                              ? std::vector<const char*>{"<|im_end|>", "<|endoftext|>"}
                              : std::vector<const char*>{"<|eot_id|>", "<|end_of_text|>"}) {
    if (auto id = tok.TokenId(name)) ids.push_back(*id);
  }
  return ids;
}

}  // namespace crl::policy
