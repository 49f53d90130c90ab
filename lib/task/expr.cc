#include "lib/task/expr.h"

#include <cctype>
#include <limits>

#include "absl/strings/str_cat.h"

namespace crl {
namespace {

// Recursive descent: expr := term (('+'|'-') term)*; term := factor (('*'|'/') factor)*;
// factor := '-' factor | '(' expr ')' | integer | name.
class Parser {
 public:
  Parser(const std::string& text, const SizeSet& sizes) : s_(text), sizes_(sizes) {}

  absl::StatusOr<int64_t> Parse() {
    int64_t v = Expr();
    Skip();
    if (error_.empty() && pos_ != s_.size()) Fail("unexpected character");
    if (!error_.empty()) return absl::InvalidArgumentError(error_);
    return v;
  }

 private:
  void Skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void Fail(const std::string& what) {
    if (error_.empty()) {
      error_ = absl::StrCat("expression '", s_, "' at column ", pos_ + 1, ": ", what);
    }
  }
  int64_t Checked(__int128 v) {
    if (v > std::numeric_limits<int64_t>::max() || v < std::numeric_limits<int64_t>::min()) {
      Fail("overflow");
      return 0;
    }
    return static_cast<int64_t>(v);
  }
  int64_t Expr() {
    int64_t v = Term();
    for (;;) {
      Skip();
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) {
        char op = s_[pos_++];
        int64_t r = Term();
        v = Checked(op == '+' ? __int128(v) + r : __int128(v) - r);
      } else {
        return v;
      }
    }
  }
  int64_t Term() {
    int64_t v = Factor();
    for (;;) {
      Skip();
      if (pos_ < s_.size() && (s_[pos_] == '*' || s_[pos_] == '/')) {
        char op = s_[pos_++];
        int64_t r = Factor();
        if (op == '*') {
          v = Checked(__int128(v) * r);
        } else if (r == 0) {
          Fail("division by zero");
          return 0;
        } else {
          v /= r;
        }
      } else {
        return v;
      }
    }
  }
  int64_t Factor() {
    Skip();
    if (++depth_ > 64) {
      Fail("nested too deeply");
      return 0;
    }
    int64_t v = 0;
    if (pos_ >= s_.size()) {
      Fail("unexpected end");
    } else if (s_[pos_] == '-') {
      ++pos_;
      v = Checked(-__int128(Factor()));
    } else if (s_[pos_] == '(') {
      ++pos_;
      v = Expr();
      Skip();
      if (pos_ < s_.size() && s_[pos_] == ')') {
        ++pos_;
      } else {
        Fail("missing ')'");
      }
    } else if (std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      __int128 acc = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        acc = acc * 10 + (s_[pos_++] - '0');
        if (acc > std::numeric_limits<int64_t>::max()) {
          Fail("number too large");
          return 0;
        }
      }
      v = static_cast<int64_t>(acc);
    } else if (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_') {
      size_t start = pos_;
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
        ++pos_;
      }
      std::string name = s_.substr(start, pos_ - start);
      bool found = false;
      for (const auto& [n, value] : sizes_) {
        if (n == name) {
          v = value;
          found = true;
          break;
        }
      }
      if (!found) {
        pos_ = start;
        Fail(absl::StrCat("unknown size '", name, "'"));
      }
    } else {
      Fail("expected a number, a size name or '('");
    }
    --depth_;
    return v;
  }

  const std::string& s_;
  const SizeSet& sizes_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::string error_;
};

}  // namespace

absl::StatusOr<int64_t> EvalSizeExpr(const std::string& text, const SizeSet& sizes) {
  return Parser(text, sizes).Parse();
}

}  // namespace crl
