#include "services/orchestrator/store_schema.h"

#include "absl/strings/str_replace.h"

namespace crl::orchestrator {
namespace {

// Records are the protos' bytes ({bytes}) plus the columns queries filter
// on. Text compares bytewise in both ({text}: PostgreSQL's "C" collation),
// so key ranges and orders agree. Append only.
const char* const kMigrations[] = {
    R"(CREATE TABLE runs (
         id {text} PRIMARY KEY, idempotency_key {text}, state INTEGER NOT NULL,
         created_at {int64} NOT NULL, run {bytes} NOT NULL);
       CREATE UNIQUE INDEX runs_key ON runs(idempotency_key) WHERE idempotency_key <> '';
       CREATE INDEX runs_state ON runs(state, created_at);
       CREATE TABLE events (
         run_id {text} NOT NULL, sequence {int64} NOT NULL, event {bytes} NOT NULL,
         PRIMARY KEY (run_id, sequence));
       CREATE TABLE variants (
         run_id {text} NOT NULL, key {text} NOT NULL, task {text} NOT NULL, variant {bytes} NOT NULL,
         PRIMARY KEY (run_id, key));
       CREATE INDEX variants_task ON variants(run_id, task);
       CREATE TABLE groups (
         run_id {text} NOT NULL, group_id {text} NOT NULL, grp {bytes} NOT NULL,
         PRIMARY KEY (run_id, group_id));)",
    R"(CREATE TABLE hack_cases (
         case_id {text} PRIMARY KEY, task {text} NOT NULL, last_seen {int64} NOT NULL, hack {bytes} NOT NULL);
       CREATE INDEX hack_cases_seen ON hack_cases(last_seen);)",
};

std::vector<std::string> Render(SqlDialect dialect) {
  std::vector<std::string> out;
  for (const char* m : kMigrations) {
    out.push_back(dialect == SqlDialect::kSqlite
                      ? absl::StrReplaceAll(m, {{"{int64}", "INTEGER"}, {"{bytes}", "BLOB"}, {"{text}", "TEXT"}})
                      : absl::StrReplaceAll(m, {{"{int64}", "BIGINT"}, {"{bytes}", "BYTEA"}, {"{text}", "TEXT COLLATE \"C\""}}));
  }
  return out;
}

}  // namespace

const std::vector<std::string>& StoreMigrations(SqlDialect dialect) {
  static const std::vector<std::string> sqlite = Render(SqlDialect::kSqlite);
  static const std::vector<std::string> postgres = Render(SqlDialect::kPostgres);
  return dialect == SqlDialect::kSqlite ? sqlite : postgres;
}

int StoreSchemaVersion() { return static_cast<int>(std::size(kMigrations)); }

}  // namespace crl::orchestrator
