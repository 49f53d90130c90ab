// crl-sampler as a real service. Its in-process policy over gRPC, the CLI
// and the OpenAI HTTP API, the last driven by the official `openai` npm
// client. Its OpenAI-compatible backend against a fault-injecting HTTP
// server written here: 429 with Retry-After, 500, malformed JSON, a stalled
// response, a cut stream, a connection reset, an oversized body, and the
// retry budget ending in UNAVAILABLE.
#include <catch2/catch.hpp>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "common/file.h"
#include "services/sampler/grpc_sampler_client.h"
#include "tests/support/policy_fixture.h"
#include "tests/support/service_process.h"

namespace crl::testing {
namespace {

using nlohmann::json;

const std::string kBin = CRL_BIN_DIR;
const std::string kSource = CRL_SOURCE_DIR;

std::string Read(const std::string& path) { return ReadFileToString(path, "file").value_or(""); }

int OpenAiPort(const ServiceProcess& p) {
  std::smatch m;
  static const std::regex kLine("openai listening http=[^:]+:(\\d+)");
  return std::regex_search(p.output(), m, kLine) ? std::stoi(m[1]) : 0;
}

v1::SampleRequest Ask(int n) {
  v1::SampleRequest r;
  r.set_num_completions(n);
  auto* m = r.add_messages();
  m->set_role("user");
  m->set_content("make the reduction faster");
  r.mutable_params()->set_temperature(1.0);
  r.mutable_params()->set_max_tokens(6);
  return r;
}

TEST_CASE("crl-sampler serves its policy over gRPC, the CLI and the OpenAI API (official client)",
          "[integration][sampler]") {
  TempDir dir;
  const std::string model = MakePolicy(dir);
  REQUIRE(WriteStringToFile(dir.path() + "/token", "crl-test-token\n").ok());
  ServiceProcess sampler(kBin + "/crl-sampler",
                         {"--policy", model, "--policy_name", "tiny", "--serve_openai",
                          "--openai_listen", "127.0.0.1:0", "--openai_auth_token_file", dir.path() + "/token",
                          "--max_batch", "8", "--listen=127.0.0.1:0",  // max_len: the model's 256
                          "--metrics_listen=127.0.0.1:0", "--log_level=warning", "--drain_delay=0s"});
  REQUIRE(sampler.started());
  const int http = OpenAiPort(sampler);
  REQUIRE(http > 0);

  // gRPC.
  ClientOptions co;
  co.timeout = absl::Seconds(60);
  auto client = GrpcSamplerClient::Create(sampler.grpc_address(), co);
  REQUIRE(client.ok());
  auto r = (*client)->Sample(Ask(4), RequestContext::Background());
  REQUIRE(r.ok());
  REQUIRE(r->completions_size() == 4);
  for (const auto& c : r->completions()) {
    CHECK(c.token_ids_size() >= 1);
    CHECK(c.token_ids_size() == c.token_logprobs_size());
    CHECK(c.policy_version() == "0");
    CHECK(c.token_source() == "engine");
  }
  CHECK(r->prompt_token_ids_size() > 0);
  auto policies = (*client)->ListPolicies(RequestContext::Background());
  REQUIRE(policies.ok());
  CHECK(policies->policies(0).name() == "tiny");
  CHECK(policies->policies(0).kind() == "libtorch");
  v1::SampleRequest wrong = Ask(1);
  wrong.set_policy("other");
  CHECK((*client)->Sample(wrong, RequestContext::Background()).status().code() == absl::StatusCode::kNotFound);

  // The CLI.
  const std::string log = dir.path() + "/cli.log";
  CHECK(std::system((kBin + "/crl sample --sampler " + sampler.grpc_address() +
                     " --prompt 'hello' -n 3 --max_tokens 5 --json >" + log + " 2>&1")
                        .c_str()) == 0);
  json cli = json::parse(Read(log), nullptr, false);
  INFO(Read(log));
  REQUIRE(cli.is_object());
  CHECK(cli["completions"].size() == 3);

  // The official OpenAI client.
  const std::string out = dir.path() + "/openai.json";
  const std::string cmd = "node " + kSource + "/tests/js/openai_client.mjs http://127.0.0.1:" +
                          std::to_string(http) + "/v1 tiny crl-test-token >" + out + " 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  json o = json::parse(Read(out), nullptr, false);
  INFO(Read(out));
  REQUIRE(o.is_object());
  CHECK(o["models"] == json::array({"tiny"}));
  CHECK(o["chat"]["choices"] == 2);
  CHECK(o["chat"]["logprobs"][0].get<int>() >= 1);
  CHECK(o["chat"]["logprobs"][0] == o["chat"]["usage"]["completion_tokens"].get<int>() -
                                        o["chat"]["logprobs"][1].get<int>());
  CHECK(o["chat"]["first_logprob"].get<double>() < 0);
  CHECK(o["chat"]["bytes_match"] == true);
  CHECK(o["chat_again"]["text"] == o["chat"]["text"]);  // seeded
  const std::string stopped = o["completion_stop"]["text"];
  CHECK(stopped.find('e') == std::string::npos);
  CHECK(stopped.find('a') == std::string::npos);
  CHECK(o["stream"]["finish"].is_string());
  CHECK(o["stream"]["chunks"].get<int>() >= 2);
  CHECK(o["chat_top"]["top_sizes"] == json::array({3}));
  CHECK(o["chat_top"]["descending"] == true);
  CHECK(o["chat_top"]["sampled_not_above_first"] == true);
  CHECK(o["chat_top"]["well_formed"] == true);
  // Seeded: streamed or not, the same completion; one event a token.
  CHECK(o["stream_tokens"]["text"] == o["chat_top"]["text"]);
  CHECK(o["stream_tokens"]["tokens"] == o["chat_top"]["tokens"]);
  CHECK(o["stream_tokens"]["token_chunks"] == o["chat_top"]["tokens"]);
  CHECK(o["stream_tokens"]["top_sizes"] == json::array({3}));
  CHECK(o["stream_tokens"]["usage"]["completion_tokens"] == o["chat_top"]["tokens"]);
  CHECK(o["top_without_logprobs"]["status"] == 400);
  CHECK(o["completion_top"]["top"].size() == o["completion_top"]["tokens"].get<size_t>());
  for (const json& k : o["completion_top"]["top"]) {
    CHECK(k.get<int>() >= 1);  // two tokens whose bytes show alike share a key
    CHECK(k.get<int>() <= 2);
  }
  CHECK(o["unknown_model"]["status"] == 404);
  CHECK(o["bad_temperature"]["status"] == 400);
  // Without the token: 401.
  REQUIRE(std::system(("node " + kSource + "/tests/js/openai_client.mjs http://127.0.0.1:" +
                       std::to_string(http) + "/v1 tiny wrong-token >" + out + " 2>&1")
                          .c_str()) == 0);
  CHECK(json::parse(Read(out))["models"]["status"] == 401);

  // A stream is sent as it is generated: its first event arrives long
  // before its last (a reply built whole and then cut into events arrives
  // at once).
  {
    httplib::Client api("127.0.0.1", http);
    api.set_read_timeout(120, 0);
    httplib::Request post;
    post.method = "POST";
    post.path = "/v1/chat/completions";
    post.headers = {{"Authorization", "Bearer crl-test-token"}};
    post.set_header("Content-Type", "application/json");
    post.body = json({{"model", "tiny"}, {"stream", true}, {"n", 4}, {"max_tokens", 200}, {"seed", 5},
                      {"messages", {{{"role", "user"}, {"content", "make the scan faster"}}}}})
                    .dump();
    std::string body;
    std::vector<double> arrivals;  // seconds after the request, per read
    const auto sent = std::chrono::steady_clock::now();
    post.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
      body.append(data, size);
      arrivals.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count());
      return true;
    };
    auto reply = api.send(post);
    REQUIRE(reply);
    CHECK(reply->status == 200);
    INFO(body.substr(0, 2000));
    CHECK_THAT(body, Catch::EndsWith("data: [DONE]\n\n"));
    REQUIRE(arrivals.size() >= 2);
    CHECK(arrivals.front() < 0.5 * arrivals.back());
    // A client that hangs up after its first event: the request is
    // cancelled (its sequences leave the batch), and the server goes on.
    post.body = json({{"model", "tiny"}, {"stream", true}, {"n", 4}, {"max_tokens", 220}, {"seed", 6},
                      {"messages", {{{"role", "user"}, {"content", "make the sort faster"}}}}})
                    .dump();
    post.content_receiver = [](const char*, size_t, uint64_t, uint64_t) { return false; };
    CHECK_FALSE(api.send(post));
    std::string after;
    for (int i = 0; i < 300 && after.find("code=\"cancelled\"") == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      after = HttpGet(sampler.metrics_port(), "/metrics");
    }
    CHECK_THAT(after, Catch::Contains("crl_sampler_requests_total{backend=\"libtorch\",code=\"cancelled\"} 1"));
    auto again = (*client)->Sample(Ask(2), RequestContext::Background());
    CHECK(again.ok());
  }

  // Another crl-sampler in front of this one's OpenAI API, as in front of
  // vLLM: a seeded sample through it has the same tokens and the same top
  // alternatives, by id, as this one's own.
  {
    ServiceProcess front(kBin + "/crl-sampler",
                         {"--endpoints", "http://127.0.0.1:" + std::to_string(http) + "/v1", "--endpoint_model",
                          "tiny", "--endpoint_api_key_file", dir.path() + "/token", "--listen=127.0.0.1:0",
                          "--metrics_listen=127.0.0.1:0", "--log_level=warning", "--drain_delay=0s"});
    REQUIRE(front.started());
    auto proxied = GrpcSamplerClient::Create(front.grpc_address(), co);
    REQUIRE(proxied.ok());
    v1::SampleRequest ask = Ask(1);
    ask.mutable_params()->set_seed(11);
    ask.mutable_params()->set_has_seed(true);
    ask.mutable_params()->set_top_logprobs(3);
    auto direct = (*client)->Sample(ask, RequestContext::Background());
    auto via = (*proxied)->Sample(ask, RequestContext::Background());
    REQUIRE(direct.ok());
    REQUIRE(via.ok());
    const v1::Completion& d = direct->completions(0);
    const v1::Completion& v = via->completions(0);
    CHECK(v.token_source() == "server");
    CHECK(v.text() == d.text());
    REQUIRE(d.top_logprobs_size() == d.token_ids_size());
    REQUIRE(v.top_logprobs_size() == d.top_logprobs_size());
    for (int i = 0; i < d.top_logprobs_size(); ++i) {
      const auto &dt = d.top_logprobs(i), &vt = v.top_logprobs(i);
      CHECK(std::vector<int>(vt.token_ids().begin(), vt.token_ids().end()) ==
            std::vector<int>(dt.token_ids().begin(), dt.token_ids().end()));
      REQUIRE(vt.logprobs_size() == dt.logprobs_size());
      for (int k = 0; k < dt.logprobs_size(); ++k) CHECK(vt.logprobs(k) == Approx(dt.logprobs(k)).margin(1e-4));
    }
  }

  const std::string metrics = HttpGet(sampler.metrics_port(), "/metrics");
  CHECK_THAT(metrics, Catch::Contains("crl_sampler_requests_total{backend=\"libtorch\",code=\"ok\"}"));
  CHECK_THAT(metrics, Catch::Contains("crl_sampler_completion_tokens_total"));
}

// An OpenAI-compatible server that misbehaves on cue.
class FaultServer {
 public:
  FaultServer() {
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      std::string act;
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++calls_;
        act = script_.empty() ? "ok" : script_.front();
        if (!script_.empty()) script_.pop_front();
      }
      const json body = json::parse(req.body, nullptr, false);
      const int n = body.value("n", 1);
      if (act == "429") {
        res.status = 429;
        res.set_header("Retry-After", "1");
        res.set_content(R"({"error": {"message": "rate limited"}})", "application/json");
      } else if (act == "500") {
        res.status = 500;
        res.set_content(R"({"error": {"message": "engine crashed"}})", "application/json");
      } else if (act == "malformed") {
        res.set_content("{\"choices\": [", "application/json");
      } else if (act == "slow") {
        std::this_thread::sleep_for(std::chrono::milliseconds(2500));
        res.set_content(Ok(n), "application/json");
      } else if (act == "cut-stream") {
        res.set_content("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"}}]}\n\n",
                        "text/event-stream");
      } else if (act == "huge") {
        res.set_content(std::string(200000, 'x'), "application/json");
      } else if (body.value("stream", false)) {
        std::string events;
        for (int i = 0; i < n; ++i) {
          events += "data: " + json({{"choices", {{{"index", i}, {"delta", {{"content", "ok"}}},
                                                  {"finish_reason", "stop"}}}}}).dump() + "\n\n";
        }
        res.set_content(events + "data: [DONE]\n\n", "text/event-stream");
      } else {
        res.set_content(Ok(n), "application/json");
      }
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FaultServer() {
    server_.stop();
    thread_.join();
  }
  void Script(std::deque<std::string> acts) {
    std::lock_guard<std::mutex> lock(mu_);
    script_ = std::move(acts);
    calls_ = 0;
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }

 private:
  static std::string Ok(int n) {
    json choices = json::array();
    for (int i = 0; i < n; ++i) {
      choices.push_back({{"index", i}, {"message", {{"role", "assistant"}, {"content", "return x"}}},
                         {"finish_reason", "stop"},
                         {"logprobs", {{"content", {{{"token", "token_id:7"}, {"logprob", -0.3}},
                                                    {{"token", "token_id:9"}, {"logprob", -0.6}}}}}}});
    }
    return json({{"model", "m"}, {"choices", choices}, {"usage", {{"prompt_tokens", 4}, {"completion_tokens", 2 * n}}}}).dump();
  }
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::deque<std::string> script_;
  int calls_ = 0;
};

// Accepts connections and closes them at once: "connection reset".
class ResetServer {
 public:
  ResetServer() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    listen(fd_, 16);
    thread_ = std::thread([this] {
      while (!stop_) {
        const int c = accept(fd_, nullptr, nullptr);
        if (c < 0) break;
        char buf[4096];
        (void)read(c, buf, sizeof(buf));  // take the request, answer nothing
        close(c);
      }
    });
  }
  ~ResetServer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }

 private:
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::unique_ptr<ServiceProcess> Sampler(const std::vector<std::string>& endpoints, std::vector<std::string> extra) {
  std::string list;
  for (const auto& e : endpoints) list += (list.empty() ? "" : ",") + e;
  std::vector<std::string> args = {"--endpoints", list, "--endpoint_model", "m",
                                   "--endpoint_initial_backoff", "50ms", "--endpoint_max_backoff", "200ms",
                                   "--endpoint_timeout", "1s", "--endpoint_attempts", "6",
                                   "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
                                   "--log_level=error", "--drain_delay=0s"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto p = std::make_unique<ServiceProcess>(kBin + "/crl-sampler", args);
  REQUIRE(p->started());
  return p;
}

TEST_CASE("crl-sampler's OpenAI backend retries what is worth retrying, and says when it gives up",
          "[integration][sampler]") {
  FaultServer faults;
  ResetServer reset;
  ClientOptions co;
  co.timeout = absl::Seconds(60);

  auto s = Sampler({faults.base()}, {});
  auto c = GrpcSamplerClient::Create(s->grpc_address(), co);
  REQUIRE(c.ok());
  // 429 (Retry-After: 1), 500, malformed JSON, a stalled response: then an answer.
  faults.Script({"429", "500", "malformed", "slow", "ok"});
  const auto start = std::chrono::steady_clock::now();
  auto r = (*c)->Sample(Ask(2), RequestContext::Background());
  REQUIRE(r.ok());
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::seconds(1));  // Retry-After
  CHECK(r->attempts() == 5);
  CHECK(r->completions_size() == 2);
  CHECK(r->completions(0).token_ids(1) == 9);
  CHECK(r->completions(0).token_logprobs(0) == Approx(-0.3));
  CHECK(r->completions(0).token_source() == "server");
  const std::string metrics = HttpGet(s->metrics_port(), "/metrics");
  for (const char* cause : {"http_429", "http_5xx", "malformed", "timeout"}) {
    CHECK_THAT(metrics, Catch::Contains(std::string("crl_sampler_retries_total{cause=\"") + cause + "\"} 1"));
  }
  // The budget: six failures, then UNAVAILABLE, never an empty completion.
  faults.Script({"500", "500", "500", "500", "500", "500", "ok"});
  auto down = (*c)->Sample(Ask(2), RequestContext::Background());
  REQUIRE_FALSE(down.ok());
  CHECK(down.status().code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(down.status().message()), Catch::Contains("after 6 attempt(s)"));
  CHECK(faults.calls() == 6);

  // A reset connection moves to the other endpoint.
  auto s2 = Sampler({reset.base(), faults.base()}, {});
  auto c2 = GrpcSamplerClient::Create(s2->grpc_address(), co);
  faults.Script({"ok"});
  auto r2 = (*c2)->Sample(Ask(1), RequestContext::Background());
  REQUIRE(r2.ok());
  CHECK(r2->attempts() == 2);
  CHECK_THAT(HttpGet(s2->metrics_port(), "/metrics"), Catch::Contains("crl_sampler_retries_total{cause=\"reset\"} 1"));

  // Streams: a cut stream is retried; an oversized body is refused outright.
  auto s3 = Sampler({faults.base()}, {"--endpoint_stream", "--endpoint_max_response_bytes", "100000"});
  auto c3 = GrpcSamplerClient::Create(s3->grpc_address(), co);
  faults.Script({"cut-stream", "ok"});
  auto r3 = (*c3)->Sample(Ask(2), RequestContext::Background());
  REQUIRE(r3.ok());
  CHECK(r3->attempts() == 2);
  CHECK(r3->completions(1).text() == "ok");
  faults.Script({"huge"});
  auto big = (*c3)->Sample(Ask(1), RequestContext::Background());
  CHECK(big.status().code() == absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace crl::testing
