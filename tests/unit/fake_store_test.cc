// The orchestrator's in-memory store keeps the contract the SQLite and
// PostgreSQL stores keep (tests/support/store_contract.h), so unit tests of
// the orchestrator can stand on it.
#include <catch2/catch.hpp>

#include "common/fake_content_store.h"
#include "services/orchestrator/content_backed_store.h"
#include "services/orchestrator/fake_store.h"
#include "tests/support/store_contract.h"

namespace crl::testing {
namespace {

using orchestrator::ContentBackedStore;
using orchestrator::FakeStore;

// One content store seen through several store objects.
class SharedContent final : public ContentStoreInterface {
 public:
  explicit SharedContent(FakeContentStore* content) : content_(content) {}
  absl::StatusOr<std::string> Put(const std::string& data) override { return content_->Put(data); }
  absl::StatusOr<std::string> Get(const std::string& address) override { return content_->Get(address); }

 private:
  FakeContentStore* content_;
};

TEST_CASE("the in-memory store keeps the store contract", "[orchestrator][store]") {
  auto db = std::make_shared<FakeStore::Database>();
  FakeContentStore content;
  CheckStore([&]() -> std::unique_ptr<StoreInterface> {
    return std::make_unique<ContentBackedStore>(std::make_unique<FakeStore>(db),
                                                std::make_unique<SharedContent>(&content));
  });
}

TEST_CASE("the in-memory store can lose its database and get it back", "[orchestrator][store]") {
  FakeStore store;
  bool created = false;
  REQUIRE(store.CreateRun(MakeRun("a", "", 1, v1::RUN_STATE_RUNNING), &created).ok());
  store.FailWrites(absl::UnavailableError("database: gone"));
  v1::RunEvent e;
  e.set_run_id("a");
  CHECK(store.AppendEvent(e).status().code() == absl::StatusCode::kUnavailable);
  CHECK(store.PutVariant("a", MakeVariant("g/0", "t")).code() == absl::StatusCode::kUnavailable);
  CHECK(store.GetRun("a").ok());  // reads still work
  store.FailWrites(absl::OkStatus());
  auto back = store.AppendEvent(e);
  REQUIRE(back.ok());
  CHECK(back->sequence() == 1);  // the failed append took no number
}

}  // namespace
}  // namespace crl::testing
