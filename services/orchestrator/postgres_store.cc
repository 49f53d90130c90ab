#include "services/orchestrator/postgres_store.h"

#include <pqxx/pqxx>

#include <regex>

#include "absl/strings/str_cat.h"
#include "common/backoff.h"
#include "common/status.h"
#include "lib/hacks/hack_case.h"
#include "services/orchestrator/store_schema.h"

namespace crl::orchestrator {

struct PostgresStore::Connection {
  explicit Connection(const std::string& url) : c(url) {}
  pqxx::connection c;
};

class PostgresStore::Txn {
 public:
  explicit Txn(pqxx::connection& c) : w(c) {}
  pqxx::work w;
};

namespace {

// A transaction lock on a run, so that its sequence numbers stay gapless
// and unique when orchestrators share the database.
constexpr int kEventLockSpace = 0x63726c;  // "crl"
constexpr int kMigrationLock = 1;

template <typename P>
absl::StatusOr<P> Decode(const pqxx::field& f, const char* what) {
  P p;
  const pqxx::binarystring bytes(f);
  if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(absl::StrCat("store: a corrupt ", what, " record"));
  }
  return p;
}

pqxx::binarystring Bytes(const google::protobuf::Message& m) { return pqxx::binarystring(m.SerializeAsString()); }

template <typename P>
absl::StatusOr<std::vector<P>> DecodeAll(const pqxx::result& r, const char* what) {
  std::vector<P> out;
  out.reserve(r.size());
  for (const auto& row : r) {
    CRL_ASSIGN_OR_RETURN(P p, Decode<P>(row[0], what));
    out.push_back(std::move(p));
  }
  return out;
}

void InsertEvent(pqxx::work& w, v1::RunEvent* event) {
  w.exec_params("SELECT pg_advisory_xact_lock($1, hashtext($2))", kEventLockSpace, event->run_id());
  const pqxx::row last =
      w.exec_params1("SELECT COALESCE(MAX(sequence), 0) FROM events WHERE run_id = $1", event->run_id());
  event->set_sequence(last[0].as<int64_t>() + 1);
  w.exec_params("INSERT INTO events (run_id, sequence, event) VALUES ($1, $2, $3)", event->run_id(),
                event->sequence(), Bytes(*event));
}

void UpsertVariant(pqxx::work& w, const std::string& run_id, const v1::Variant& v) {
  w.exec_params(
      "INSERT INTO variants (run_id, key, task, variant) VALUES ($1, $2, $3, $4) "
      "ON CONFLICT (run_id, key) DO UPDATE SET task = EXCLUDED.task, variant = EXCLUDED.variant",
      run_id, v.key(), v.task_name(), Bytes(v));
}

int64_t UpdateRun(pqxx::work& w, const v1::Run& run) {
  return w.exec_params("UPDATE runs SET state = $1, run = $2 WHERE id = $3", static_cast<int>(run.state()),
                       Bytes(run), run.run_id())
      .affected_rows();
}

absl::Status NoRun(const std::string& id) { return absl::NotFoundError(absl::StrCat("run_id: no run '", id, "'")); }

}  // namespace

std::string RedactPostgresUrl(const std::string& url) {
  // scheme://user:PASSWORD@host..., and password=... in either form.
  static const std::regex userinfo(R"(^([a-zA-Z][a-zA-Z0-9+.-]*://[^:/@?]*):[^@/?]*@)");
  static const std::regex param(R"((password\s*=\s*)('[^']*'|[^&\s]*))");
  return std::regex_replace(std::regex_replace(url, userinfo, "$1:***@"), param, "$1***");
}

PostgresStore::PostgresStore(std::string url, PostgresStoreOptions options)
    : url_(std::move(url)), options_(options) {}

PostgresStore::~PostgresStore() = default;

absl::StatusOr<std::unique_ptr<PostgresStore>> PostgresStore::Open(const std::string& url,
                                                                  PostgresStoreOptions options) {
  std::unique_ptr<PostgresStore> store(new PostgresStore(url, options));
  CRL_RETURN_IF_ERROR(store->Migrate());
  return store;
}

absl::Status PostgresStore::Transact(const char* what, const std::function<absl::Status(Txn&)>& body,
                                     bool read_only) {
  absl::MutexLock lock(&mu_);
  const absl::Time give_up = options_.clock->MonotonicNow() + options_.reconnect_for;
  Backoff backoff(options_.initial_backoff, absl::Seconds(5));
  for (;;) {
    std::string lost;
    try {
      if (conn_ == nullptr || !conn_->c.is_open()) {
        conn_.reset();
        conn_ = std::make_unique<Connection>(url_);
      }
      Txn txn(conn_->c);
      absl::Status s = body(txn);
      if (!s.ok()) return s;  // the transaction rolls back
      txn.w.commit();
      return absl::OkStatus();
    } catch (const pqxx::in_doubt_error& e) {
      conn_.reset();
      if (!read_only) {
        return absl::UnavailableError(
            absl::StrCat("store: ", what, ": the connection to PostgreSQL at ", RedactPostgresUrl(url_),
                         " was lost during the commit (the write may or may not have happened): ", e.what()));
      }
      lost = e.what();  // a read changed nothing, so its outcome is not in doubt: retried
    } catch (const pqxx::broken_connection& e) {
      lost = e.what();
    } catch (const pqxx::serialization_failure& e) {
      lost = e.what();  // retried like a lost connection
    } catch (const pqxx::deadlock_detected& e) {
      lost = e.what();
    } catch (const pqxx::unique_violation& e) {
      // Two writers raced to insert the same key: the retry sees the winner.
      lost = e.what();
    } catch (const pqxx::sql_error& e) {
      return absl::InternalError(absl::StrCat("store: ", what, ": ", e.what(), " (SQLSTATE ", e.sqlstate(), ")"));
    } catch (const std::exception& e) {
      conn_.reset();
      return absl::InternalError(absl::StrCat("store: ", what, ": ", e.what()));
    }
    if (conn_ != nullptr && !conn_->c.is_open()) conn_.reset();
    if (options_.clock->MonotonicNow() + backoff.Peek() > give_up) {
      conn_.reset();
      return absl::UnavailableError(absl::StrCat("store: ", what, ": PostgreSQL at ", RedactPostgresUrl(url_),
                                                 " unavailable for ", absl::FormatDuration(options_.reconnect_for),
                                                 ": ", lost));
    }
    options_.clock->SleepFor(backoff.Next());
  }
}

absl::Status PostgresStore::Migrate() {
  int64_t found = 0;
  CRL_RETURN_IF_ERROR(Transact("migrate", [&](Txn& t) -> absl::Status {
    // One migrator at a time, across processes.
    t.w.exec_params("SELECT pg_advisory_xact_lock($1, $2)", kEventLockSpace, kMigrationLock);
    t.w.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
    found = t.w.exec1("SELECT COALESCE(MAX(version), 0) FROM schema_version")[0].as<int64_t>();
    if (found > StoreSchemaVersion()) {
      return absl::FailedPreconditionError(absl::StrCat("store: the database has schema version ", found,
                                                        ", newer than this orchestrator's ", StoreSchemaVersion()));
    }
    for (int64_t v = found; v < StoreSchemaVersion(); ++v) {
      t.w.exec(StoreMigrations(SqlDialect::kPostgres)[v]);
      t.w.exec_params("INSERT INTO schema_version VALUES ($1)", v + 1);
    }
    return absl::OkStatus();
  }));
  return absl::OkStatus();
}

absl::StatusOr<v1::Run> PostgresStore::CreateRun(const v1::Run& run, bool* created) {
  v1::Run out;
  CRL_RETURN_IF_ERROR(Transact("create run", [&](Txn& t) -> absl::Status {
    if (!run.idempotency_key().empty()) {
      const pqxx::result r = t.w.exec_params("SELECT run FROM runs WHERE idempotency_key = $1", run.idempotency_key());
      if (!r.empty()) {
        *created = false;
        CRL_ASSIGN_OR_RETURN(out, Decode<v1::Run>(r[0][0], "run"));
        return absl::OkStatus();
      }
    }
    t.w.exec_params("INSERT INTO runs (id, idempotency_key, state, created_at, run) VALUES ($1, $2, $3, $4, $5)",
                    run.run_id(), run.idempotency_key(), static_cast<int>(run.state()), run.created_at(), Bytes(run));
    *created = true;
    out = run;
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<v1::Run> PostgresStore::GetRun(const std::string& run_id) {
  v1::Run out;
  CRL_RETURN_IF_ERROR(Transact("get run", [&](Txn& t) -> absl::Status {
    const pqxx::result r = t.w.exec_params("SELECT run FROM runs WHERE id = $1", run_id);
    if (r.empty()) return NoRun(run_id);
    CRL_ASSIGN_OR_RETURN(out, Decode<v1::Run>(r[0][0], "run"));
    return absl::OkStatus();
  }, /*read_only=*/true));
  return out;
}

absl::Status PostgresStore::PutRun(const v1::Run& run) {
  return Transact("update run", [&](Txn& t) -> absl::Status {
    return UpdateRun(t.w, run) == 0 ? NoRun(run.run_id()) : absl::OkStatus();
  });
}

absl::StatusOr<std::vector<v1::Run>> PostgresStore::ListRuns(v1::RunState state, int limit,
                                                            const std::string& after_id) {
  std::vector<v1::Run> out;
  CRL_RETURN_IF_ERROR(Transact("list runs", [&](Txn& t) -> absl::Status {
    // Newest first; ties on created_at broken by id.
    const pqxx::result r = t.w.exec_params(
        "SELECT run FROM runs WHERE ($1 = 0 OR state = $1) AND "
        "($2 = '' OR (created_at, id) < (SELECT created_at, id FROM runs WHERE id = $2)) "
        "ORDER BY created_at DESC, id DESC LIMIT $3",
        static_cast<int>(state), after_id, limit);
    CRL_ASSIGN_OR_RETURN(out, DecodeAll<v1::Run>(r, "run"));
    return absl::OkStatus();
  }, /*read_only=*/true));
  return out;
}

absl::StatusOr<v1::RunEvent> PostgresStore::AppendEvent(v1::RunEvent event) {
  CRL_RETURN_IF_ERROR(Transact("append event", [&](Txn& t) -> absl::Status {
    InsertEvent(t.w, &event);
    return absl::OkStatus();
  }));
  return event;
}

absl::StatusOr<std::vector<v1::RunEvent>> PostgresStore::EventsAfter(const std::string& run_id,
                                                                    int64_t after_sequence, int limit) {
  std::vector<v1::RunEvent> out;
  CRL_RETURN_IF_ERROR(Transact("read events", [&](Txn& t) -> absl::Status {
    const pqxx::result r = t.w.exec_params(
        "SELECT event FROM events WHERE run_id = $1 AND sequence > $2 ORDER BY sequence LIMIT $3", run_id,
        after_sequence, limit);
    CRL_ASSIGN_OR_RETURN(out, DecodeAll<v1::RunEvent>(r, "event"));
    return absl::OkStatus();
  }, /*read_only=*/true));
  return out;
}

absl::StatusOr<v1::RunEvent> PostgresStore::RecordScored(const v1::Variant& variant, const v1::Run& run,
                                                         v1::RunEvent event) {
  CRL_RETURN_IF_ERROR(Transact("record scored", [&](Txn& t) -> absl::Status {
    UpsertVariant(t.w, run.run_id(), variant);
    if (UpdateRun(t.w, run) == 0) return NoRun(run.run_id());
    InsertEvent(t.w, &event);
    return absl::OkStatus();
  }));
  return event;
}

absl::Status PostgresStore::PutVariant(const std::string& run_id, const v1::Variant& variant) {
  return Transact("put variant", [&](Txn& t) -> absl::Status {
    UpsertVariant(t.w, run_id, variant);
    return absl::OkStatus();
  });
}

absl::StatusOr<std::optional<v1::Variant>> PostgresStore::GetVariant(const std::string& run_id,
                                                                    const std::string& key) {
  std::optional<v1::Variant> out;
  CRL_RETURN_IF_ERROR(Transact("get variant", [&](Txn& t) -> absl::Status {
    const pqxx::result r = t.w.exec_params("SELECT variant FROM variants WHERE run_id = $1 AND key = $2", run_id, key);
    if (r.empty()) return absl::OkStatus();
    CRL_ASSIGN_OR_RETURN(out, Decode<v1::Variant>(r[0][0], "variant"));
    return absl::OkStatus();
  }, /*read_only=*/true));
  return out;
}

absl::StatusOr<std::vector<v1::Variant>> PostgresStore::Variants(const std::string& run_id,
                                                                const std::string& task_name) {
  std::vector<v1::Variant> out;
  CRL_RETURN_IF_ERROR(Transact("read variants", [&](Txn& t) -> absl::Status {
    const pqxx::result r = t.w.exec_params(
        "SELECT variant FROM variants WHERE run_id = $1 AND ($2 = '' OR task = $2) ORDER BY key",
        run_id, task_name);
    CRL_ASSIGN_OR_RETURN(out, DecodeAll<v1::Variant>(r, "variant"));
    return absl::OkStatus();
  }, /*read_only=*/true));
  return out;
}

absl::StatusOr<std::vector<v1::Variant>> PostgresStore::GroupVariants(const std::string& run_id,
                                                                     const std::string& group_id) {
  std::vector<v1::Variant> out;
  CRL_RETURN_IF_ERROR(Transact("read group variants", [&](Txn& t) -> absl::Status {
    // Keys "<group>/<index>": a byte range, "<group>/" up to "<group>0".
    const pqxx::result r = t.w.exec_params(
        "SELECT variant FROM variants WHERE run_id = $1 AND key > $2 AND key < $3 ORDER BY key",
        run_id, group_id + "/", group_id + "0");
    CRL_ASSIGN_OR_RETURN(out, DecodeAll<v1::Variant>(r, "variant"));
    return absl::OkStatus();
  }, /*read_only=*/true));
  return out;
}

absl::Status PostgresStore::PutGroup(const std::string& run_id, const v1::StoredGroup& group) {
  return Transact("put group", [&](Txn& t) -> absl::Status {
    t.w.exec_params(
        "INSERT INTO groups (run_id, group_id, grp) VALUES ($1, $2, $3) "
        "ON CONFLICT (run_id, group_id) DO UPDATE SET grp = EXCLUDED.grp",
        run_id, group.group_id(), Bytes(group));
    return absl::OkStatus();
  });
}

absl::StatusOr<std::optional<v1::StoredGroup>> PostgresStore::GetGroup(const std::string& run_id,
                                                                      const std::string& group_id) {
  std::optional<v1::StoredGroup> out;
  CRL_RETURN_IF_ERROR(Transact("get group", [&](Txn& t) -> absl::Status {
    const pqxx::result r =
        t.w.exec_params("SELECT grp FROM groups WHERE run_id = $1 AND group_id = $2", run_id, group_id);
    if (r.empty()) return absl::OkStatus();
    CRL_ASSIGN_OR_RETURN(out, Decode<v1::StoredGroup>(r[0][0], "group"));
    return absl::OkStatus();
  }, /*read_only=*/true));
  return out;
}

absl::StatusOr<v1::HackCase> PostgresStore::RecordHackCase(const v1::HackCase& seen) {
  v1::HackCase stored;
  CRL_RETURN_IF_ERROR(Transact("record hack case", [&](Txn& t) -> absl::Status {
    // The row locked (or made) first, so two sightings at once both count.
    const pqxx::result inserted =
        t.w.exec_params("INSERT INTO hack_cases (case_id, task, last_seen, hack) VALUES ($1, $2, $3, $4) "
                        "ON CONFLICT (case_id) DO NOTHING RETURNING case_id",
                        seen.case_id(), seen.task_name(), seen.last_seen_at(), Bytes(seen));
    if (!inserted.empty()) {
      stored = seen;
      return absl::OkStatus();
    }
    const pqxx::result r = t.w.exec_params("SELECT hack FROM hack_cases WHERE case_id = $1 FOR UPDATE", seen.case_id());
    if (r.empty()) return absl::InternalError(absl::StrCat("hack case ", seen.case_id(), " vanished"));
    CRL_ASSIGN_OR_RETURN(v1::HackCase old, Decode<v1::HackCase>(r[0][0], "hack case"));
    stored = hacks::MergeSighting(old, seen);
    t.w.exec_params("UPDATE hack_cases SET last_seen = $2, hack = $3 WHERE case_id = $1", stored.case_id(),
                    stored.last_seen_at(), Bytes(stored));
    return absl::OkStatus();
  }));
  return stored;
}

absl::StatusOr<std::vector<v1::HackCase>> PostgresStore::HackCases(const std::string& kind,
                                                                  const std::string& task_name, int limit) {
  std::vector<v1::HackCase> out;
  CRL_RETURN_IF_ERROR(Transact("read hack cases", [&](Txn& t) -> absl::Status {
    const pqxx::result r = t.w.exec_params(
        "SELECT hack FROM hack_cases WHERE ($1 = '' OR task = $1) ORDER BY last_seen DESC, case_id", task_name);
    CRL_ASSIGN_OR_RETURN(std::vector<v1::HackCase> all, DecodeAll<v1::HackCase>(r, "hack case"));
    out.clear();
    for (auto& c : all) {
      if (static_cast<int>(out.size()) < limit && hacks::Matches(c, kind, task_name)) out.push_back(std::move(c));
    }
    return absl::OkStatus();
  }, /*read_only=*/true));
  return out;
}

absl::StatusOr<std::optional<v1::HackCase>> PostgresStore::GetHackCase(const std::string& case_id) {
  std::optional<v1::HackCase> out;
  CRL_RETURN_IF_ERROR(Transact("get hack case", [&](Txn& t) -> absl::Status {
    const pqxx::result r = t.w.exec_params("SELECT hack FROM hack_cases WHERE case_id = $1", case_id);
    if (r.empty()) return absl::OkStatus();
    CRL_ASSIGN_OR_RETURN(out, Decode<v1::HackCase>(r[0][0], "hack case"));
    return absl::OkStatus();
  }, /*read_only=*/true));
  return out;
}

}  // namespace crl::orchestrator
