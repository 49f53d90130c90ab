// Starts a real crl service binary on loopback (port 0) for integration
// tests, learns its ports from the line it prints, and stops it.
#ifndef CRL_TESTS_SUPPORT_SERVICE_PROCESS_H_
#define CRL_TESTS_SUPPORT_SERVICE_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace crl::testing {

class ServiceProcess {
 public:
  // Starts `binary` with `args` and waits (up to 60 s) for its
  // "listening grpc=HOST:PORT metrics=HOST:PORT" line.
  ServiceProcess(const std::string& binary, const std::vector<std::string>& args);
  ~ServiceProcess();

  bool started() const { return grpc_port_ > 0; }
  std::string grpc_address() const { return "127.0.0.1:" + std::to_string(grpc_port_); }
  int metrics_port() const { return metrics_port_; }
  // What the process printed to stdout up to its listening line.
  const std::string& output() const { return output_; }
  pid_t pid() const { return pid_; }
  // Sends a signal; Wait() reaps and returns the exit status (or -signal).
  void Signal(int sig);
  int Wait(double timeout_seconds);

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  bool reaped_ = false;
  std::string output_;
};

// GET http://127.0.0.1:PORT/PATH; returns the body ("" on failure).
std::string HttpGet(int port, const std::string& path);

// Runs `command` through the shell; returns its standard output (*exit_code,
// when given, gets its exit status).
std::string RunShell(const std::string& command, int* exit_code = nullptr);

}  // namespace crl::testing

#endif  // CRL_TESTS_SUPPORT_SERVICE_PROCESS_H_
