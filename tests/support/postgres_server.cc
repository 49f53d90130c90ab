#include "tests/support/postgres_server.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file.h"

namespace crl::testing {
namespace {

constexpr int kPort = 5432;  // only names the socket file in our directory

std::string NewestBin() {
  std::string best;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string bin = e.path().string() + "/bin";
    if (std::filesystem::exists(bin + "/initdb") && bin > best) best = bin;
  }
  return best;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostgresServer>> PostgresServer::Start() {
  std::unique_ptr<PostgresServer> s(new PostgresServer());
  s->bin_ = NewestBin();
  if (s->bin_.empty()) {
    return absl::FailedPreconditionError(
        "no PostgreSQL server under /usr/lib/postgresql/*/bin (scripts/setup.sh installs Debian's postgresql)");
  }
  if (geteuid() == 0) {
    // PostgreSQL refuses to run as root.
    for (const char* name : {"postgres", "nobody"}) {
      if (passwd* pw = getpwnam(name)) {
        s->user_ = name;
        if (chown(s->dir_.path().c_str(), pw->pw_uid, pw->pw_gid) != 0) {
          return absl::InternalError("cannot hand the data directory to " + s->user_);
        }
        break;
      }
    }
    if (s->user_.empty()) return absl::FailedPreconditionError("no non-root user (postgres, nobody) to run PostgreSQL");
  }
  const std::string& d = s->dir_.path();
  if (auto st = s->Run(absl::StrCat(s->bin_, "/initdb -D ", d, "/data -U crl -A trust --no-sync -E UTF8 --locale=C.UTF-8"),
                       "initdb");
      !st.ok()) {
    return st;
  }
  // Nothing over TCP; the socket lives in our directory; fsync off (a test
  // database), so the suite stays fast on a loaded machine.
  if (!WriteStringToFile(d + "/data/postgresql.auto.conf",
                         absl::StrCat("listen_addresses = ''\nunix_socket_directories = '", d,
                                      "'\nport = ", kPort, "\nfsync = off\nmax_connections = 40\n"))
           .ok()) {
    return absl::InternalError("cannot write postgresql.auto.conf");
  }
  if (auto st = s->Restart(); !st.ok()) return st;
  if (auto st = s->Run(absl::StrCat(s->bin_, "/createdb -h ", d, " -p ", kPort, " -U crl crl"), "createdb"); !st.ok()) {
    return st;
  }
  return s;
}

PostgresServer::~PostgresServer() { (void)Kill(); }

std::string PostgresServer::url() const {
  return absl::StrCat("postgresql://crl@/crl?host=", dir_.path(), "&port=", kPort);
}

absl::Status PostgresServer::Run(const std::string& command, const std::string& what) const {
  const std::string log = dir_.path() + "/" + what + ".log";
  const std::string as = user_.empty() ? "" : "runuser -u " + user_ + " -- ";
  if (std::system((as + command + " > " + log + " 2>&1").c_str()) != 0) {
    auto text = ReadFileToString(log, "log");
    return absl::InternalError(absl::StrCat("PostgreSQL ", what, " failed: ", text.ok() ? *text : ""));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> PostgresServer::Psql(const std::string& sql) const {
  const std::string file = dir_.path() + "/query.sql";
  if (!WriteStringToFile(file, sql).ok()) return absl::InternalError("cannot write " + file);
  if (auto st = Run(absl::StrCat(bin_, "/psql -X -q -t -A -v ON_ERROR_STOP=1 -d '", url(), "' -f ", file), "psql");
      !st.ok()) {
    return st;
  }
  return ReadFileToString(dir_.path() + "/psql.log", "psql output");
}

absl::Status PostgresServer::Kill() {
  return Run(absl::StrCat(bin_, "/pg_ctl -D ", dir_.path(), "/data -m immediate -w stop"), "stop");
}

absl::Status PostgresServer::Restart() {
  return Run(absl::StrCat(bin_, "/pg_ctl -D ", dir_.path(), "/data -l ", dir_.path(), "/server.log -w -t 60 start"),
             "start");
}

}  // namespace crl::testing
