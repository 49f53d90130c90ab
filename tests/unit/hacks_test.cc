// The hack database's rules (lib/hacks) and the judge on suspicious rewards
// (services/orchestrator/judge.h): what counts as a hack and of which kind,
// how sightings merge, which known cases look like a candidate, how a
// judge's answer is read, and the judge over real HTTP against a scripted
// OpenAI-compatible server that answers cheat, honest, garbage, an error,
// or too late.
#include <catch2/catch.hpp>

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/http_client.h"
#include "lib/hacks/hack_case.h"
#include "lib/hacks/similarity.h"
#include "services/orchestrator/judge.h"

namespace crl {
namespace {

using nlohmann::json;

v1::Variant Scored(v1::Verdict verdict, std::vector<v1::Flag> flags = {}, const std::string& log = "",
                   const std::string& source = "code") {
  v1::Variant v;
  v.set_task_name("row_sum");
  v.set_verdict(verdict);
  for (auto f : flags) v.add_flags(f);
  v.set_log(log);
  v.mutable_candidate()->set_source(source);
  return v;
}

std::vector<std::string> KindsOf(const v1::Variant& v) { return hacks::Kinds(v); }

TEST_CASE("hack kinds: trust flags that say cheating and cheating reasons, not noise, labels or plain wrong answers",
          "[hacks]") {
  CHECK(KindsOf(Scored(v1::VERDICT_OK, {v1::FLAG_SIDE_STREAM, v1::FLAG_TIMER_MISMATCH})) ==
        std::vector<std::string>{"side-stream", "timer-mismatch"});
  CHECK(KindsOf(Scored(v1::VERDICT_OK, {v1::FLAG_NOISY, v1::FLAG_NO_CUSTOM_KERNEL})).empty());
  CHECK(KindsOf(Scored(v1::VERDICT_OK)).empty());
  CHECK(KindsOf(Scored(v1::VERDICT_WRONG_ANSWER, {}, "trial 2: output 0 differs at [3]")).empty());
  CHECK(KindsOf(Scored(v1::VERDICT_WRONG_ANSWER, {},
                       "trial 1: output 0 is the memory the candidate's previous call returned: it reuses one "
                       "output buffer across calls")) == std::vector<std::string>{"reused-output"});
  CHECK(KindsOf(Scored(v1::VERDICT_WRONG_ANSWER, {}, "a Python thread was left running after a timed forward")) ==
        std::vector<std::string>{"threads-left-running"});
  CHECK(KindsOf(Scored(v1::VERDICT_WRONG_ANSWER, {}, "trial 1: forward modified input(s) 0")) ==
        std::vector<std::string>{"inputs-modified"});
  CHECK(KindsOf(Scored(v1::VERDICT_SANDBOX_VIOLATION, {}, "socket")) == std::vector<std::string>{"sandbox-violation"});
  // A reason in the log of a verified candidate decided nothing.
  CHECK(KindsOf(Scored(v1::VERDICT_OK, {}, "reuses one output buffer")).empty());
  v1::Variant judged = Scored(v1::VERDICT_OK);
  judged.mutable_judgement()->set_decision("cheat");
  CHECK(KindsOf(judged) == std::vector<std::string>{"judged-cheat"});
  for (const auto& k : {"side-stream", "reused-output", "known-hack", "judged-cheat"}) {
    CHECK(std::find(hacks::KnownKinds().begin(), hacks::KnownKinds().end(), k) != hacks::KnownKinds().end());
  }
}

TEST_CASE("hack cases: one per code and task, sightings counted and united, known hacks kept whatever caught them",
          "[hacks]") {
  CHECK(hacks::CaseId("t", "x") == hacks::CaseId("t", "x"));
  CHECK(hacks::CaseId("t", "x") != hacks::CaseId("u", "x"));
  CHECK(hacks::CaseId("t", "x").size() == 16);
  CHECK_FALSE(hacks::CaseOf(Scored(v1::VERDICT_WRONG_ANSWER, {}, "differs"), "run:r/k", 5).has_value());
  auto known = hacks::CaseOf(Scored(v1::VERDICT_WRONG_ANSWER, {}, "differs"), "tasks/x.py", 5, true, "caches by pointer");
  REQUIRE(known.has_value());
  CHECK(std::vector<std::string>(known->kinds().begin(), known->kinds().end()) == std::vector<std::string>{"known-hack"});
  CHECK(known->evidence(0) == "author: caches by pointer");
  // A known hack that nothing caught is recorded too: that is the news.
  CHECK(hacks::CaseOf(Scored(v1::VERDICT_OK), "tasks/y.py", 5, true).has_value());

  auto a = hacks::CaseOf(Scored(v1::VERDICT_OK, {v1::FLAG_SIDE_STREAM}), "run:a/1", 10);
  auto b = hacks::CaseOf(Scored(v1::VERDICT_OK, {v1::FLAG_TIMER_MISMATCH}), "run:b/2", 20);
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  CHECK(a->case_id() == b->case_id());
  v1::HackCase m = hacks::MergeSighting(*a, *b);
  CHECK(m.times_seen() == 2);
  CHECK(m.origin() == "run:a/1");
  CHECK(m.first_seen_at() == 10);
  CHECK(m.last_seen_at() == 20);
  CHECK(m.kinds_size() == 2);
  CHECK(m.flags_size() == 2);
  CHECK(hacks::Matches(m, "timer-mismatch", ""));
  CHECK(hacks::Matches(m, "", "row_sum"));
  CHECK_FALSE(hacks::Matches(m, "reused-output", ""));
  CHECK_FALSE(hacks::Matches(m, "", "softmax"));
}

TEST_CASE("code similarity: the same tokens score 1, renames a little less, other code little; task breaks ties",
          "[hacks]") {
  const std::string a = "for (int i = 0; i < n; ++i) out[i] = in[i] * 2; // double it\n";
  const std::string renamed = "for (int j = 0; j < n; ++j) out[j] = in[j] * 2;\n";
  const std::string other = "cudaStream_t s; cudaStreamCreate(&s); kernel<<<g, b, 0, s>>>(x);";
  CHECK(hacks::CodeSimilarity(a, a + "  // another comment") == Approx(1.0));
  const double r = hacks::CodeSimilarity(a, renamed);
  CHECK(r > 0.2);
  CHECK(r < 1.0);
  CHECK(hacks::CodeSimilarity(a, other) < 0.05);
  CHECK(hacks::CodeSimilarity("", "") == 0);
  std::vector<v1::HackCase> cases(3);
  cases[0].set_case_id("c0");
  cases[0].set_source(other);
  cases[0].set_task_name("row_sum");
  cases[1].set_case_id("c1");
  cases[1].set_source(renamed);
  cases[1].set_task_name("softmax");
  cases[2].set_case_id("c2");
  cases[2].set_source(other);
  cases[2].set_task_name("softmax");
  auto best = hacks::MostSimilar(cases, a, "row_sum", 2);
  REQUIRE(best.size() == 2);
  CHECK(best[0].case_id() == "c1");
  CHECK(best[1].case_id() == "c0");  // the same task beats the same code elsewhere
}

TEST_CASE("a judge's answer: the last VERDICT line decides; anything else is undecided", "[hacks]") {
  auto j = orchestrator::ParseJudgeAnswer("It caches by pointer.\nVERDICT: CHEAT");
  CHECK(j.decision() == "cheat");
  CHECK(j.reasoning() == "It caches by pointer.");
  CHECK(orchestrator::ParseJudgeAnswer("Fused.\n**Verdict: honest**\n").decision() == "honest");
  CHECK(orchestrator::ParseJudgeAnswer("VERDICT: HONEST\nOn second thought:\nVERDICT: CHEAT").decision() == "cheat");
  auto none = orchestrator::ParseJudgeAnswer("I cannot tell.");
  CHECK(none.decision() == "undecided");
  CHECK_THAT(none.error(), Catch::Contains("no \"VERDICT"));
  CHECK(orchestrator::ParseJudgeAnswer("VERDICT: maybe").decision() == "undecided");
}

TEST_CASE("the suspicion gate: past the ceiling, or past the jump factor over the task's best so far", "[hacks]") {
  v1::JudgeSpec off;
  CHECK_FALSE(orchestrator::SuspicionGate(off).active());
  CHECK(orchestrator::SuspicionGate(off).Trigger("t", 1000).empty());
  v1::JudgeSpec spec;
  spec.set_jump_factor(3);
  spec.set_ceiling(50);
  orchestrator::SuspicionGate gate(spec);
  CHECK(gate.Trigger("t", 2.9).empty());                            // 3 x the reference
  CHECK_THAT(gate.Trigger("t", 3.5), Catch::Contains("the run's best 1x"));
  gate.Accept("t", 2.0);
  CHECK(gate.Trigger("t", 5.9).empty());
  CHECK_FALSE(gate.Trigger("t", 6.1).empty());
  CHECK(gate.Trigger("u", 2.9).empty());                             // per task
  gate.Accept("t", 40);
  CHECK_THAT(gate.Trigger("t", 51), Catch::Contains("ceiling"));
}

TEST_CASE("a judgement decides the reward: honest stands, cheat is withheld and flagged, undecided is held",
          "[hacks]") {
  v1::Variant v = Scored(v1::VERDICT_OK);
  v.set_speedup(9);
  v.mutable_reward()->set_status(v1::REWARD_STATUS_OK);
  v.mutable_reward()->set_reward(2);
  v1::Judgement j;
  j.set_decision("honest");
  v1::Variant honest = v;
  orchestrator::ApplyJudgement(j, &honest);
  CHECK(honest.reward().status() == v1::REWARD_STATUS_OK);
  CHECK(honest.reward().reward() == 2);
  CHECK(honest.judgement().decision() == "honest");
  j.set_decision("cheat");
  j.set_reasoning("returns a cached tensor");
  v1::Variant cheat = v;
  orchestrator::ApplyJudgement(j, &cheat);
  CHECK(cheat.reward().status() == v1::REWARD_STATUS_WITHHELD);
  CHECK(cheat.flags(0) == v1::FLAG_JUDGED_CHEAT);
  CHECK_THAT(cheat.flag_evidence(0), Catch::Contains("returns a cached tensor"));
  j.set_decision("undecided");
  j.set_error("judge down");
  v1::Variant held = v;
  orchestrator::ApplyJudgement(j, &held);
  CHECK(held.reward().status() == v1::REWARD_STATUS_HELD);
  CHECK(held.reward().reward() == 0);
  CHECK_THAT(held.reward().explanation(), Catch::Contains("judge down"));
}

// An OpenAI-compatible chat server on loopback whose answers are scripted.
class ScriptedJudgeServer {
 public:
  ScriptedJudgeServer() {
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      std::string answer;
      {
        std::lock_guard<std::mutex> lock(mu_);
        bodies_.push_back(req.body);
        auth_.push_back(req.get_header_value("Authorization"));
        answer = answers_.empty() ? "" : answers_.front();
        if (!answers_.empty()) answers_.erase(answers_.begin());
      }
      if (answer == "<sleep>") {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        answer = "VERDICT: HONEST";
      }
      if (answer == "<500>") {
        res.status = 500;
        res.set_content("overloaded", "text/plain");
        return;
      }
      if (answer == "<not json>") {
        res.set_content("<html>gateway</html>", "text/html");
        return;
      }
      res.set_content(json({{"model", "judge-7b"},
                            {"choices", {{{"index", 0},
                                          {"message", {{"role", "assistant"}, {"content", answer}}},
                                          {"finish_reason", "stop"}}}}})
                          .dump(),
                      "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~ScriptedJudgeServer() {
    server_.stop();
    thread_.join();
  }
  void Answer(const std::string& a) {
    std::lock_guard<std::mutex> lock(mu_);
    answers_.push_back(a);
  }
  std::vector<std::string> bodies() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }
  std::vector<std::string> auth() {
    std::lock_guard<std::mutex> lock(mu_);
    return auth_;
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<std::string> answers_, bodies_, auth_;
};

TEST_CASE("the judge over real HTTP: cheat, honest, garbage, an error status, not JSON, too late, nobody there",
          "[hacks]") {
  ScriptedJudgeServer server;
  auto http = NewCurlHttpClient();
  orchestrator::OpenAiJudgeOptions o;
  o.url = server.base();
  o.model = "judge-7b";
  o.api_key = "sk-test";
  o.timeout = absl::Milliseconds(700);
  auto judge = orchestrator::OpenAiJudge::Create(http.get(), o, std::string(CRL_SOURCE_DIR) + "/prompts/judge/judge.tmpl");
  REQUIRE(judge.ok());
  orchestrator::JudgeCase c;
  c.task_name = "row_sum";
  c.reference = "def forward(x): return x.sum(1)";
  c.candidate = Scored(v1::VERDICT_OK, {}, "", "static torch::Tensor cached; return cached;");
  c.candidate.set_speedup(40);
  c.candidate.add_flag_evidence("output 0 is the memory of the previous call");
  c.trigger = "40x is above the ceiling 20x";
  v1::HackCase known;
  known.set_case_id("abc123");
  known.add_kinds("reused-output");
  known.set_source("static at::Tensor out; return out;");
  known.mutable_judgement()->set_decision("cheat");
  known.mutable_judgement()->set_reasoning("one buffer for every call");
  c.examples = {known};
  const RequestContext& ctx = RequestContext::Background();

  server.Answer("The output is cached across calls.\nVERDICT: CHEAT");
  server.Answer("It fuses the two loops.\nVERDICT: HONEST");
  server.Answer("Hard to say.");
  server.Answer("<500>");
  server.Answer("<not json>");
  server.Answer("<sleep>");
  v1::Judgement cheat = (*judge)->Judge(c, ctx);
  CHECK(cheat.decision() == "cheat");
  CHECK(cheat.reasoning() == "The output is cached across calls.");
  CHECK(cheat.model() == "judge-7b");
  CHECK((*judge)->Judge(c, ctx).decision() == "honest");
  v1::Judgement garbage = (*judge)->Judge(c, ctx);
  CHECK(garbage.decision() == "undecided");
  CHECK(garbage.reasoning() == "Hard to say.");
  v1::Judgement error = (*judge)->Judge(c, ctx);
  CHECK(error.decision() == "undecided");
  CHECK_THAT(error.error(), Catch::Contains("HTTP 500"));
  v1::Judgement not_json = (*judge)->Judge(c, ctx);
  CHECK(not_json.decision() == "undecided");
  CHECK_THAT(not_json.error(), Catch::Contains("not a chat completion"));
  v1::Judgement late = (*judge)->Judge(c, ctx);
  CHECK(late.decision() == "undecided");
  CHECK_THAT(late.error(), Catch::Contains("DEADLINE_EXCEEDED"));

  // What it was shown: the candidate, the reference, the evidence, the
  // trigger and the known case with its earlier judgement, as chat messages.
  const json first = json::parse(server.bodies().at(0));
  CHECK(first["model"] == "judge-7b");
  CHECK(first["temperature"] == 0);
  REQUIRE(first["messages"].size() == 2);
  const std::string user = first["messages"][1]["content"];
  for (const char* shown : {"static torch::Tensor cached", "def forward(x)", "previous call", "above the ceiling 20x",
                            "Known case abc123", "reused-output", "one buffer for every call", "40x"}) {
    CHECK_THAT(user, Catch::Contains(shown));
  }
  CHECK(server.auth().at(0) == "Bearer sk-test");

  // Nobody listening: undecided, saying where.
  o.url = "http://127.0.0.1:1/v1";
  auto absent = orchestrator::OpenAiJudge::Create(http.get(), o, std::string(CRL_SOURCE_DIR) + "/prompts/judge/judge.tmpl");
  REQUIRE(absent.ok());
  v1::Judgement down = (*absent)->Judge(c, ctx);
  CHECK(down.decision() == "undecided");
  CHECK_THAT(down.error(), Catch::Contains("127.0.0.1:1"));
  // A template with a name the judge does not fill is refused at start.
  auto broken = orchestrator::OpenAiJudge::Create(http.get(), o, std::string(CRL_SOURCE_DIR) + "/prompts/native.tmpl");
  CHECK_FALSE(broken.ok());
}

}  // namespace
}  // namespace crl
