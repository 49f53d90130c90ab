#include "common/resolve.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace crl {
namespace {

constexpr absl::string_view kDns = "dns:///";

}  // namespace

bool HasDnsEntries(const std::vector<std::string>& specs) {
  return std::any_of(specs.begin(), specs.end(), [](const std::string& s) { return absl::StartsWith(s, kDns); });
}

absl::StatusOr<std::vector<std::string>> ResolveAddresses(const std::vector<std::string>& specs) {
  std::vector<std::string> out;
  auto add = [&](std::string a) {
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(std::move(a));
  };
  for (const std::string& spec : specs) {
    if (!absl::StartsWith(spec, kDns)) {
      add(spec);
      continue;
    }
    const std::string target = spec.substr(kDns.size());
    const size_t colon = target.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == target.size()) {
      return absl::InvalidArgumentError(absl::StrCat("'", spec, "': expected dns:///NAME:PORT"));
    }
    const std::string name = target.substr(0, colon), port = target.substr(colon + 1);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = getaddrinfo(name.c_str(), port.c_str(), &hints, &res);
    if (rc != 0 || res == nullptr) {
      return absl::UnavailableError(absl::StrCat("'", spec, "': ", rc != 0 ? gai_strerror(rc) : "no address"));
    }
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      char host[INET6_ADDRSTRLEN] = {};
      if (a->ai_family == AF_INET) {
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, host, sizeof host);
        add(absl::StrCat(host, ":", port));
      } else if (a->ai_family == AF_INET6) {
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, host, sizeof host);
        add(absl::StrCat("[", host, "]:", port));
      }
    }
    freeaddrinfo(res);
  }
  return out;
}

}  // namespace crl
