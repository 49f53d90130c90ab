#include "common/command.h"

#include <array>
#include <cstdio>

#include "absl/strings/strip.h"

namespace crl {

std::string CommandLine(const std::string& command, bool last) {
  std::string out;
  if (FILE* p = popen((command + " 2>/dev/null").c_str(), "r")) {
    std::array<char, 512> buf;
    while (fgets(buf.data(), buf.size(), p)) {
      std::string line(absl::StripTrailingAsciiWhitespace(buf.data()));
      if (line.empty()) continue;
      if (!last && !out.empty()) continue;
      out = line;
    }
    pclose(p);
  }
  return out;
}

}  // namespace crl
