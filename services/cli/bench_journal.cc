#include "services/cli/bench_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/hash.h"

namespace crl::cli {

using nlohmann::json;

absl::StatusOr<std::unique_ptr<BenchJournal>> BenchJournal::Open(const std::string& path) {
  std::string text;
  if (auto existing = ReadFileToString(path, "journal"); existing.ok()) text = *std::move(existing);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return absl::FailedPreconditionError(absl::StrCat("journal: cannot open ", path, ": ", std::strerror(errno)));
  std::unique_ptr<BenchJournal> j(new BenchJournal(path, fd));
  size_t start = 0;
  int line_no = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    ++line_no;
    if (end == std::string::npos) break;  // torn: written up to the crash
    const json line = json::parse(text.substr(start, end - start), nullptr, false);
    start = end + 1;
    if (line.is_discarded() || !line.contains("key") || !line.contains("outcome")) {
      return absl::DataLossError(absl::StrCat(path, ":", line_no, ": not a journal line (delete the file to start over)"));
    }
    absl::MutexLock lock(&j->mu_);
    j->done_[line["key"].get<std::string>()] = line["outcome"];
  }
  if (start < text.size()) {
    // Drop the torn tail, so the next line starts on a line of its own.
    if (::ftruncate(fd, static_cast<off_t>(start)) != 0) {
      return absl::FailedPreconditionError(absl::StrCat("journal: cannot truncate ", path, ": ", std::strerror(errno)));
    }
  }
  return j;
}

BenchJournal::~BenchJournal() {
  absl::MutexLock lock(&mu_);
  if (fd_ >= 0) ::close(fd_);
}

std::optional<json> BenchJournal::Find(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = done_.find(key);
  if (it == done_.end()) return std::nullopt;
  return it->second;
}

absl::Status BenchJournal::Append(const std::string& key, const json& outcome) {
  const std::string line =
      json{{"key", key}, {"outcome", outcome}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  absl::MutexLock lock(&mu_);
  if (fd_ < 0) return absl::FailedPreconditionError("journal: removed");
  // One write per line (O_APPEND): a crash leaves whole lines and at most
  // one torn tail.
  if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()) || ::fdatasync(fd_) != 0) {
    return absl::UnavailableError(absl::StrCat("journal: cannot append to ", path_, ": ", std::strerror(errno)));
  }
  done_[key] = outcome;
  return absl::OkStatus();
}

size_t BenchJournal::size() const {
  absl::MutexLock lock(&mu_);
  return done_.size();
}

absl::Status BenchJournal::Remove() {
  absl::MutexLock lock(&mu_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
    return absl::UnavailableError(absl::StrCat("journal: cannot remove ", path_, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

std::string BenchJournal::Key(const std::string& settings, const std::string& task, const std::string& source) {
  return Sha256Hex(absl::StrCat(settings.size(), ":", settings, task.size(), ":", task, source.size(), ":", source));
}

}  // namespace crl::cli
