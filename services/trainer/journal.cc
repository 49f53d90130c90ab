#include "services/trainer/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace crl::trainer {
namespace {

namespace fs = std::filesystem;

// Segment numbers in `dir`, ascending.
std::vector<int64_t> Segments(const std::string& dir) {
  std::vector<int64_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    int64_t n = 0;
    if (name.rfind("journal-", 0) == 0 && name.size() > 12 && name.substr(name.size() - 4) == ".bin" &&
        absl::SimpleAtoi(name.substr(8, name.size() - 12), &n)) {
      out.push_back(n);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string SegmentPath(const std::string& dir, int64_t n) {
  return (fs::path(dir) / absl::StrCat("journal-", n, ".bin")).string();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Journal>> Journal::Open(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat(dir, ": ", ec.message()));
  const std::vector<int64_t> existing = Segments(dir);
  std::unique_ptr<Journal> j(new Journal(dir, existing.empty() ? 1 : existing.back() + 1));
  if (absl::Status s = j->OpenSegment(); !s.ok()) return s;
  return j;
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status Journal::OpenSegment() {
  const std::string path = SegmentPath(dir_, segment_);
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd_ < 0) return absl::UnavailableError(absl::StrCat(path, ": ", std::strerror(errno)));
  // The new name must survive a crash too.
  const int d = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d >= 0) {
    ::fsync(d);
    ::close(d);
  }
  return absl::OkStatus();
}

absl::Status Journal::Write(char kind, const std::string& bytes) {
  std::string record(1, kind);
  const uint32_t n = static_cast<uint32_t>(bytes.size());
  record.append(reinterpret_cast<const char*>(&n), sizeof n);
  record += bytes;
  size_t done = 0;
  while (done < record.size()) {
    const ssize_t w = ::write(fd_, record.data() + done, record.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return absl::UnavailableError(absl::StrCat("journal ", SegmentPath(dir_, segment_), ": ", std::strerror(errno)));
    done += static_cast<size_t>(w);
  }
  if (::fdatasync(fd_) != 0) {
    return absl::UnavailableError(absl::StrCat("journal ", SegmentPath(dir_, segment_), ": fdatasync: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status Journal::Append(const v1::SubmitGroupRequest& request) { return Write('G', request.SerializeAsString()); }

absl::Status Journal::Append(const v1::SubmitExamplesRequest& request) {
  return Write('E', request.SerializeAsString());
}

absl::StatusOr<int64_t> Journal::Rotate() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ++segment_;
  if (absl::Status s = OpenSegment(); !s.ok()) return s;
  return segment_;
}

void Journal::DropBefore(int64_t segment) {
  std::error_code ec;
  for (int64_t n : Segments(dir_)) {
    if (n < segment) fs::remove(SegmentPath(dir_, n), ec);
  }
}

absl::Status Journal::Replay(const std::string& dir,
                             const std::function<void(const v1::SubmitGroupRequest&)>& on_group,
                             const std::function<void(const v1::SubmitExamplesRequest&)>& on_examples) {
  for (int64_t n : Segments(dir)) {
    std::ifstream in(SegmentPath(dir, n), std::ios::binary);
    for (;;) {
      char kind = 0;
      uint32_t len = 0;
      if (!in.get(kind) || !in.read(reinterpret_cast<char*>(&len), sizeof len)) break;
      std::string bytes(len, '\0');
      if (!in.read(bytes.data(), len)) break;  // torn by a crash mid-append
      if (kind == 'G') {
        v1::SubmitGroupRequest r;
        if (!r.ParseFromString(bytes)) break;
        on_group(r);
      } else if (kind == 'E') {
        v1::SubmitExamplesRequest r;
        if (!r.ParseFromString(bytes)) break;
        on_examples(r);
      } else {
        break;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace crl::trainer
