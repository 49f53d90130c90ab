#include "services/orchestrator/sqlite_store.h"

#include <sqlite3.h>

#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "lib/hacks/hack_case.h"
#include "services/orchestrator/store_schema.h"

namespace crl::orchestrator {
namespace {

// A prepared statement, finalised on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  bool ok() const { return rc_ == SQLITE_OK; }
  Statement& Text(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& Blob(int i, const std::string& v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& Int(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return sqlite3_step(stmt_); }
  std::string ColumnBlob(int i) {
    const void* p = sqlite3_column_blob(stmt_, i);
    return p ? std::string(static_cast<const char*>(p), sqlite3_column_bytes(stmt_, i)) : std::string();
  }
  int64_t ColumnInt(int i) { return sqlite3_column_int64(stmt_, i); }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

absl::Status SqlError(sqlite3* db, const std::string& what) {
  return absl::InternalError(absl::StrCat("store: ", what, ": ", sqlite3_errmsg(db)));
}

template <typename P>
absl::StatusOr<P> Decode(const std::string& bytes, const char* what) {
  P p;
  if (!p.ParseFromString(bytes)) return absl::DataLossError(absl::StrCat("store: a corrupt ", what, " record"));
  return p;
}

absl::StatusOr<std::vector<v1::Variant>> ReadVariants(sqlite3* db, Statement& q) {
  std::vector<v1::Variant> out;
  int rc;
  while ((rc = q.Step()) == SQLITE_ROW) {
    CRL_ASSIGN_OR_RETURN(v1::Variant v, Decode<v1::Variant>(q.ColumnBlob(0), "variant"));
    out.push_back(std::move(v));
  }
  if (rc != SQLITE_DONE) return SqlError(db, "read variants");
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    absl::Status s = absl::FailedPreconditionError(
        absl::StrCat("store: cannot open ", path, ": ", db ? sqlite3_errmsg(db) : "out of memory"));
    sqlite3_close(db);
    return s;
  }
  sqlite3_busy_timeout(db, 10000);
  std::unique_ptr<SqliteStore> store(new SqliteStore(db));
  CRL_RETURN_IF_ERROR(store->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"));
  CRL_RETURN_IF_ERROR(store->Migrate());
  return store;
}

SqliteStore::~SqliteStore() { sqlite3_close(db_); }

absl::Status SqliteStore::Exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    absl::Status s = absl::InternalError(absl::StrCat("store: ", err ? err : "error"));
    sqlite3_free(err);
    return s;
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::Migrate() {
  absl::MutexLock lock(&mu_);
  CRL_RETURN_IF_ERROR(Exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"));
  int64_t version = 0;
  {
    Statement q(db_, "SELECT MAX(version) FROM schema_version");
    if (q.ok() && q.Step() == SQLITE_ROW) version = q.ColumnInt(0);
  }
  if (version > StoreSchemaVersion()) {
    return absl::FailedPreconditionError(absl::StrCat("store: the database has schema version ", version,
                                                      ", newer than this orchestrator's ", StoreSchemaVersion()));
  }
  for (int64_t v = version; v < StoreSchemaVersion(); ++v) {
    CRL_RETURN_IF_ERROR(Exec(absl::StrCat("BEGIN IMMEDIATE; ", StoreMigrations(SqlDialect::kSqlite)[v],
                                          "; INSERT INTO schema_version VALUES (", v + 1, "); COMMIT;")));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Run> SqliteStore::CreateRun(const v1::Run& run, bool* created) {
  absl::MutexLock lock(&mu_);
  if (!run.idempotency_key().empty()) {
    Statement q(db_, "SELECT run FROM runs WHERE idempotency_key = ?");
    q.Text(1, run.idempotency_key());
    if (q.Step() == SQLITE_ROW) {
      *created = false;
      return Decode<v1::Run>(q.ColumnBlob(0), "run");
    }
  }
  Statement ins(db_, "INSERT INTO runs (id, idempotency_key, state, created_at, run) VALUES (?, ?, ?, ?, ?)");
  ins.Text(1, run.run_id()).Text(2, run.idempotency_key()).Int(3, run.state()).Int(4, run.created_at());
  ins.Blob(5, run.SerializeAsString());
  if (ins.Step() != SQLITE_DONE) return SqlError(db_, "insert run");
  *created = true;
  return run;
}

absl::StatusOr<v1::Run> SqliteStore::GetRun(const std::string& run_id) {
  absl::MutexLock lock(&mu_);
  Statement q(db_, "SELECT run FROM runs WHERE id = ?");
  q.Text(1, run_id);
  if (q.Step() != SQLITE_ROW) return absl::NotFoundError(absl::StrCat("run_id: no run '", run_id, "'"));
  return Decode<v1::Run>(q.ColumnBlob(0), "run");
}

absl::Status SqliteStore::PutRun(const v1::Run& run) {
  absl::MutexLock lock(&mu_);
  Statement q(db_, "UPDATE runs SET state = ?, run = ? WHERE id = ?");
  q.Int(1, run.state()).Blob(2, run.SerializeAsString()).Text(3, run.run_id());
  if (q.Step() != SQLITE_DONE) return SqlError(db_, "update run");
  if (sqlite3_changes(db_) == 0) return absl::NotFoundError(absl::StrCat("run_id: no run '", run.run_id(), "'"));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::Run>> SqliteStore::ListRuns(v1::RunState state, int limit,
                                                          const std::string& after_id) {
  absl::MutexLock lock(&mu_);
  // Newest first; ties on created_at broken by id.
  Statement q(db_,
              "SELECT run FROM runs WHERE (?1 = 0 OR state = ?1) AND "
              "(?2 = '' OR (created_at, id) < (SELECT created_at, id FROM runs WHERE id = ?2)) "
              "ORDER BY created_at DESC, id DESC LIMIT ?3");
  q.Int(1, state).Text(2, after_id).Int(3, limit);
  std::vector<v1::Run> out;
  int rc;
  while ((rc = q.Step()) == SQLITE_ROW) {
    CRL_ASSIGN_OR_RETURN(v1::Run r, Decode<v1::Run>(q.ColumnBlob(0), "run"));
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "list runs");
  return out;
}

absl::Status SqliteStore::InsertEventLocked(v1::RunEvent* event) {
  int64_t last = 0;
  {
    Statement q(db_, "SELECT COALESCE(MAX(sequence), 0) FROM events WHERE run_id = ?");
    q.Text(1, event->run_id());
    if (q.Step() == SQLITE_ROW) last = q.ColumnInt(0);
  }
  event->set_sequence(last + 1);
  Statement ins(db_, "INSERT INTO events (run_id, sequence, event) VALUES (?, ?, ?)");
  ins.Text(1, event->run_id()).Int(2, event->sequence()).Blob(3, event->SerializeAsString());
  if (ins.Step() != SQLITE_DONE) return SqlError(db_, "append event");
  return absl::OkStatus();
}

absl::StatusOr<v1::RunEvent> SqliteStore::AppendEvent(v1::RunEvent event) {
  absl::MutexLock lock(&mu_);
  CRL_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  if (absl::Status s = InsertEventLocked(&event); !s.ok()) {
    (void)Exec("ROLLBACK");
    return s;
  }
  CRL_RETURN_IF_ERROR(Exec("COMMIT"));
  return event;
}

absl::StatusOr<v1::RunEvent> SqliteStore::RecordScored(const v1::Variant& variant, const v1::Run& run,
                                                       v1::RunEvent event) {
  absl::MutexLock lock(&mu_);
  CRL_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  absl::Status s;
  {
    Statement q(db_, "INSERT OR REPLACE INTO variants (run_id, key, task, variant) VALUES (?, ?, ?, ?)");
    q.Text(1, run.run_id()).Text(2, variant.key()).Text(3, variant.task_name()).Blob(4, variant.SerializeAsString());
    if (q.Step() != SQLITE_DONE) s = SqlError(db_, "put variant");
  }
  if (s.ok()) {
    Statement q(db_, "UPDATE runs SET state = ?, run = ? WHERE id = ?");
    q.Int(1, run.state()).Blob(2, run.SerializeAsString()).Text(3, run.run_id());
    if (q.Step() != SQLITE_DONE) {
      s = SqlError(db_, "update run");
    } else if (sqlite3_changes(db_) == 0) {
      s = absl::NotFoundError(absl::StrCat("run_id: no run '", run.run_id(), "'"));
    }
  }
  if (s.ok()) s = InsertEventLocked(&event);
  if (!s.ok()) {
    (void)Exec("ROLLBACK");
    return s;
  }
  CRL_RETURN_IF_ERROR(Exec("COMMIT"));
  return event;
}

absl::StatusOr<std::vector<v1::RunEvent>> SqliteStore::EventsAfter(const std::string& run_id,
                                                                  int64_t after_sequence, int limit) {
  absl::MutexLock lock(&mu_);
  Statement q(db_, "SELECT event FROM events WHERE run_id = ? AND sequence > ? ORDER BY sequence LIMIT ?");
  q.Text(1, run_id).Int(2, after_sequence).Int(3, limit);
  std::vector<v1::RunEvent> out;
  int rc;
  while ((rc = q.Step()) == SQLITE_ROW) {
    CRL_ASSIGN_OR_RETURN(v1::RunEvent e, Decode<v1::RunEvent>(q.ColumnBlob(0), "event"));
    out.push_back(std::move(e));
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "read events");
  return out;
}

absl::Status SqliteStore::PutVariant(const std::string& run_id, const v1::Variant& variant) {
  absl::MutexLock lock(&mu_);
  Statement q(db_, "INSERT OR REPLACE INTO variants (run_id, key, task, variant) VALUES (?, ?, ?, ?)");
  q.Text(1, run_id).Text(2, variant.key()).Text(3, variant.task_name()).Blob(4, variant.SerializeAsString());
  if (q.Step() != SQLITE_DONE) return SqlError(db_, "put variant");
  return absl::OkStatus();
}

absl::StatusOr<std::optional<v1::Variant>> SqliteStore::GetVariant(const std::string& run_id,
                                                                  const std::string& key) {
  absl::MutexLock lock(&mu_);
  Statement q(db_, "SELECT variant FROM variants WHERE run_id = ? AND key = ?");
  q.Text(1, run_id).Text(2, key);
  if (q.Step() != SQLITE_ROW) return std::optional<v1::Variant>();
  CRL_ASSIGN_OR_RETURN(v1::Variant v, Decode<v1::Variant>(q.ColumnBlob(0), "variant"));
  return std::optional<v1::Variant>(std::move(v));
}

absl::StatusOr<std::vector<v1::Variant>> SqliteStore::Variants(const std::string& run_id,
                                                              const std::string& task_name) {
  absl::MutexLock lock(&mu_);
  Statement q(db_, "SELECT variant FROM variants WHERE run_id = ? AND (? = '' OR task = ?) ORDER BY key");
  q.Text(1, run_id).Text(2, task_name).Text(3, task_name);
  return ReadVariants(db_, q);
}

absl::StatusOr<std::vector<v1::Variant>> SqliteStore::GroupVariants(const std::string& run_id,
                                                                   const std::string& group_id) {
  absl::MutexLock lock(&mu_);
  // A range over the primary key: "<group>/" up to "<group>0" ('0' follows '/').
  Statement q(db_, "SELECT variant FROM variants WHERE run_id = ? AND key > ? AND key < ? ORDER BY key");
  q.Text(1, run_id).Text(2, group_id + "/").Text(3, group_id + "0");
  return ReadVariants(db_, q);
}

absl::Status SqliteStore::PutGroup(const std::string& run_id, const v1::StoredGroup& group) {
  absl::MutexLock lock(&mu_);
  Statement q(db_, "INSERT OR REPLACE INTO groups (run_id, group_id, grp) VALUES (?, ?, ?)");
  q.Text(1, run_id).Text(2, group.group_id()).Blob(3, group.SerializeAsString());
  if (q.Step() != SQLITE_DONE) return SqlError(db_, "put group");
  return absl::OkStatus();
}

absl::StatusOr<std::optional<v1::StoredGroup>> SqliteStore::GetGroup(const std::string& run_id,
                                                                    const std::string& group_id) {
  absl::MutexLock lock(&mu_);
  Statement q(db_, "SELECT grp FROM groups WHERE run_id = ? AND group_id = ?");
  q.Text(1, run_id).Text(2, group_id);
  if (q.Step() != SQLITE_ROW) return std::optional<v1::StoredGroup>();
  CRL_ASSIGN_OR_RETURN(v1::StoredGroup g, Decode<v1::StoredGroup>(q.ColumnBlob(0), "group"));
  return std::optional<v1::StoredGroup>(std::move(g));
}

absl::StatusOr<v1::HackCase> SqliteStore::RecordHackCase(const v1::HackCase& seen) {
  absl::MutexLock lock(&mu_);
  CRL_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  auto body = [&]() -> absl::StatusOr<v1::HackCase> {
    v1::HackCase stored = seen;
    {
      Statement q(db_, "SELECT hack FROM hack_cases WHERE case_id = ?");
      q.Text(1, seen.case_id());
      if (q.Step() == SQLITE_ROW) {
        CRL_ASSIGN_OR_RETURN(v1::HackCase old, Decode<v1::HackCase>(q.ColumnBlob(0), "hack case"));
        stored = hacks::MergeSighting(old, seen);
      }
    }
    Statement q(db_, "INSERT OR REPLACE INTO hack_cases (case_id, task, last_seen, hack) VALUES (?, ?, ?, ?)");
    q.Text(1, stored.case_id()).Text(2, stored.task_name()).Int(3, stored.last_seen_at()).Blob(4, stored.SerializeAsString());
    if (q.Step() != SQLITE_DONE) return SqlError(db_, "put hack case");
    return stored;
  };
  absl::StatusOr<v1::HackCase> out = body();
  if (!out.ok()) {
    (void)Exec("ROLLBACK");
    return out.status();
  }
  CRL_RETURN_IF_ERROR(Exec("COMMIT"));
  return out;
}

absl::StatusOr<std::vector<v1::HackCase>> SqliteStore::HackCases(const std::string& kind, const std::string& task_name,
                                                                int limit) {
  absl::MutexLock lock(&mu_);
  Statement q(db_,
              "SELECT hack FROM hack_cases WHERE (? = '' OR task = ?) ORDER BY last_seen DESC, case_id");
  q.Text(1, task_name).Text(2, task_name);
  std::vector<v1::HackCase> out;
  int rc;
  while ((rc = q.Step()) == SQLITE_ROW && static_cast<int>(out.size()) < limit) {
    CRL_ASSIGN_OR_RETURN(v1::HackCase c, Decode<v1::HackCase>(q.ColumnBlob(0), "hack case"));
    if (hacks::Matches(c, kind, task_name)) out.push_back(std::move(c));
  }
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) return SqlError(db_, "read hack cases");
  return out;
}

absl::StatusOr<std::optional<v1::HackCase>> SqliteStore::GetHackCase(const std::string& case_id) {
  absl::MutexLock lock(&mu_);
  Statement q(db_, "SELECT hack FROM hack_cases WHERE case_id = ?");
  q.Text(1, case_id);
  if (q.Step() != SQLITE_ROW) return std::optional<v1::HackCase>();
  CRL_ASSIGN_OR_RETURN(v1::HackCase c, Decode<v1::HackCase>(q.ColumnBlob(0), "hack case"));
  return std::optional<v1::HackCase>(std::move(c));
}

}  // namespace crl::orchestrator
