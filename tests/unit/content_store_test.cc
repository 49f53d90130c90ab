// Code and logs content-addressed: the disk store names bytes by their
// SHA-256, keeps identical bytes once and tells a changed file from a kept
// one; the orchestrator's store keeps its rows free of code and puts it back
// on every read, and a content store that fails fails the write or read that
// needed it, by name, with nothing half-recorded.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "common/content_store.h"
#include "common/fake_content_store.h"
#include "common/file.h"
#include "common/hash.h"
#include "services/orchestrator/content_backed_store.h"
#include "services/orchestrator/fake_store.h"
#include "tests/support/temp_dir.h"

namespace crl {
namespace {

namespace fs = std::filesystem;

using crl::testing::TempDir;  // tests/support/temp_dir.h

int FilesUnder(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) n += e.is_regular_file() ? 1 : 0;
  return n;
}

TEST_CASE("disk content store: addresses are SHA-256, same bytes kept once, changed files detected",
          "[content]") {
  TempDir dir("content");
  auto store = DiskContentStore::Open(dir.path() + "/content");
  REQUIRE(store.ok());
  const std::string code = std::string("__global__ void k() {}\n\0binary\xff", 32);
  auto a = (*store)->Put(code);
  REQUIRE(a.ok());
  CHECK(*a == "sha256:" + Sha256Hex(code));
  auto again = (*store)->Put(code);
  REQUIRE(again.ok());
  CHECK(*again == *a);
  REQUIRE((*store)->Put("other").ok());
  CHECK(FilesUnder(dir.path() + "/content") == 2);
  CHECK(fs::exists((*store)->PathOf(*a)));
  auto back = (*store)->Get(*a);
  REQUIRE(back.ok());
  CHECK(*back == code);
  // The empty string is content too.
  auto empty = (*store)->Put("");
  REQUIRE(empty.ok());
  CHECK((*store)->Get(*empty).value() == "");

  CHECK((*store)->Get("md5:abc").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK((*store)->Get("sha256:../../etc/passwd").status().code() == absl::StatusCode::kInvalidArgument);
  auto missing = (*store)->Get(ContentAddress("never stored"));
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains(ContentAddress("never stored")));

  REQUIRE(WriteStringToFile((*store)->PathOf(*a), "tampered").ok());
  auto changed = (*store)->Get(*a);
  CHECK(changed.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(changed.status().message()), Catch::Contains((*store)->PathOf(*a)));
  // No temporary files are left behind.
  for (const auto& e : fs::recursive_directory_iterator(dir.path())) {
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  }
}

// The variant row exactly as the rows' store holds it.
v1::Variant RawRow(orchestrator::FakeStore::Database* db, const std::string& key) {
  absl::MutexLock l(&db->mu);
  auto it = db->variants.find({"r1", key});
  REQUIRE(it != db->variants.end());
  return it->second;
}

v1::Variant Scored(const std::string& key, const std::string& code) {
  v1::Variant v;
  v.set_key(key);
  v.set_task_name("row_sum");
  v.set_completion("analysis...\n```cpp\n" + code + "\n```");
  v.mutable_candidate()->set_source(code);
  v.mutable_candidate()->set_filename("candidate.cc");
  v.set_log("evaluated on w0: VERDICT_OK\n");
  v.set_scored(true);
  return v;
}

TEST_CASE("content-backed store: rows hold addresses, reads give the text back, events and groups too",
          "[content][orchestrator]") {
  auto rows = std::make_unique<orchestrator::FakeStore>();
  auto db = rows->database();
  auto content = std::make_unique<FakeContentStore>();
  FakeContentStore* blobs = content.get();
  orchestrator::ContentBackedStore store(std::move(rows), std::move(content));
  bool created = false;
  v1::Run run;
  run.set_run_id("r1");
  REQUIRE(store.CreateRun(run, &created).ok());

  const std::string code = "extern \"C\" int crl_run() { return 0; }";
  const v1::Variant a = Scored("s/0/row_sum/0", code);
  v1::RunEvent event;
  event.set_run_id("r1");
  event.set_kind("variant");
  *event.mutable_variant() = a;
  auto recorded = store.RecordScored(a, run, event);
  REQUIRE(recorded.ok());
  CHECK(recorded->sequence() == 1);
  CHECK(recorded->variant().completion() == a.completion());
  // Same code, different completion: the source is kept once.
  v1::Variant b = Scored("s/0/row_sum/1", code);
  b.set_completion("another analysis\n```cpp\n" + code + "\n```");
  REQUIRE(store.PutVariant("r1", b).ok());
  CHECK(blobs->size() == 4);  // two completions, one source, one log

  const v1::Variant raw = RawRow(db.get(), a.key());
  CHECK(raw.completion().empty());
  CHECK(raw.candidate().source().empty());
  CHECK(raw.log().empty());
  CHECK(raw.candidate().filename() == "candidate.cc");
  CHECK(raw.content().at("candidate.source") == ContentAddress(code));
  CHECK(raw.content().at("completion") == ContentAddress(a.completion()));
  CHECK(raw.content().at("log") == ContentAddress(a.log()));

  auto got = store.GetVariant("r1", a.key());
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->completion() == a.completion());
  CHECK((*got)->candidate().source() == code);
  CHECK((*got)->log() == a.log());
  CHECK((*got)->content().size() == 3);
  auto all = store.Variants("r1", "row_sum");
  REQUIRE(all.ok());
  REQUIRE(all->size() == 2);
  CHECK((*all)[1].completion() == b.completion());
  auto events = store.EventsAfter("r1", 0, 10);
  REQUIRE(events.ok());
  REQUIRE(events->size() == 1);
  CHECK((*events)[0].variant().candidate().source() == code);

  // An unparsed completion has no candidate: none is made up on the way back.
  v1::Variant reject;
  reject.set_key("s/0/row_sum/2");
  reject.set_completion("no code here");
  REQUIRE(store.PutVariant("r1", reject).ok());
  auto r = store.GetVariant("r1", reject.key());
  REQUIRE(r.ok());
  CHECK_FALSE((*r)->has_candidate());
  CHECK((*r)->completion() == "no code here");
  CHECK((*r)->content().count("log") == 0);

  v1::StoredGroup g;
  g.set_group_id("s/0/row_sum");
  g.set_prompt("write a faster row_sum");
  g.add_messages()->set_role("system");
  g.mutable_messages(0)->set_content("You are ...");
  g.add_messages()->set_role("user");
  g.mutable_messages(1)->set_content("write a faster row_sum");
  REQUIRE(store.PutGroup("r1", g).ok());
  auto gg = store.GetGroup("r1", g.group_id());
  REQUIRE(gg.ok());
  REQUIRE(gg->has_value());
  CHECK((*gg)->prompt() == g.prompt());
  CHECK((*gg)->messages(0).content() == "You are ...");
  CHECK((*gg)->messages(1).content() == g.prompt());
  CHECK((*gg)->content().at("messages.1") == (*gg)->content().at("prompt"));

  // A run submitted with its tasks inline: events name the files, the run
  // keeps their contents.
  v1::Run with_files;
  with_files.set_run_id("r2");
  v1::Task* task = with_files.mutable_spec()->add_tasks();
  task->set_name("row_sum");
  task->add_files()->set_path("task.yaml");
  task->mutable_files(0)->set_content("name: row_sum\n");
  REQUIRE(store.CreateRun(with_files, &created).ok());
  v1::RunEvent progress;
  progress.set_run_id("r2");
  progress.set_kind("progress");
  *progress.mutable_run() = with_files;
  auto appended = store.AppendEvent(progress);
  REQUIRE(appended.ok());
  CHECK(appended->run().spec().tasks(0).files(0).path() == "task.yaml");
  CHECK(appended->run().spec().tasks(0).files(0).content().empty());
  auto replayed = store.EventsAfter("r2", 0, 10);
  REQUIRE(replayed.ok());
  REQUIRE(replayed->size() == 1);
  CHECK((*replayed)[0].run().spec().tasks(0).files(0).content().empty());
  auto kept = store.GetRun("r2");
  REQUIRE(kept.ok());
  CHECK(kept->spec().tasks(0).files(0).content() == "name: row_sum\n");

  // The run row keeps the files' addresses, not their contents: a run
  // record rewritten for every scored candidate stays small, and an
  // unchanged file is not hashed again.
  const std::string field = "spec.tasks.0.files.0.content";
  auto raw_run = [&db](const std::string& id) {
    absl::MutexLock l(&db->mu);
    return db->runs.at(id);
  };
  CHECK(raw_run("r2").spec().tasks(0).files(0).content().empty());
  CHECK(raw_run("r2").content().at(field) == ContentAddress("name: row_sum\n"));
  const int puts = blobs->puts();
  v1::Run counted = *kept;
  counted.set_candidates(1);
  REQUIRE(store.PutRun(counted).ok());
  REQUIRE(store.RecordScored(a, counted, event).ok());
  CHECK(blobs->puts() == puts + 6);  // the variant's three texts, twice (row and event), not the task file
  CHECK(raw_run("r2").spec().tasks(0).files(0).content().empty());
  // A file that changes is written again (and its new address kept).
  counted.mutable_spec()->mutable_tasks(0)->mutable_files(0)->set_content("name: row_sum_v2\n");
  REQUIRE(store.PutRun(counted).ok());
  CHECK(raw_run("r2").content().at(field) == ContentAddress("name: row_sum_v2\n"));
  // A read of the run puts the contents back; a listing is a summary: the
  // files by name and address, read from the content store by no one.
  CHECK(store.GetRun("r2")->spec().tasks(0).files(0).content() == "name: row_sum_v2\n");
  const int gets = blobs->gets();
  auto listed = store.ListRuns(v1::RUN_STATE_UNSPECIFIED, 10, "");
  REQUIRE(listed.ok());
  int summaries = 0;
  for (const auto& r : *listed) {
    if (r.run_id() != "r2") continue;
    summaries += r.spec().tasks(0).files(0).content().empty() && r.spec().tasks(0).files(0).path() != "" &&
                 r.content().at(field) == ContentAddress("name: row_sum_v2\n");
  }
  CHECK(summaries == 1);
  CHECK(blobs->gets() == gets);
  v1::Run another = with_files;
  another.set_run_id("r3");
  auto created_filled = store.CreateRun(another, &created);
  REQUIRE(created_filled.ok());
  CHECK(created_filled->spec().tasks(0).files(0).content() == "name: row_sum\n");
  CHECK(raw_run("r3").spec().tasks(0).files(0).content().empty());
}

TEST_CASE("content-backed store: a content store that fails fails the write or the read, by name",
          "[content][orchestrator]") {
  auto content = std::make_unique<FakeContentStore>();
  FakeContentStore* blobs = content.get();
  orchestrator::ContentBackedStore store(std::make_unique<orchestrator::FakeStore>(), std::move(content));
  v1::Run run;
  run.set_run_id("r1");
  bool created;
  REQUIRE(store.CreateRun(run, &created).ok());
  REQUIRE(store.PutVariant("r1", Scored("k/0", "code 0")).ok());

  // Disk full: nothing is recorded, and the error is a store outage (the
  // run waits and retries), not a verdict.
  blobs->FailPuts(absl::UnavailableError("content store: cannot write /data/content/...: No space left on device"));
  v1::RunEvent event;
  event.set_run_id("r1");
  *event.mutable_variant() = Scored("k/1", "code 1");
  auto failed = store.RecordScored(event.variant(), run, event);
  CHECK(failed.status().code() == absl::StatusCode::kUnavailable);
  CHECK_FALSE(store.GetVariant("r1", "k/1")->has_value());
  CHECK(store.EventsAfter("r1", 0, 10)->empty());
  blobs->FailPuts(absl::OkStatus());

  blobs->FailGets(absl::DataLossError("content store: /data/content/sha256/ab/abcd no longer holds sha256:abcd"));
  auto lost = store.GetVariant("r1", "k/0");
  CHECK(lost.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(lost.status().message()), Catch::Contains("run r1 variant k/0 field"));
  CHECK_THAT(std::string(lost.status().message()), Catch::Contains("no longer holds"));
  // Runs themselves hold no content and are still served.
  CHECK(store.GetRun("r1").ok());
}

}  // namespace
}  // namespace crl
