// tests/runner/sandbox_exec.cc — crl_sandbox_exec: run one command under
// SpawnSandboxed from the shell (debugging aid; not a test).
//
//   crl_sandbox_exec [--no-isolate] [--root] [--timeout=S] [--as=BYTES]
//                    [--dev=/dev/x]... [--ro=PATH]... [--rw=PATH]...
//                    [--env=K=V]... [--pass-env=K]... [--no-mask]
//                    [--seccomp=none|compiler] -- CMD ARGS...
// Prints the command's output, then ExitInfo::Describe() on stderr.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runner/sandbox.h"
#include "runner/seccomp.h"

int main(int argc, char** argv) {
  using namespace crl::runner;
  SandboxPolicy p;
  p.wall_timeout_seconds = 60;
  std::vector<std::string> cmd;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&](const char* prefix) { return a.substr(std::string(prefix).size()); };
    if (a == "--") {
      cmd.assign(argv + i + 1, argv + argc);
      break;
    } else if (a == "--no-isolate") {
      p.isolate_namespaces = false;
    } else if (a == "--root") {
      p.run_as_uid = p.run_as_gid = -1;
    } else if (a == "--no-mask") {
      p.masked_paths.clear();
    } else if (a.rfind("--timeout=", 0) == 0) {
      p.wall_timeout_seconds = std::atof(val("--timeout=").c_str());
    } else if (a.rfind("--as=", 0) == 0) {
      p.address_space_bytes = std::strtoull(val("--as=").c_str(), nullptr, 10);
    } else if (a.rfind("--dev=", 0) == 0) {
      p.extra_device_nodes.push_back(val("--dev="));
    } else if (a.rfind("--ro=", 0) == 0) {
      p.readonly_paths.push_back(val("--ro="));
    } else if (a.rfind("--rw=", 0) == 0) {
      p.writable_paths.push_back(val("--rw="));
    } else if (a.rfind("--env=", 0) == 0) {
      p.env.push_back(val("--env="));
    } else if (a.rfind("--pass-env=", 0) == 0) {
      const char* v = std::getenv(val("--pass-env=").c_str());
      if (v != nullptr) p.env.push_back(val("--pass-env=") + "=" + v);
    } else if (a.rfind("--seccomp=", 0) == 0) {
      if (!SeccompProfileFromName(val("--seccomp="), &p.seccomp)) {
        std::fprintf(stderr, "bad profile\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (cmd.empty()) {
    std::fprintf(stderr, "usage: crl_sandbox_exec [options] -- CMD ARGS...\n");
    return 2;
  }
  std::string error;
  auto proc = SpawnSandboxed(p, cmd, &error);
  if (!proc) {
    std::fprintf(stderr, "spawn: %s\n", error.c_str());
    return 2;
  }
  proc->CloseToChild();
  ExitInfo info = proc->Wait();
  std::fwrite(info.log.data(), 1, info.log.size(), stdout);
  std::fprintf(stderr, "[crl_sandbox_exec] %s\n", info.Describe().c_str());
  return info.kind == ExitInfo::kExited ? info.exit_code : 1;
}
