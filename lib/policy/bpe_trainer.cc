#include "lib/policy/bpe_trainer.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <queue>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status.h"
#include "lib/policy/tokenizer.h"

namespace crl::policy {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Qwen's pre-tokenizer: contractions, letters with one leading non-letter,
// single digits, punctuation runs, newlines, spaces.
constexpr char kPattern[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A tokenizer with the 256 byte symbols and no merges: the pre-tokenizer.
absl::StatusOr<std::unique_ptr<Tokenizer>> ByteTokenizer() {
  ByteLevelBpeJson bytes;
  for (int b = 0; b < 256; ++b) bytes.vocab.emplace_back(ByteLevelChar(static_cast<unsigned char>(b)), b);
  bytes.pattern = kPattern;
  return Tokenizer::FromJson(bytes.Dump(), "byte tokenizer");
}

using Pair = std::pair<int, int>;
struct PairHash {
  size_t operator()(const Pair& p) const {
    return std::hash<uint64_t>()((uint64_t(uint32_t(p.first)) << 32) | uint32_t(p.second));
  }
};

}  // namespace

absl::StatusOr<std::string> TrainBpe(const std::vector<std::string>& documents,
                                     const BpeTrainOptions& options) {
  const int specials = static_cast<int>(options.special_tokens.size());
  if (options.vocab_size < 256 + specials) {
    return absl::InvalidArgumentError(
        absl::StrCat("vocab: ", options.vocab_size, " is below 256 bytes + ", specials,
                     " special tokens"));
  }
  CRL_ASSIGN_OR_RETURN(auto pre, ByteTokenizer());
  // Words (byte-level pieces) and how often each occurs.
  std::unordered_map<std::string, int64_t> counts;
  for (const std::string& doc : documents) {
    for (std::string& piece : pre->Pieces(doc)) ++counts[std::move(piece)];
  }
  std::vector<std::string> tokens;  // id -> text
  std::unordered_map<std::string, int> ids;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(ByteLevelChar(static_cast<unsigned char>(b)));
    ids[tokens.back()] = b;
  }
  // Each word as symbol ids, sorted so the run is deterministic.
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::vector<int>> words;
  std::vector<int64_t> freq;
  for (const auto& [word, n] : sorted) {
    std::vector<int> syms;
    for (size_t i = 0; i < word.size();) {
      size_t start = i++;
      while (i < word.size() && (static_cast<unsigned char>(word[i]) & 0xC0) == 0x80) ++i;
      syms.push_back(ids.at(word.substr(start, i - start)));
    }
    words.push_back(std::move(syms));
    freq.push_back(n);
  }
  std::unordered_map<Pair, int64_t, PairHash> pair_count;
  std::unordered_map<Pair, std::set<int>, PairHash> where;
  for (int w = 0; w < static_cast<int>(words.size()); ++w) {
    for (size_t i = 0; i + 1 < words[w].size(); ++i) {
      Pair p{words[w][i], words[w][i + 1]};
      pair_count[p] += freq[w];
      where[p].insert(w);
    }
  }
  // A max-heap of (count, pair) with lazy updates: a popped entry whose
  // count is stale is pushed again with the current count.
  struct Entry {
    int64_t count;
    Pair pair;
  };
  auto worse = [&](const Entry& a, const Entry& b) {
    if (a.count != b.count) return a.count < b.count;
    const std::string& a0 = tokens[a.pair.first];
    const std::string& b0 = tokens[b.pair.first];
    if (a0 != b0) return a0 > b0;
    return tokens[a.pair.second] > tokens[b.pair.second];
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(worse)> heap(worse);
  for (const auto& [p, c] : pair_count) heap.push({c, p});
  std::vector<std::pair<std::string, std::string>> merges;
  const int target = options.vocab_size - specials;
  while (static_cast<int>(tokens.size()) < target && !heap.empty()) {
    Entry top = heap.top();
    heap.pop();
    auto current = pair_count.find(top.pair);
    const int64_t now = current == pair_count.end() ? 0 : current->second;
    if (now != top.count) {
      if (now > 0) heap.push({now, top.pair});
      continue;
    }
    if (now < options.min_frequency) break;
    // Two merges may spell the same token ("ab"+"c", "a"+"bc"): one id.
    const std::string text = tokens[top.pair.first] + tokens[top.pair.second];
    int merged;
    if (auto known = ids.find(text); known != ids.end()) {
      merged = known->second;
    } else {
      merged = static_cast<int>(tokens.size());
      tokens.push_back(text);
      ids[text] = merged;
    }
    merges.emplace_back(tokens[top.pair.first], tokens[top.pair.second]);
    std::set<int> affected = std::move(where[top.pair]);
    where.erase(top.pair);
    std::unordered_map<Pair, int64_t, PairHash> touched;
    for (int w : affected) {
      std::vector<int>& s = words[w];
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        pair_count[{s[i], s[i + 1]}] -= freq[w];
      }
      std::vector<int> out;
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == top.pair.first && s[i + 1] == top.pair.second) {
          out.push_back(merged);
          ++i;
        } else {
          out.push_back(s[i]);
        }
      }
      s = std::move(out);
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        Pair p{s[i], s[i + 1]};
        pair_count[p] += freq[w];
        where[p].insert(w);
        touched[p] = pair_count[p];
      }
    }
    pair_count.erase(top.pair);
    for (const auto& [p, c] : touched) {
      if (c > 0) heap.push({c, p});
    }
  }

  ByteLevelBpeJson out;
  for (size_t id = 0; id < tokens.size(); ++id) out.vocab.emplace_back(tokens[id], static_cast<int>(id));
  out.merges = merges;
  for (int i = 0; i < specials; ++i) {
    out.added.push_back({static_cast<int>(tokens.size()) + i, options.special_tokens[i], true});
  }
  out.pattern = kPattern;
  return out.Dump();
}

absl::StatusOr<std::vector<std::string>> ReadCorpus(const std::string& dir) {
  static const std::set<std::string> kText = {".py", ".cc", ".cu", ".h", ".cpp", ".yaml",
                                              ".md", ".tmpl", ".txt", ".json"};
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return absl::NotFoundError(absl::StrCat("corpus: no directory ", dir));
  std::vector<std::string> paths;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file() && kText.count(e.path().extension().string())) {
      paths.push_back(e.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> docs;
  for (const auto& p : paths) {
    CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(p, "corpus file"));
    docs.push_back(std::move(text));
  }
  if (docs.empty()) return absl::NotFoundError(absl::StrCat("corpus: no text files under ", dir));
  return docs;
}

std::string ChatMlTokenizerConfig() {
  json j = {{"chat_template",
             "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
             "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if "
             "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"},
            {"eos_token", "<|im_end|>"},
            {"pad_token", "<|endoftext|>"},
            {"bos_token", nullptr},
            {"tokenizer_class", "PreTrainedTokenizerFast"},
            {"model_max_length", 32768}};
  return j.dump(2) + "\n";
}

}  // namespace crl::policy
