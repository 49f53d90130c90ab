#include "services/orchestrator/open_store.h"

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "services/orchestrator/content_backed_store.h"
#include "services/orchestrator/sqlite_store.h"
#ifdef CRL_WITH_POSTGRES
#include "services/orchestrator/postgres_store.h"
#endif

namespace crl::orchestrator {

bool HasPostgresStore() {
#ifdef CRL_WITH_POSTGRES
  return true;
#else
  return false;
#endif
}

namespace {

absl::StatusOr<std::unique_ptr<StoreInterface>> OpenRows(const std::string& store, const std::string& data_dir) {
  if (absl::StartsWith(store, "postgresql://") || absl::StartsWith(store, "postgres://")) {
#ifdef CRL_WITH_POSTGRES
    CRL_ASSIGN_OR_RETURN(std::unique_ptr<PostgresStore> pg, PostgresStore::Open(store));
    return std::unique_ptr<StoreInterface>(std::move(pg));
#else
    return absl::FailedPreconditionError(
        "store: this orchestrator was built without PostgreSQL (libpqxx-dev was not found at build time)");
#endif
  }
  std::string path;
  if (store.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(data_dir, ec);
    if (ec) return absl::FailedPreconditionError(absl::StrCat("data_dir: cannot create ", data_dir, ": ", ec.message()));
    path = data_dir + "/orchestrator.db";
  } else if (absl::StartsWith(store, "sqlite:")) {
    path = store.substr(7);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "store: '", store, "' is not sqlite:PATH, postgresql://... or postgres://... (empty: SQLite in --data_dir)"));
  }
  if (path.empty()) return absl::InvalidArgumentError("store: sqlite: needs a path");
  CRL_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> s, SqliteStore::Open(path));
  return std::unique_ptr<StoreInterface>(std::move(s));
}

}  // namespace

absl::StatusOr<std::unique_ptr<StoreInterface>> OpenStore(const std::string& store, const std::string& data_dir,
                                                          const std::string& content_dir) {
  if (content_dir.empty() && data_dir.empty()) {
    return absl::InvalidArgumentError("store: needs --data_dir (or --content_dir) for the content directory");
  }
  CRL_ASSIGN_OR_RETURN(std::unique_ptr<StoreInterface> rows, OpenRows(store, data_dir));
  CRL_ASSIGN_OR_RETURN(std::unique_ptr<DiskContentStore> content,
                       DiskContentStore::Open(content_dir.empty() ? data_dir + "/content" : content_dir));
  return std::unique_ptr<StoreInterface>(std::make_unique<ContentBackedStore>(std::move(rows), std::move(content)));
}

}  // namespace crl::orchestrator
