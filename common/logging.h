// Minimal structured-enough logging (Debian's Abseil has no absl/log):
//   CRL_LOG(INFO) << "listening on " << addr;
// One line per message on stderr: time, level, file:line, text. Thread-safe.
// CRL_LOG(FATAL) aborts after writing: for broken invariants only.
#ifndef CRL_COMMON_LOGGING_H_
#define CRL_COMMON_LOGGING_H_

#include <sstream>
#include <string>

namespace crl {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kFatal = 4 };

// Messages below this level are dropped. Default kInfo.
void SetMinLogLevel(LogLevel level);
LogLevel MinLogLevel();
// Parses "debug", "info", "warning", "error". False if unknown.
bool ParseLogLevel(const std::string& text, LogLevel* level);

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

}  // namespace crl

#define CRL_LOG_LEVEL_DEBUG ::crl::LogLevel::kDebug
#define CRL_LOG_LEVEL_INFO ::crl::LogLevel::kInfo
#define CRL_LOG_LEVEL_WARNING ::crl::LogLevel::kWarning
#define CRL_LOG_LEVEL_ERROR ::crl::LogLevel::kError
#define CRL_LOG_LEVEL_FATAL ::crl::LogLevel::kFatal

// A for statement (not if/else) so `if (x) CRL_LOG(INFO) << y; else ...`
// binds the else to the caller's if.
#define CRL_LOG(level)                                                      \
  for (bool crl_log_on_ = CRL_LOG_LEVEL_##level >= ::crl::MinLogLevel();    \
       crl_log_on_; crl_log_on_ = false)                                    \
  ::crl::LogMessage(CRL_LOG_LEVEL_##level, __FILE__, __LINE__).stream()

#endif  // CRL_COMMON_LOGGING_H_
