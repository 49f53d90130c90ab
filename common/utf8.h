// UTF-8 hygiene for text that crosses the wire: proto3 `string` fields must
// hold valid UTF-8, and model output or files on disk need not.
#ifndef CRL_COMMON_UTF8_H_
#define CRL_COMMON_UTF8_H_

#include <string>

namespace crl {

// `text` with every invalid UTF-8 sequence (stray continuation bytes,
// truncated sequences, overlong forms, surrogates, code points past
// U+10FFFF) replaced by U+FFFD. Valid text comes back unchanged.
std::string ValidUtf8(const std::string& text);

}  // namespace crl

#endif  // CRL_COMMON_UTF8_H_
