// The orchestrator store's contract, one set of checks for every
// StoreInterface: SQLite and PostgreSQL (tests/integration/store_test.cc) and
// the in-memory fake (tests/unit/fake_store_test.cc), each behind the
// content-backed wrapper that keeps large texts by address.
#ifndef CRL_TESTS_SUPPORT_STORE_CONTRACT_H_
#define CRL_TESTS_SUPPORT_STORE_CONTRACT_H_

#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "services/orchestrator/store.h"

namespace crl::testing {

using orchestrator::StoreInterface;

inline v1::Run MakeRun(const std::string& id, const std::string& key, int64_t created, v1::RunState state) {
  v1::Run r;
  r.set_run_id(id);
  r.set_idempotency_key(key);
  r.set_created_at(created);
  r.set_state(state);
  return r;
}

inline v1::Variant MakeVariant(const std::string& key, const std::string& task) {
  v1::Variant v;
  v.set_key(key);
  v.set_task_name(task);
  v.set_completion("code of " + key);
  return v;
}

inline std::vector<std::string> Keys(const std::vector<v1::Variant>& vs) {
  std::vector<std::string> out;
  for (const auto& v : vs) out.push_back(v.key());
  return out;
}

// `open` makes a new store object on the same database each call (so that
// two may write at once, as two orchestrator processes would).
inline void CheckStore(const std::function<std::unique_ptr<StoreInterface>()>& open) {
  auto s = open();
  REQUIRE(s != nullptr);
  bool created = false;
  // Idempotent by key.
  auto a = s->CreateRun(MakeRun("a", "k", 100, v1::RUN_STATE_QUEUED), &created);
  REQUIRE(a.ok());
  CHECK(created);
  auto again = s->CreateRun(MakeRun("b", "k", 101, v1::RUN_STATE_QUEUED), &created);
  REQUIRE(again.ok());
  CHECK_FALSE(created);
  CHECK(again->run_id() == "a");
  // Runs without a key never collide on it.
  REQUIRE(s->CreateRun(MakeRun("c", "", 102, v1::RUN_STATE_RUNNING), &created).ok());
  REQUIRE(s->CreateRun(MakeRun("d", "", 102, v1::RUN_STATE_QUEUED), &created).ok());
  CHECK(created);
  CHECK(s->GetRun("zzz").status().code() == absl::StatusCode::kNotFound);
  CHECK(s->PutRun(MakeRun("zzz", "", 1, v1::RUN_STATE_RUNNING)).code() == absl::StatusCode::kNotFound);

  // Newest first (ties by id), filtered by state, paged by the last id.
  auto all = s->ListRuns(v1::RUN_STATE_UNSPECIFIED, 10, "");
  REQUIRE(all.ok());
  std::vector<std::string> ids;
  for (const auto& r : *all) ids.push_back(r.run_id());
  CHECK(ids == std::vector<std::string>{"d", "c", "a"});
  auto page2 = s->ListRuns(v1::RUN_STATE_UNSPECIFIED, 2, "c");
  REQUIRE(page2.ok());
  REQUIRE(page2->size() == 1);
  CHECK((*page2)[0].run_id() == "a");
  auto queued = s->ListRuns(v1::RUN_STATE_QUEUED, 10, "");
  REQUIRE(queued.ok());
  CHECK(queued->size() == 2);
  v1::Run a_running = MakeRun("a", "k", 100, v1::RUN_STATE_RUNNING);
  a_running.set_candidates(7);
  REQUIRE(s->PutRun(a_running).ok());
  CHECK(s->GetRun("a")->candidates() == 7);
  CHECK(s->ListRuns(v1::RUN_STATE_QUEUED, 10, "")->size() == 1);

  // Gapless sequences per run, resumable reads.
  for (int i = 0; i < 3; ++i) {
    v1::RunEvent e;
    e.set_run_id("a");
    e.set_message(std::to_string(i));
    auto stored = s->AppendEvent(e);
    REQUIRE(stored.ok());
    CHECK(stored->sequence() == i + 1);
  }
  v1::RunEvent other;
  other.set_run_id("c");
  CHECK(s->AppendEvent(other)->sequence() == 1);
  auto after = s->EventsAfter("a", 1, 10);
  REQUIRE(after.ok());
  REQUIRE(after->size() == 2);
  CHECK((*after)[0].sequence() == 2);
  CHECK((*after)[1].message() == "2");
  CHECK(s->EventsAfter("a", 0, 1)->size() == 1);

  // Variants: replaced under their key, ordered bytewise, by task, by group
  // (a group's keys are a range: "g1/..." but not "g10/...").
  for (const std::string key : {"g1/1", "g10/0", "g1/0", "g2/0", "G1/0"}) {
    REQUIRE(s->PutVariant("a", MakeVariant(key, key[1] == '2' ? "t2" : "t1")).ok());
  }
  v1::Variant replaced = MakeVariant("g1/0", "t1");
  replaced.set_speedup(2.5);
  REQUIRE(s->PutVariant("a", replaced).ok());
  CHECK(Keys(*s->Variants("a", "")) == std::vector<std::string>{"G1/0", "g1/0", "g1/1", "g10/0", "g2/0"});
  CHECK(Keys(*s->Variants("a", "t2")) == std::vector<std::string>{"g2/0"});
  CHECK(Keys(*s->GroupVariants("a", "g1")) == std::vector<std::string>{"g1/0", "g1/1"});
  CHECK(s->Variants("c", "")->empty());
  auto got = s->GetVariant("a", "g1/0");
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->speedup() == 2.5);
  CHECK((*got)->completion() == "code of g1/0");
  CHECK((*got)->content().count("completion") == 1);  // kept on disk, by address
  CHECK_FALSE(s->GetVariant("a", "nope")->has_value());

  // Groups.
  v1::StoredGroup g;
  g.set_group_id("s0/r0/t1");
  g.set_prompt("p");
  REQUIRE(s->PutGroup("a", g).ok());
  g.set_prompt("p2");
  REQUIRE(s->PutGroup("a", g).ok());
  auto gg = s->GetGroup("a", "s0/r0/t1");
  REQUIRE(gg.ok());
  REQUIRE(gg->has_value());
  CHECK((*gg)->prompt() == "p2");
  CHECK_FALSE(s->GetGroup("c", "s0/r0/t1")->has_value());

  // A scored candidate's three records are one transaction: with a run that
  // is not there, none is written.
  v1::RunEvent ev;
  ev.set_run_id("a");
  ev.set_kind("variant");
  a_running.set_candidates(8);
  auto scored = s->RecordScored(MakeVariant("g3/0", "t1"), a_running, ev);
  REQUIRE(scored.ok());
  CHECK(scored->sequence() == 4);
  CHECK(s->GetRun("a")->candidates() == 8);
  CHECK(s->GetVariant("a", "g3/0")->has_value());
  v1::RunEvent ghost_event;
  ghost_event.set_run_id("ghost");
  auto ghost = s->RecordScored(MakeVariant("g9/0", "t1"), MakeRun("ghost", "", 1, v1::RUN_STATE_RUNNING),
                               ghost_event);
  CHECK_FALSE(ghost.ok());
  CHECK_FALSE(s->GetVariant("ghost", "g9/0")->has_value());
  CHECK(s->EventsAfter("ghost", 0, 10)->empty());

  // Two writers (two orchestrator processes on one database) appending to
  // one run: every sequence number once, none skipped.
  std::vector<std::unique_ptr<StoreInterface>> writers;
  writers.push_back(open());
  writers.push_back(open());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (auto& w : writers) {
    threads.emplace_back([&failures, store = w.get()] {
      for (int i = 0; i < 25; ++i) {
        v1::RunEvent e;
        e.set_run_id("d");
        if (!store->AppendEvent(e).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures.load() == 0);
  auto ds = s->EventsAfter("d", 0, 100);
  REQUIRE(ds.ok());
  REQUIRE(ds->size() == 50);
  for (int i = 0; i < 50; ++i) CHECK((*ds)[i].sequence() == i + 1);

  // The hack database: a sighting of a known case is counted into it (kinds
  // and evidence united, first origin kept); listings filter by kind and
  // task, most recently seen first; sightings from two writers all count.
  auto hack = [](const std::string& id, const std::string& task, const std::string& kind, int64_t at,
                 const std::string& origin) {
    v1::HackCase c;
    c.set_case_id(id);
    c.set_task_name(task);
    c.add_kinds(kind);
    c.add_evidence("because " + kind);
    c.set_source("code " + id);
    c.set_origin(origin);
    c.set_first_seen_at(at);
    c.set_last_seen_at(at);
    c.set_times_seen(1);
    return c;
  };
  REQUIRE(s->RecordHackCase(hack("h1", "t1", "side-stream", 10, "run:a/x")).ok());
  REQUIRE(s->RecordHackCase(hack("h2", "t2", "reused-output", 20, "file.py")).ok());
  auto merged = s->RecordHackCase(hack("h1", "t1", "timer-mismatch", 30, "run:b/y"));
  REQUIRE(merged.ok());
  CHECK(merged->times_seen() == 2);
  CHECK(merged->origin() == "run:a/x");
  CHECK(merged->first_seen_at() == 10);
  CHECK(merged->last_seen_at() == 30);
  CHECK(std::vector<std::string>(merged->kinds().begin(), merged->kinds().end()) ==
        std::vector<std::string>{"side-stream", "timer-mismatch"});
  CHECK(merged->evidence_size() == 2);
  auto all_cases = s->HackCases("", "", 100);
  REQUIRE(all_cases.ok());
  REQUIRE(all_cases->size() == 2);
  CHECK((*all_cases)[0].case_id() == "h1");  // seen last
  CHECK(s->HackCases("reused-output", "", 100)->size() == 1);
  CHECK(s->HackCases("", "t1", 100)->size() == 1);
  CHECK(s->HackCases("side-stream", "t2", 100)->empty());
  CHECK(s->HackCases("", "", 1)->size() == 1);
  CHECK(s->GetHackCase("h2")->value().source() == "code h2");
  CHECK_FALSE(s->GetHackCase("nope")->has_value());
  threads.clear();
  for (auto& w : writers) {
    threads.emplace_back([&failures, &hack, store = w.get()] {
      for (int i = 0; i < 10; ++i) {
        if (!store->RecordHackCase(hack("h3", "t3", "global-flags", 40 + i, "w")).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures.load() == 0);
  CHECK(s->GetHackCase("h3")->value().times_seen() == 20);
}

}  // namespace crl::testing

#endif  // CRL_TESTS_SUPPORT_STORE_CONTRACT_H_
