// The OpenAI-compatible backend against a scripted HTTP client and a fake
// clock: what is retried and how long it waits (429 with Retry-After, 5xx,
// connect errors, resets, timeouts, malformed bodies), what is not (other
// 4xx), the retry budget ending in UNAVAILABLE, token ids, API keys, LoRA
// registration; and the JSON of both directions of the API.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/file.h"
#include "lib/policy/bpe_trainer.h"
#include "common/fake_http_client.h"
#include "services/sampler/openai_backend.h"
#include "services/sampler/openai_format.h"

namespace crl::sampler {
namespace {

using nlohmann::json;

std::string Chat(int n, bool ids = true) {
  json choices = json::array();
  for (int i = 0; i < n; ++i) {
    json content = json::array();
    content.push_back({{"token", ids ? "token_id:17" : "ret"}, {"logprob", -0.5}});
    content.push_back({{"token", ids ? "token_id:4" : "urn"}, {"logprob", -1.25}});
    choices.push_back({{"index", i}, {"message", {{"role", "assistant"}, {"content", "return"}}},
                       {"finish_reason", "stop"}, {"logprobs", {{"content", content}}}});
  }
  return json({{"model", "m"}, {"choices", choices}, {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 2 * n}}}})
      .dump();
}

v1::SampleRequest Request(int n = 2) {
  v1::SampleRequest r;
  r.set_num_completions(n);
  auto* m = r.add_messages();
  m->set_role("user");
  m->set_content("make it faster");
  r.mutable_params()->set_temperature(0.7);
  return r;
}

struct Fixture {
  FakeHttpClient http;
  FakeClock clock;
  OpenAiBackendOptions options;
  Fixture() {
    options.endpoints = {"http://a:8000/v1", "http://b:8000/v1/"};
    options.model = "qwen";
    options.initial_backoff = absl::Seconds(1);
    options.max_backoff = absl::Seconds(8);
    options.max_attempts = 4;
  }
  std::unique_ptr<OpenAiBackend> Backend() {
    auto b = OpenAiBackend::Create(options, &http, &clock, nullptr, 42);
    REQUIRE(b.ok());
    return std::move(*b);
  }
};

TEST_CASE("429 waits for Retry-After, 5xx and transport errors move on, then success", "[openai]") {
  Fixture f;
  auto b = f.Backend();
  f.http.Respond(429, R"({"error": {"message": "slow down"}})", {{"retry-after", "7"}});
  f.http.Respond(503, "overloaded");
  f.http.Fail(TransportError::kReset);
  f.http.Respond(200, Chat(2));
  const absl::Time start = f.clock.MonotonicNow();
  auto r = b->Sample(Request(), RequestContext::Background());
  REQUIRE(r.ok());
  CHECK(r->attempts() == 4);
  CHECK(f.clock.MonotonicNow() - start >= absl::Seconds(7));  // Retry-After honoured
  REQUIRE(r->completions_size() == 2);
  CHECK(r->completions(0).token_source() == "server");
  CHECK(r->completions(0).token_ids(0) == 17);
  CHECK(r->completions(1).token_logprobs(1) == -1.25f);
  CHECK(r->completion_tokens() == 4);
  // Retries alternate between the two endpoints.
  auto sent = f.http.requests();
  REQUIRE(sent.size() == 4);
  CHECK(sent[0].url != sent[1].url);
  CHECK(sent[1].url == "http://b:8000/v1/chat/completions");
  json body = json::parse(sent[0].body);
  CHECK(body["model"] == "qwen");
  CHECK(body["n"] == 2);
  CHECK(body["logprobs"] == true);
  CHECK(body["return_tokens_as_token_ids"] == true);
}

TEST_CASE("the retry budget ends in UNAVAILABLE naming the endpoints and the last error", "[openai]") {
  Fixture f;
  auto b = f.Backend();
  f.http.Fail(TransportError::kConnect);
  f.http.Fail(TransportError::kTimeout);
  f.http.Respond(500, R"({"error": {"message": "CUDA out of memory"}})");
  f.http.Respond(200, "{not json");
  auto r = b->Sample(Request(), RequestContext::Background());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kUnavailable);
  const std::string m(r.status().message());
  CHECK_THAT(m, Catch::Contains("after 4 attempt(s)"));
  CHECK_THAT(m, Catch::Contains("http://a:8000/v1") && Catch::Contains("http://b:8000/v1"));
  CHECK_THAT(m, Catch::Contains("malformed"));
  CHECK(f.http.requests().size() == 4);
}

TEST_CASE("client errors are not retried; fewer choices than n are", "[openai]") {
  Fixture f;
  auto b = f.Backend();
  f.http.Respond(400, R"({"error": {"message": "max_tokens is too large"}})");
  auto r = b->Sample(Request(), RequestContext::Background());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("max_tokens is too large"));
  CHECK(f.http.requests().size() == 1);
  f.http.Respond(200, Chat(1));  // asked for 2
  f.http.Respond(200, Chat(2));
  auto again = b->Sample(Request(), RequestContext::Background());
  REQUIRE(again.ok());
  CHECK(again->attempts() == 2);
}

TEST_CASE("a cancelled request stops waiting between attempts", "[openai]") {
  Fixture f;
  auto b = f.Backend();
  f.http.Respond(503, "busy");
  RequestContext ctx;
  ctx.Cancel();
  CHECK(b->Sample(Request(), ctx).status().code() == absl::StatusCode::kCancelled);
  // A deadline shorter than the back-off ends the retries early.
  FakeClock& clock = f.clock;
  f.http.Respond(503, "busy");
  f.http.Respond(503, "busy");
  RequestContext soon(&clock, clock.Now() + absl::Milliseconds(1));
  auto r = b->Sample(Request(), soon);
  CHECK_FALSE(r.ok());
}

TEST_CASE("the API key is sent and never echoed; text without ids is tokenized", "[openai]") {
  Fixture f;
  const std::string dir = (std::filesystem::temp_directory_path() / "crl-openai-test").string();
  std::filesystem::create_directories(dir);
  REQUIRE(WriteStringToFile(dir + "/key", "sk-secret-123\n").ok());
  REQUIRE(WriteStringToFile(dir + "/tokenizer.json",
                            policy::TrainBpe({"return x", "return y"}, {300, 1, {"<|im_end|>"}}).value())
              .ok());
  f.options.api_key_file = dir + "/key";
  f.options.tokenizer = dir + "/tokenizer.json";
  f.options.extensions = false;
  auto b = f.Backend();
  f.http.Respond(401, R"({"error": {"message": "bad key"}})");
  auto denied = b->Sample(Request(), RequestContext::Background());
  CHECK_FALSE(denied.ok());
  CHECK_THAT(std::string(denied.status().message()), !Catch::Contains("sk-secret"));
  CHECK(f.http.requests()[0].headers.at("Authorization") == "Bearer sk-secret-123");
  CHECK_FALSE(json::parse(f.http.requests()[0].body).contains("return_tokens_as_token_ids"));
  f.http.Respond(200, Chat(2, /*ids=*/false));
  auto r = b->Sample(Request(), RequestContext::Background());
  REQUIRE(r.ok());
  CHECK(r->completions(0).token_source() == "tokenized");
  CHECK(r->completions(0).token_ids_size() > 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("trainer LoRA versions are registered and used by name", "[openai]") {
  Fixture f;
  auto b = f.Backend();
  for (int v = 1; v <= 3; ++v) {
    for (int e = 0; e < 2; ++e) f.http.Respond(200, "{}");  // load on both endpoints
    if (v == 3) {
      for (int e = 0; e < 2; ++e) f.http.Respond(200, "{}");  // unload v1 on both
    }
    v1::PolicyVersion pv;
    pv.set_version(std::to_string(v));
    pv.set_step(v);
    pv.set_adapter(true);
    pv.set_checkpoint_uri("/runs/out/policy/v" + std::to_string(v));
    REQUIRE(b->UsePolicy(pv).ok());
  }
  auto sent = f.http.requests();
  REQUIRE(sent.size() == 8);
  CHECK(sent[0].url == "http://a:8000/v1/load_lora_adapter");
  CHECK(json::parse(sent[0].body)["lora_name"] == "qwen-v1");
  CHECK(json::parse(sent[0].body)["lora_path"] == "/runs/out/policy/v1");
  CHECK(sent[6].url == "http://a:8000/v1/unload_lora_adapter");
  CHECK(json::parse(sent[6].body)["lora_name"] == "qwen-v1");
  f.http.Respond(200, Chat(2));
  auto r = b->Sample(Request(), RequestContext::Background());
  REQUIRE(r.ok());
  CHECK(json::parse(f.http.requests().back().body)["model"] == "qwen-v3");
  CHECK(r->completions(0).policy_version() == "3");
  // Full-weight versions cannot be pushed to a server.
  v1::PolicyVersion full;
  full.set_version("4");
  full.set_step(4);
  full.set_checkpoint_uri("/runs/out/policy/v4");
  CHECK(b->UsePolicy(full).code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("API JSON: responses, streams, requests", "[openai]") {
  auto chat = ParseApiResponse(Chat(1), ApiKind::kChat);
  REQUIRE(chat.ok());
  CHECK(chat->choices[0].token_ids == std::vector<int>{17, 4});
  CHECK(ParseApiResponse("[]", ApiKind::kChat).status().code() == absl::StatusCode::kDataLoss);
  CHECK(ParseApiResponse(R"({"choices": [{"index": 0}]})", ApiKind::kCompletions).status().code() ==
        absl::StatusCode::kDataLoss);
  auto completion = ParseApiResponse(
      R"({"choices": [{"index": 0, "text": "x = 1", "finish_reason": "length",
          "logprobs": {"tokens": ["token_id:9", "token_id:3"], "token_logprobs": [-0.1, -0.2]}}]})",
      ApiKind::kCompletions);
  REQUIRE(completion.ok());
  CHECK(completion->choices[0].token_ids == std::vector<int>{9, 3});

  // A stream split at arbitrary bytes, merged per choice.
  const std::string events =
      "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"b\"}}]}\n\n"
      ": keep-alive\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"a\"}}]}\r\n\r\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"c\"},\"finish_reason\":\"stop\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n"
      "data: [DONE]\n\n";
  ApiStream stream(ApiKind::kChat);
  for (size_t i = 0; i < events.size(); i += 7) stream.Feed(events.data() + i, std::min<size_t>(7, events.size() - i));
  auto merged = stream.Finish();
  REQUIRE(merged.ok());
  CHECK(merged->choices[0].text == "ac");
  CHECK(merged->choices[0].finish_reason == "stop");
  CHECK(merged->choices[1].text == "b");
  CHECK(merged->completion_tokens == 2);
  ApiStream cut(ApiKind::kChat);
  const std::string partial = events.substr(0, 120);
  cut.Feed(partial.data(), partial.size());
  CHECK(cut.Finish().status().code() == absl::StatusCode::kDataLoss);

  ApiRequestOptions o;
  auto req = ParseApiRequest(R"({"model": "m", "messages": [{"role": "user", "content": "hi"}],
      "n": 3, "temperature": 0.5, "stop": "###", "seed": 9, "logprobs": true})", ApiKind::kChat, &o);
  REQUIRE(req.ok());
  CHECK(req->num_completions() == 3);
  CHECK(req->params().stop(0) == "###");
  CHECK(req->params().has_seed());
  CHECK(o.logprobs);
  auto field = [](const std::string& body, ApiKind kind) {
    ApiRequestOptions ignored;
    return std::string(ParseApiRequest(body, kind, &ignored).status().message());
  };
  CHECK_THAT(field(R"({"messages": [{"role": "user", "content": "x"}], "temperature": 7})", ApiKind::kChat),
             Catch::StartsWith("temperature:"));
  CHECK_THAT(field(R"({"messages": []})", ApiKind::kChat), Catch::StartsWith("messages:"));
  CHECK_THAT(field(R"({"prompt": [1, 2]})", ApiKind::kCompletions), Catch::StartsWith("prompt:"));
  CHECK_THAT(field(R"({"prompt": "x", "n": 0})", ApiKind::kCompletions), Catch::StartsWith("n:"));

  CHECK(ParseRetryAfter("12", absl::UnixEpoch()) == absl::Seconds(12));
  CHECK(ParseRetryAfter("Thu, 01 Jan 1970 00:00:30 GMT", absl::UnixEpoch()) == absl::Seconds(30));
  CHECK(ParseRetryAfter("soon", absl::UnixEpoch()) == absl::ZeroDuration());
}

TEST_CASE("top_logprobs: asked of the server, read in either API's form, returned by id, most likely first",
          "[openai]") {
  Fixture f;
  auto b = f.Backend();
  json content = json::array();
  for (int id : {17, 4}) {
    json top = json::array({{{"token", "token_id:5"}, {"logprob", -2.0}},
                            {{"token", absl::StrCat("token_id:", id)}, {"logprob", -0.5}},
                            {{"token", "token_id:9"}, {"logprob", -3.0}}});
    content.push_back({{"token", absl::StrCat("token_id:", id)}, {"logprob", -0.5}, {"top_logprobs", top}});
  }
  json body = {{"model", "m"},
               {"choices", json::array({{{"index", 0},
                                         {"message", {{"role", "assistant"}, {"content", "return"}}},
                                         {"finish_reason", "stop"},
                                         {"logprobs", {{"content", content}}}}})}};
  f.http.Respond(200, body.dump());
  v1::SampleRequest req = Request(1);
  req.mutable_params()->set_top_logprobs(2);
  auto r = b->Sample(req, RequestContext::Background());
  REQUIRE(r.ok());
  const json sent = json::parse(f.http.requests()[0].body);
  CHECK(sent["logprobs"] == true);
  CHECK(sent["top_logprobs"] == 2);
  const v1::Completion& c = r->completions(0);
  REQUIRE(c.top_logprobs_size() == 2);
  CHECK(std::vector<int>(c.top_logprobs(1).token_ids().begin(), c.top_logprobs(1).token_ids().end()) ==
        std::vector<int>{4, 5});
  CHECK(c.top_logprobs(1).logprobs(0) == Approx(-0.5));
  CHECK(c.top_logprobs(1).logprobs(1) == Approx(-2.0));
  // Not asked for: none sent, none returned.
  f.http.Respond(200, body.dump());
  auto plain = b->Sample(Request(1), RequestContext::Background());
  REQUIRE(plain.ok());
  CHECK_FALSE(json::parse(f.http.requests()[1].body).contains("top_logprobs"));
  CHECK(plain->completions(0).top_logprobs_size() == 0);

  // The completions API: a number of alternatives, given as an object.
  v1::SampleRequest text;
  text.set_prompt("def f():");
  text.mutable_params()->set_top_logprobs(3);
  CHECK(json::parse(BuildApiRequest(text, "m", ApiKind::kCompletions, false, true, 16))["logprobs"] == 3);
  auto completion = ParseApiResponse(
      R"({"choices": [{"index": 0, "text": "x = 1", "finish_reason": "length",
          "logprobs": {"tokens": ["token_id:9", "token_id:3"], "token_logprobs": [-0.1, -0.2],
                       "top_logprobs": [{"token_id:1": -2.5, "token_id:9": -0.1}, null]}}]})",
      ApiKind::kCompletions);
  REQUIRE(completion.ok());
  const auto& top = completion->choices[0].top;
  REQUIRE(top.size() == 2);
  REQUIRE(top[0].size() == 2);
  CHECK(top[0][0].first == "token_id:9");
  CHECK(top[0][1].second == Approx(-2.5));
  CHECK(top[1].empty());
}

TEST_CASE("API logprobs: a token's bytes as they are, its text as valid UTF-8", "[openai]") {
  v1::SampleResponse r;
  v1::Completion* c = r.add_completions();
  c->set_text("\u20ac!");
  for (int id : {1, 2}) c->add_token_ids(id);
  for (float lp : {-0.5f, -0.25f}) c->add_token_logprobs(lp);
  // Token 1 is the first two bytes of the euro sign, token 2 its last and "!".
  TokenNamer name = [](int id) { return id == 1 ? std::string("\xe2\x82") : std::string("\xac!"); };
  ApiReply reply{ApiKind::kChat, "m", "id", 0, true, name};
  json chat = ApiResponseJson(r, reply);
  const json& content = chat["choices"][0]["logprobs"]["content"];
  REQUIRE(content.size() == 2);
  CHECK(content[0]["bytes"] == json::array({0xe2, 0x82}));
  CHECK(content[1]["bytes"] == json::array({0xac, 0x21}));
  CHECK(content[0]["token"].get<std::string>().find("\ufffd") == 0);  // a part of a character
  CHECK(content[1]["token"].get<std::string>().back() == '!');
  CHECK(content[0]["logprob"] == -0.5);
  CHECK_NOTHROW(chat.dump());  // valid UTF-8 throughout
  reply.kind = ApiKind::kCompletions;
  json completion = ApiResponseJson(r, reply);
  CHECK(completion["choices"][0]["logprobs"]["tokens"][0].get<std::string>().find("\ufffd") == 0);
  CHECK(completion["choices"][0]["logprobs"]["top_logprobs"].is_null());  // none asked for
  reply.kind = ApiKind::kChat;
  CHECK_NOTHROW(ApiStreamEvents(r.completions(0), 0, true, reply));
}

}  // namespace
}  // namespace crl::sampler
