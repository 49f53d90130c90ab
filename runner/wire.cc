// runner/wire.cc — see wire.h.
#include "runner/wire.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <new>
#include <cstring>

#include "runner/clock.h"

namespace crl::runner {
namespace {

void AppendLE(std::string* buf, uint64_t v, int bytes) {
  char tmp[8];
  for (int i = 0; i < bytes; ++i) tmp[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  buf->append(tmp, bytes);
}

uint64_t LoadLE(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return v;
}

// Remaining milliseconds until `deadline` (monotonic seconds) for poll();
// -1 when there is no deadline, 0 when it has passed.
int RemainingMs(double deadline) {
  if (deadline <= 0) return -1;
  double left = deadline - MonotonicSeconds();
  if (left <= 0) return 0;
  return static_cast<int>(std::min(left * 1000.0 + 1.0, 2e9));
}

std::string ErrnoText(const char* what, int err) {
  return std::string(what) + ": " + strerror(err);
}

}  // namespace

// ---------------------------------------------------------------------------
// WireWriter

void WireWriter::PutU32(uint32_t v) { AppendLE(&buf_, v, 4); }
void WireWriter::PutI32(int32_t v) { AppendLE(&buf_, static_cast<uint32_t>(v), 4); }
void WireWriter::PutU64(uint64_t v) { AppendLE(&buf_, v, 8); }
void WireWriter::PutI64(int64_t v) { AppendLE(&buf_, static_cast<uint64_t>(v), 8); }
void WireWriter::PutF64(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  PutU64(bits);
}
void WireWriter::PutBool(bool v) { buf_.push_back(v ? 1 : 0); }
void WireWriter::PutString(std::string_view v) {
  PutU64(v.size());
  buf_.append(v.data(), v.size());
}
void WireWriter::PutStringVector(const std::vector<std::string>& v) {
  PutU64(v.size());
  for (const auto& s : v) PutString(s);
}
void WireWriter::PutI64Vector(const std::vector<int64_t>& v) {
  PutU64(v.size());
  for (int64_t x : v) PutI64(x);
}
void WireWriter::PutF64Vector(const std::vector<double>& v) {
  PutU64(v.size());
  for (double x : v) PutF64(x);
}

// ---------------------------------------------------------------------------
// WireReader

bool WireReader::Fail(const char* what) {
  if (ok_) {
    ok_ = false;
    error_ = std::string(what) + " at offset " + std::to_string(pos_) + " of " +
             std::to_string(data_.size());
  }
  return false;
}

bool WireReader::Need(uint64_t n, const char* what) {
  if (!ok_) return false;
  if (n > remaining()) return Fail(what);
  return true;
}

bool WireReader::GetU32(uint32_t* v) {
  if (!Need(4, "truncated u32")) return false;
  *v = static_cast<uint32_t>(LoadLE(data_.data() + pos_, 4));
  pos_ += 4;
  return true;
}
bool WireReader::GetI32(int32_t* v) {
  uint32_t u;
  if (!GetU32(&u)) return false;
  *v = static_cast<int32_t>(u);
  return true;
}
bool WireReader::GetU64(uint64_t* v) {
  if (!Need(8, "truncated u64")) return false;
  *v = LoadLE(data_.data() + pos_, 8);
  pos_ += 8;
  return true;
}
bool WireReader::GetI64(int64_t* v) {
  uint64_t u;
  if (!GetU64(&u)) return false;
  *v = static_cast<int64_t>(u);
  return true;
}
bool WireReader::GetF64(double* v) {
  uint64_t u;
  if (!GetU64(&u)) return false;
  std::memcpy(v, &u, 8);
  return true;
}
bool WireReader::GetBool(bool* v) {
  if (!Need(1, "truncated bool")) return false;
  unsigned char c = static_cast<unsigned char>(data_[pos_]);
  if (c > 1) return Fail("bad bool");
  *v = c != 0;
  ++pos_;
  return true;
}
bool WireReader::GetString(std::string* v) {
  uint64_t n;
  if (!GetU64(&n)) return false;
  if (!Need(n, "string length exceeds payload")) return false;
  v->assign(data_.data() + pos_, n);
  pos_ += n;
  return true;
}
bool WireReader::GetStringVector(std::vector<std::string>* v) {
  uint64_t n;
  if (!GetU64(&n)) return false;
  // Every string takes at least its 8-byte length.
  if (n > remaining() / 8) return Fail("string vector count exceeds payload");
  v->clear();
  v->reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    v->emplace_back();
    if (!GetString(&v->back())) return false;
  }
  return true;
}
bool WireReader::GetI64Vector(std::vector<int64_t>* v) {
  uint64_t n;
  if (!GetU64(&n)) return false;
  if (n > remaining() / 8) return Fail("i64 vector count exceeds payload");
  v->resize(n);
  for (uint64_t i = 0; i < n; ++i) GetI64(&(*v)[i]);
  return ok_;
}
bool WireReader::GetF64Vector(std::vector<double>* v) {
  uint64_t n;
  if (!GetU64(&n)) return false;
  if (n > remaining() / 8) return Fail("f64 vector count exceeds payload");
  v->resize(n);
  for (uint64_t i = 0; i < n; ++i) GetF64(&(*v)[i]);
  return ok_;
}

bool WireReader::GetCount(uint64_t* count, uint64_t min_element_bytes) {
  if (!GetU64(count)) return false;
  if (min_element_bytes > 0 && *count > remaining() / min_element_bytes) {
    return Fail("element count exceeds payload");
  }
  return true;
}

bool WireReader::Finish(std::string* error) {
  if (ok_ && remaining() != 0) Fail("trailing bytes");
  if (!ok_ && error) *error = error_;
  return ok_;
}

// ---------------------------------------------------------------------------
// Frames

namespace {

// Writes all of [data, data+len) honouring the deadline on O_NONBLOCK fds.
bool WriteAll(int fd, const char* data, size_t len, double deadline,
              std::string* error) {
  while (len > 0) {
    ssize_t n = write(fd, data, std::min<size_t>(len, size_t{1} << 30));
    if (n > 0) {
      data += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p = {fd, POLLOUT, 0};
      int ms = RemainingMs(deadline);
      if (ms == 0) {
        if (error) *error = "write timed out";
        return false;
      }
      int r = poll(&p, 1, ms);
      if (r < 0 && errno != EINTR) {
        if (error) *error = ErrnoText("poll", errno);
        return false;
      }
      if (r > 0 && (p.revents & (POLLERR | POLLNVAL))) {
        if (error) *error = "write: peer closed";
        return false;
      }
      continue;
    }
    if (error) *error = ErrnoText("write", n < 0 ? errno : EIO);
    return false;
  }
  return true;
}

enum class ReadOutcome { kOk, kEof, kError, kTimeout };

// Reads exactly len bytes into dst; *got reports progress. With a deadline,
// polls before every read() so blocking fds honour it too.
ReadOutcome ReadChunk(int fd, char* dst, size_t len, double deadline,
                      size_t* got, std::string* error) {
  *got = 0;
  while (*got < len) {
    if (deadline > 0) {
      struct pollfd p = {fd, POLLIN, 0};
      int ms = RemainingMs(deadline);
      if (ms == 0) return ReadOutcome::kTimeout;
      int r = poll(&p, 1, ms);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        if (error) *error = ErrnoText("poll", errno);
        return ReadOutcome::kError;
      }
      if (r == 0) return ReadOutcome::kTimeout;
    }
    ssize_t n = read(fd, dst + *got, std::min<size_t>(len - *got, size_t{1} << 30));
    if (n > 0) {
      *got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return ReadOutcome::kEof;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (deadline > 0) continue;  // poll above
      struct pollfd p = {fd, POLLIN, 0};
      if (poll(&p, 1, -1) < 0 && errno != EINTR) {
        if (error) *error = ErrnoText("poll", errno);
        return ReadOutcome::kError;
      }
      continue;
    }
    if (error) *error = ErrnoText("read", errno);
    return ReadOutcome::kError;
  }
  return ReadOutcome::kOk;
}

}  // namespace

bool WriteFrame(int fd, uint32_t type, std::string_view payload,
                std::string* error, double timeout_seconds) {
  double deadline = timeout_seconds >= 0 ? MonotonicSeconds() + timeout_seconds : 0;
  if (timeout_seconds == 0) deadline = MonotonicSeconds();  // already due
  std::string header;
  header.reserve(kFrameHeaderBytes);
  AppendLE(&header, kFrameMagic, 4);
  AppendLE(&header, type, 4);
  AppendLE(&header, payload.size(), 8);
  if (!WriteAll(fd, header.data(), header.size(), deadline, error)) return false;
  return WriteAll(fd, payload.data(), payload.size(), deadline, error);
}

ReadStatus ReadFrame(int fd, Frame* frame, std::string* error,
                     double timeout_seconds, uint64_t max_payload_bytes) {
  double deadline = timeout_seconds >= 0 ? MonotonicSeconds() + timeout_seconds : 0;
  if (timeout_seconds == 0) deadline = MonotonicSeconds();
  if (max_payload_bytes > kMaxFramePayloadBytes) max_payload_bytes = kMaxFramePayloadBytes;
  char header[kFrameHeaderBytes];
  size_t got = 0;
  ReadOutcome r = ReadChunk(fd, header, sizeof(header), deadline, &got, error);
  if (r == ReadOutcome::kEof) {
    if (got == 0) return ReadStatus::kEof;
    if (error) *error = "EOF inside frame header";
    return ReadStatus::kError;
  }
  if (r == ReadOutcome::kTimeout) {
    if (error) *error = "read timed out";
    return ReadStatus::kTimeout;
  }
  if (r != ReadOutcome::kOk) return ReadStatus::kError;
  uint32_t magic = static_cast<uint32_t>(LoadLE(header, 4));
  if (magic != kFrameMagic) {
    if (error) *error = "bad frame magic";
    return ReadStatus::kError;
  }
  frame->type = static_cast<uint32_t>(LoadLE(header + 4, 4));
  uint64_t len = LoadLE(header + 8, 8);
  if (len > max_payload_bytes) {
    if (error) {
      *error = "frame payload of " + std::to_string(len) + " bytes exceeds limit " +
               std::to_string(max_payload_bytes);
    }
    return ReadStatus::kError;
  }
  // Grow the buffer as bytes arrive so a lying length cannot make us
  // allocate more than what was actually sent (plus one chunk).
  frame->payload.clear();
  const uint64_t kChunk = uint64_t{64} << 20;
  // Address space for the whole frame at once, so the buffer never moves
  // (and never copies what arrived) as it grows; pages are only touched
  // as bytes arrive, so a lying length costs no memory.
  try {
    frame->payload.reserve(std::min<uint64_t>(len, uint64_t{1} << 30));
  } catch (const std::bad_alloc&) {
    // Grown chunk by chunk below instead.
  }
  while (frame->payload.size() < len) {
    uint64_t want = std::min<uint64_t>(len - frame->payload.size(), kChunk);
    size_t old = frame->payload.size();
    frame->payload.resize(old + want);
    r = ReadChunk(fd, &frame->payload[old], want, deadline, &got, error);
    if (r == ReadOutcome::kOk) continue;
    frame->payload.resize(old + got);
    if (r == ReadOutcome::kEof) {
      if (error) *error = "EOF inside frame payload";
      return ReadStatus::kError;
    }
    if (r == ReadOutcome::kTimeout) {
      if (error) *error = "read timed out";
      return ReadStatus::kTimeout;
    }
    return ReadStatus::kError;
  }
  return ReadStatus::kOk;
}

}  // namespace crl::runner
