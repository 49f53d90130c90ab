// The orchestrator's store, one set of checks for every backend
// (tests/support/store_contract.h): SQLite on a file, and PostgreSQL on a real
// server started for the test. Plus what only a server can do to us: go away
// and come back.
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <set>
#include <thread>

#include "common/clock.h"
#include "services/orchestrator/open_store.h"
#include "services/orchestrator/postgres_store.h"
#include "services/orchestrator/sqlite_store.h"
#include "services/orchestrator/store_schema.h"
#include "tests/support/postgres_server.h"
#include "tests/support/service_process.h"
#include "tests/support/store_contract.h"

namespace crl::testing {

TEST_CASE("the store on SQLite: idempotent runs, gapless events, atomic scoring, schema versions",
          "[integration][store]") {
  TempDir dir;
  const std::string path = dir.path() + "/o.db";
  CheckStore([&]() -> std::unique_ptr<StoreInterface> {
    auto s = orchestrator::OpenStore("sqlite:" + path, dir.path());
    if (!s.ok()) FAIL(s.status().ToString());
    return std::move(*s);
  });
  // A database from a newer orchestrator is refused, not guessed at.
  REQUIRE(std::system(("python3 -c \"import sqlite3; c=sqlite3.connect('" + path +
                       "'); c.execute('INSERT INTO schema_version VALUES (99)'); c.commit()\"")
                          .c_str()) == 0);
  auto newer = orchestrator::OpenStore("sqlite:" + path, dir.path());
  REQUIRE_FALSE(newer.ok());
  CHECK_THAT(std::string(newer.status().message()), Catch::Contains("schema version 99"));
  CHECK(orchestrator::OpenStore("mysql://x", dir.path()).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(orchestrator::OpenStore("sqlite:" + path, "").status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("the store on a real PostgreSQL server: the same behaviour, the same schema, migrations",
          "[integration][store]") {
  REQUIRE(orchestrator::HasPostgresStore());
  auto pg = PostgresServer::Start();
  REQUIRE(pg.ok());
  const std::string url = (*pg)->url();
  TempDir dir;
  CheckStore([&]() -> std::unique_ptr<StoreInterface> {
    auto s = orchestrator::OpenStore(url, dir.path());
    if (!s.ok()) FAIL(s.status().ToString());
    return std::move(*s);
  });
  // The schema the SQLite store has (same tables and columns), at the version
  // this binary writes; opening again migrates nothing.
  auto tables = (*pg)->Psql(
      "SELECT string_agg(table_name || '.' || column_name, ',' ORDER BY table_name, ordinal_position) "
      "FROM information_schema.columns WHERE table_schema = 'public';");
  REQUIRE(tables.ok());
  CHECK_THAT(*tables, Catch::Contains("events.run_id,events.sequence,events.event,groups.run_id,groups.group_id,"
                                      "groups.grp,hack_cases.case_id,hack_cases.task,hack_cases.last_seen,hack_cases.hack,runs.id,runs.idempotency_key,runs.state,runs.created_at,runs.run,"
                                      "schema_version.version,variants.run_id,variants.key,variants.task,"
                                      "variants.variant"));
  REQUIRE(orchestrator::OpenStore(url, dir.path()).ok());
  auto version = (*pg)->Psql("SELECT count(*), max(version) FROM schema_version;");
  REQUIRE(version.ok());
  CHECK(*version == absl::StrCat(orchestrator::StoreSchemaVersion(), "|", orchestrator::StoreSchemaVersion(), "\n"));
  REQUIRE((*pg)->Psql("INSERT INTO schema_version VALUES (99);").ok());
  auto newer = orchestrator::OpenStore(url, dir.path());
  REQUIRE_FALSE(newer.ok());
  CHECK_THAT(std::string(newer.status().message()), Catch::Contains("schema version 99"));
}

TEST_CASE("PostgreSQL going away: UNAVAILABLE naming the server (never the password), then reconnected",
          "[integration][store]") {
  auto pg = PostgresServer::Start();
  REQUIRE(pg.ok());
  orchestrator::PostgresStoreOptions o;
  o.reconnect_for = absl::Seconds(1);
  auto s = orchestrator::PostgresStore::Open((*pg)->url(), o);
  REQUIRE(s.ok());
  bool created;
  REQUIRE((*s)->CreateRun(MakeRun("r", "", 1, v1::RUN_STATE_RUNNING), &created).ok());
  REQUIRE((*pg)->Kill().ok());
  auto lost = (*s)->GetRun("r");
  REQUIRE_FALSE(lost.ok());
  CHECK(lost.status().code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(lost.status().message()), Catch::Contains("PostgreSQL at postgresql://crl@/crl"));
  // Back: the same store object carries on, and nothing was lost.
  REQUIRE((*pg)->Restart().ok());
  auto back = (*s)->GetRun("r");
  REQUIRE(back.ok());
  CHECK(back->run_id() == "r");

  // A server that comes back within the reconnect window is waited for: the
  // caller sees a slow call, not an error.
  orchestrator::PostgresStoreOptions patient;
  patient.reconnect_for = absl::Seconds(60);
  auto p = orchestrator::PostgresStore::Open((*pg)->url(), patient);
  REQUIRE(p.ok());
  REQUIRE((*pg)->Kill().ok());
  std::thread restarter([&] {
    RealClock::Get()->SleepFor(absl::Seconds(2));
    (void)(*pg)->Restart();
  });
  v1::RunEvent e;
  e.set_run_id("r");
  auto appended = (*p)->AppendEvent(e);
  restarter.join();
  REQUIRE(appended.ok());
  CHECK(appended->sequence() == 1);

  // Messages never carry a password.
  CHECK(orchestrator::RedactPostgresUrl("postgresql://crl:s3cret@db:5432/crl?sslmode=require") ==
        "postgresql://crl:***@db:5432/crl?sslmode=require");
  CHECK(orchestrator::RedactPostgresUrl("postgresql://crl@db/crl?password=s3cret&x=1") ==
        "postgresql://crl@db/crl?password=***&x=1");
  auto refused = orchestrator::PostgresStore::Open("postgresql://crl:s3cret@/crl?host=/nonexistent", o);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(refused.status().message()), !Catch::Contains("s3cret"));
}

}  // namespace crl::testing
