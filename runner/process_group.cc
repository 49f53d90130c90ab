#include "runner/process_group.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace crl::runner {
namespace {

constexpr size_t kIovMax = 512;  // ranges per system call (IOV_MAX is 1024)

// A /proc file's text; empty when it cannot be read. The process may exit
// between the open and the read (ESRCH): std::ifstream read through an
// istreambuf_iterator throws from there, and an uncaught throw here took
// the whole worker down.
std::string ReadProcFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0) text.clear();
      break;
    }
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

std::string Hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

// Moves whole ranges through process_vm_readv / writev, a batch at a time; a
// short transfer (a range that is not mapped, or protected) is an error.
template <typename Op>
bool Transfer(pid_t pid, const std::vector<MemoryRange>& ranges, char* local, Op op, std::string* error) {
  for (size_t first = 0; first < ranges.size(); first += kIovMax) {
    const size_t n = std::min(kIovMax, ranges.size() - first);
    std::vector<iovec> mine(n), theirs(n);
    size_t want = 0;
    for (size_t i = 0; i < n; ++i) {
      const MemoryRange& r = ranges[first + i];
      theirs[i] = {reinterpret_cast<void*>(r.address), r.length};
      mine[i] = {local, r.length};
      local += r.length;
      want += r.length;
    }
    const ssize_t got = op(pid, mine.data(), n, theirs.data(), n, 0);
    if (got != static_cast<ssize_t>(want)) {
      // Find the first range that did not move whole.
      size_t done = got > 0 ? static_cast<size_t>(got) : 0;
      size_t i = 0;
      while (i < n && done >= ranges[first + i].length) done -= ranges[first + i++].length;
      const MemoryRange& bad = ranges[first + std::min(i, n - 1)];
      if (error) {
        *error = Hex(bad.address) + "+" + std::to_string(bad.length) + ": " +
                 (got < 0 ? std::strerror(errno) : "not all of it is accessible");
      }
      return false;
    }
  }
  return true;
}

}  // namespace

std::vector<pid_t> GroupProcesses(pid_t pgrp) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    // /proc/PID/stat: "pid (comm) state ppid pgrp ..."; comm may hold spaces.
    const std::string text = ReadProcFile((entry.path() / "stat").string());
    const size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 1));
    std::string state;
    long ppid = 0, group = 0;
    if ((rest >> state >> ppid >> group) && group == pgrp) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

pid_t PayloadPid(pid_t pgrp, bool isolated) {
  if (!isolated) return pgrp;
  for (pid_t p : GroupProcesses(pgrp)) {
    // "NSpid:\t<host pid>\t<pid in the sandbox's namespace>"
    std::istringstream status(ReadProcFile("/proc/" + std::to_string(p) + "/status"));
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("NSpid:", 0) != 0) continue;
      std::istringstream ids(line.substr(6));
      std::vector<long> chain;
      for (long id; ids >> id;) chain.push_back(id);
      if (chain.size() >= 2 && chain.back() == 2) return p;
      break;
    }
  }
  return -1;
}

bool WaitStopped(pid_t pid, double timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  for (;;) {
    bool all = true, any = false;
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
      const std::string text = ReadProcFile((task.path() / "stat").string());
      const size_t close = text.rfind(')');
      if (close == std::string::npos || close + 2 >= text.size()) continue;
      any = true;
      // Stopped, traced-stopped, or a thread that has exited (it runs nothing).
      const char state = text[close + 2];
      if (state != 'T' && state != 't' && state != 'Z' && state != 'X') all = false;
    }
    if (ec || !any) return false;
    if (all) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

bool ReadProcessMemory(pid_t pid, const std::vector<MemoryRange>& ranges, std::string* out, std::string* error) {
  uint64_t total = 0;
  for (const auto& r : ranges) total += r.length;
  out->assign(total, '\0');
  return Transfer(pid, ranges, out->data(), process_vm_readv, error);
}

bool WriteProcessMemory(pid_t pid, uint64_t address, const std::string& bytes, std::string* error) {
  std::string copy = bytes;  // process_vm_writev takes a non-const local iovec
  return Transfer(pid, {{address, bytes.size()}}, copy.data(), process_vm_writev, error);
}

}  // namespace crl::runner
