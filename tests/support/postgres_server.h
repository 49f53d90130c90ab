// A real PostgreSQL server for tests: Debian's binaries
// (/usr/lib/postgresql/<version>/bin), a throw-away data directory, run as a
// non-root user (postgres, or nobody, when the test runs as root), reachable
// only through a Unix socket in that directory. Stopped and removed by the
// destructor.
#ifndef CRL_TESTS_SUPPORT_POSTGRES_SERVER_H_
#define CRL_TESTS_SUPPORT_POSTGRES_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tests/support/service_process.h"

namespace crl::testing {

class PostgresServer {
 public:
  // initdb, then start; an error says which step failed and its log.
  static absl::StatusOr<std::unique_ptr<PostgresServer>> Start();
  ~PostgresServer();

  // A libpq URI for database "crl" as superuser "crl" (trust auth on the socket).
  std::string url() const;
  // Runs SQL through psql; returns its output.
  absl::StatusOr<std::string> Psql(const std::string& sql) const;
  // Stops the server at once (immediate mode: like a crash), and starts it
  // again on the same data.
  absl::Status Kill();
  absl::Status Restart();

 private:
  PostgresServer() = default;
  absl::Status Run(const std::string& command, const std::string& what) const;

  TempDir dir_;
  std::string bin_;   // /usr/lib/postgresql/<v>/bin
  std::string user_;  // who runs the server ("" = whoever runs the test)
};

}  // namespace crl::testing

#endif  // CRL_TESTS_SUPPORT_POSTGRES_SERVER_H_
