#include "services/sampler/openai_format.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/utf8.h"

namespace crl::sampler {
namespace {

using nlohmann::json;

absl::Status Malformed(const std::string& what) {
  return absl::DataLossError(absl::StrCat("malformed OpenAI response: ", what));
}

// Tokens and logprobs of one choice's "logprobs" object (either API's form).
void ReadLogprobs(const json& lp, ApiKind kind, ApiChoice* c) {
  if (!lp.is_object()) return;
  auto add = [&](const std::string& token, const json& value) {
    c->tokens.push_back(token);
    int id;
    if (ParseTokenIdName(token, &id)) c->token_ids.push_back(id);
    c->logprobs.push_back(value.is_number() ? value.get<float>() : -INFINITY);
  };
  // One position's alternatives, most likely first (a completions
  // response gives them as an object, in no order).
  auto alternatives = [&](std::vector<std::pair<std::string, float>> top) {
    std::stable_sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    c->top.push_back(std::move(top));
  };
  if (kind == ApiKind::kChat) {
    for (const auto& e : lp.value("content", json::array())) {
      if (!e.is_object()) continue;
      add(e.value("token", ""), e.value("logprob", json()));
      std::vector<std::pair<std::string, float>> top;
      for (const auto& t : e.value("top_logprobs", json::array())) {
        if (t.is_object() && t.contains("logprob") && t["logprob"].is_number()) {
          top.emplace_back(t.value("token", ""), t["logprob"].get<float>());
        }
      }
      alternatives(std::move(top));
    }
  } else {
    const json tokens = lp.value("tokens", json::array()), values = lp.value("token_logprobs", json::array());
    const json tops = lp.value("top_logprobs", json::array());
    for (size_t i = 0; i < tokens.size() && tokens[i].is_string(); ++i) {
      add(tokens[i].get<std::string>(), i < values.size() ? values[i] : json());
      std::vector<std::pair<std::string, float>> top;
      if (tops.is_array() && i < tops.size() && tops[i].is_object()) {
        for (const auto& [token, value] : tops[i].items()) {
          if (value.is_number()) top.emplace_back(token, value.get<float>());
        }
      }
      alternatives(std::move(top));
    }
  }
}

void ReadUsage(const json& j, ApiResult* r) {
  if (j.contains("usage") && j["usage"].is_object()) {
    r->prompt_tokens = j["usage"].value("prompt_tokens", 0);
    r->completion_tokens = j["usage"].value("completion_tokens", 0);
  }
}

}  // namespace

bool ParseTokenIdName(const std::string& token, int* id) {
  absl::string_view rest = token;
  return absl::ConsumePrefix(&rest, "token_id:") && absl::SimpleAtoi(rest, id);
}

std::string BuildApiRequest(const v1::SampleRequest& r, const std::string& model, ApiKind kind,
                            bool stream, bool extensions, int default_max_tokens) {
  const v1::SamplingParams& p = r.params();
  json j = {{"model", model},
            {"n", std::max(1, r.num_completions())},
            {"temperature", p.temperature()},
            {"max_tokens", p.max_tokens() > 0 ? p.max_tokens() : default_max_tokens},
            {"stream", stream}};
  if (p.top_p() > 0 && p.top_p() < 1) j["top_p"] = p.top_p();
  if (p.has_seed()) j["seed"] = p.seed();
  if (p.stop_size() > 0) j["stop"] = std::vector<std::string>(p.stop().begin(), p.stop().end());
  if (kind == ApiKind::kChat) {
    json messages = json::array();
    if (r.messages_size() == 0) {
      messages.push_back({{"role", "user"}, {"content", r.prompt()}});
    } else {
      for (const auto& m : r.messages()) messages.push_back({{"role", m.role()}, {"content", m.content()}});
    }
    j["messages"] = messages;
    j["logprobs"] = true;
    if (p.top_logprobs() > 0) j["top_logprobs"] = std::min(p.top_logprobs(), 20);
  } else {
    j["prompt"] = r.prompt();
    // The sampled token's logprob, and this many alternatives (0: none).
    j["logprobs"] = std::clamp(p.top_logprobs(), 0, 20);
  }
  if (stream) j["stream_options"] = {{"include_usage", true}};
  if (extensions) {
    if (p.top_k() > 0) j["top_k"] = p.top_k();
    if (p.stop_token_ids_size() > 0) {
      j["stop_token_ids"] = std::vector<int>(p.stop_token_ids().begin(), p.stop_token_ids().end());
    }
    j["return_tokens_as_token_ids"] = true;
  }
  return j.dump();
}

absl::StatusOr<ApiResult> ParseApiResponse(const std::string& body, ApiKind kind) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_object()) return Malformed("the body is not a JSON object");
  if (j.contains("error")) {
    return Malformed(absl::StrCat("an error object in a success response: ", j["error"].dump()));
  }
  if (!j.contains("choices") || !j["choices"].is_array()) return Malformed("no choices array");
  ApiResult r;
  r.model = j.value("model", "");
  try {
    for (const auto& c : j["choices"]) {
      ApiChoice choice;
      choice.index = c.value("index", static_cast<int>(r.choices.size()));
      if (kind == ApiKind::kChat) {
        const json& m = c.at("message");
        choice.text = m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : "";
      } else {
        choice.text = c.at("text").get<std::string>();
      }
      choice.finish_reason = c.contains("finish_reason") && c["finish_reason"].is_string()
                                 ? c["finish_reason"].get<std::string>()
                                 : "";
      if (c.contains("logprobs")) ReadLogprobs(c["logprobs"], kind, &choice);
      r.choices.push_back(std::move(choice));
    }
  } catch (const json::exception& e) {
    return Malformed(e.what());
  }
  ReadUsage(j, &r);
  return r;
}

void ApiStream::Feed(const char* data, size_t size) {
  buffer_.append(data, size);
  size_t nl;
  while ((nl = buffer_.find('\n')) != std::string::npos) {
    std::string line = buffer_.substr(0, nl);
    buffer_.erase(0, nl + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    Line(line);
  }
}

void ApiStream::Line(const std::string& line) {
  absl::string_view rest = line;
  if (!absl::ConsumePrefix(&rest, "data:")) return;  // comments, event names, blank lines
  rest = absl::StripLeadingAsciiWhitespace(rest);
  if (rest == "[DONE]") {
    done_ = true;
    return;
  }
  if (!error_.ok()) return;
  json j = json::parse(rest, nullptr, false);
  if (!j.is_object()) {
    error_ = Malformed("a stream chunk is not a JSON object");
    return;
  }
  if (j.contains("error")) {
    error_ = Malformed(absl::StrCat("the stream carried an error: ", j["error"].dump()));
    return;
  }
  if (result_.model.empty()) result_.model = j.value("model", "");
  ReadUsage(j, &result_);
  for (const auto& c : j.value("choices", json::array())) {
    const int index = c.value("index", 0);
    if (index < 0 || index > 4096) {
      error_ = Malformed("a choice index out of range");
      return;
    }
    if (static_cast<int>(result_.choices.size()) <= index) result_.choices.resize(index + 1);
    ApiChoice& choice = result_.choices[index];
    choice.index = index;
    if (kind_ == ApiKind::kChat) {
      const json d = c.value("delta", json::object());
      if (d.contains("content") && d["content"].is_string()) choice.text += d["content"].get<std::string>();
    } else if (c.contains("text") && c["text"].is_string()) {
      choice.text += c["text"].get<std::string>();
    }
    if (c.contains("finish_reason") && c["finish_reason"].is_string()) {
      choice.finish_reason = c["finish_reason"].get<std::string>();
    }
    if (c.contains("logprobs")) ReadLogprobs(c["logprobs"], kind_, &choice);
  }
}

absl::StatusOr<ApiResult> ApiStream::Finish() {
  if (!buffer_.empty()) Line(buffer_);
  buffer_.clear();
  if (!error_.ok()) return error_;
  if (!done_) return Malformed("the stream ended before data: [DONE]");
  return result_;
}

// ---- Server side ----------------------------------------------------------------

absl::StatusOr<v1::SampleRequest> ParseApiRequest(const std::string& body, ApiKind kind,
                                                  ApiRequestOptions* options) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_object()) return absl::InvalidArgumentError("body: not a JSON object");
  auto bad = [](const std::string& field, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
  };
  v1::SampleRequest r;
  try {
    options->model = j.value("model", "");
    options->stream = j.value("stream", false);
    options->token_ids = j.value("return_tokens_as_token_ids", false);
    int top = 0;
    if (j.contains("logprobs") && !j["logprobs"].is_null()) {
      // Chat: a boolean (top_logprobs apart); completions: the number of top tokens.
      options->logprobs = j["logprobs"].is_boolean() ? j["logprobs"].get<bool>() : true;
      if (j["logprobs"].is_number()) top = j["logprobs"].get<int>();
    }
    if (kind == ApiKind::kChat && j.contains("top_logprobs") && !j["top_logprobs"].is_null()) {
      top = j["top_logprobs"].get<int>();
      if (top > 0 && !options->logprobs) return bad("top_logprobs", "requires logprobs: true");
    }
    if (top < 0 || top > 20) {
      return bad(kind == ApiKind::kChat ? "top_logprobs" : "logprobs", "must be between 0 and 20");
    }
    r.set_policy(options->model);
    const int n = j.value("n", 1);
    if (n < 1 || n > 128) return bad("n", "must be between 1 and 128");
    r.set_num_completions(n);
    v1::SamplingParams* p = r.mutable_params();
    p->set_top_logprobs(top);
    const double temperature = j.contains("temperature") && !j["temperature"].is_null() ? j["temperature"].get<double>() : 1.0;
    if (!(temperature >= 0 && temperature <= 2)) return bad("temperature", "must be between 0 and 2");
    p->set_temperature(temperature);
    const double top_p = j.contains("top_p") && !j["top_p"].is_null() ? j["top_p"].get<double>() : 1.0;
    if (!(top_p > 0 && top_p <= 1)) return bad("top_p", "must be in (0, 1]");
    p->set_top_p(top_p);
    if (j.contains("top_k") && !j["top_k"].is_null()) p->set_top_k(std::max(0, j["top_k"].get<int>()));
    const char* max_key = j.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (j.contains(max_key) && !j[max_key].is_null()) {
      const int m = j[max_key].get<int>();
      if (m < 1) return bad(max_key, "must be at least 1");
      p->set_max_tokens(m);
    }
    if (j.contains("seed") && !j["seed"].is_null()) {
      p->set_seed(j["seed"].get<int64_t>());
      p->set_has_seed(true);
    }
    if (j.contains("stop") && !j["stop"].is_null()) {
      if (j["stop"].is_string()) {
        p->add_stop(j["stop"].get<std::string>());
      } else if (j["stop"].is_array()) {
        for (const auto& s : j["stop"]) p->add_stop(s.get<std::string>());
      } else {
        return bad("stop", "a string or a list of strings");
      }
    }
    if (kind == ApiKind::kChat) {
      if (!j.contains("messages") || !j["messages"].is_array() || j["messages"].empty()) {
        return bad("messages", "a non-empty list is required");
      }
      for (size_t i = 0; i < j["messages"].size(); ++i) {
        const json& m = j["messages"][i];
        const std::string where = absl::StrCat("messages[", i, "]");
        if (!m.is_object() || !m.contains("role")) return bad(where, "needs a role");
        auto* msg = r.add_messages();
        msg->set_role(m["role"].get<std::string>());
        if (m.contains("content") && m["content"].is_string()) {
          msg->set_content(m["content"].get<std::string>());
        } else if (m.contains("content") && m["content"].is_array()) {
          std::string text;  // content parts: the text ones
          for (const auto& part : m["content"]) {
            if (part.value("type", "") == "text") text += part.value("text", "");
          }
          msg->set_content(text);
        } else {
          return bad(where + ".content", "a string is required");
        }
      }
    } else {
      if (!j.contains("prompt")) return bad("prompt", "required");
      if (j["prompt"].is_string()) {
        r.set_prompt(j["prompt"].get<std::string>());
      } else if (j["prompt"].is_array() && j["prompt"].size() == 1 && j["prompt"][0].is_string()) {
        r.set_prompt(j["prompt"][0].get<std::string>());
      } else {
        return bad("prompt", "one string (token-id and batched prompts are not served)");
      }
    }
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("body: ", e.what()));
  }
  return r;
}

namespace {

json Bytes(const std::string& name) {
  std::vector<int> bytes;
  for (unsigned char b : name) bytes.push_back(b);
  return bytes;
}

// A choice's (or a streamed piece's) "logprobs" in either API's form. A
// token's name is its bytes as its namer gives them (possibly part of a
// UTF-8 character): "token" shows them as valid UTF-8 (U+FFFD for a part),
// "bytes" as they are.
json LogprobsJson(const v1::Completion& c, const ApiReply& reply) {
  const int n = std::min(c.token_ids_size(), c.token_logprobs_size());
  auto top_of = [&](int i) -> const v1::TopLogprobs* {
    return i < c.top_logprobs_size() ? &c.top_logprobs(i) : nullptr;
  };
  if (reply.kind == ApiKind::kChat) {
    json content = json::array();
    for (int i = 0; i < n; ++i) {
      const std::string name = reply.name(c.token_ids(i));
      json top = json::array();
      if (const v1::TopLogprobs* t = top_of(i)) {
        for (int k = 0; k < std::min(t->token_ids_size(), t->logprobs_size()); ++k) {
          const std::string alt = reply.name(t->token_ids(k));
          top.push_back({{"token", ValidUtf8(alt)}, {"logprob", t->logprobs(k)}, {"bytes", Bytes(alt)}});
        }
      }
      content.push_back({{"token", ValidUtf8(name)}, {"logprob", c.token_logprobs(i)}, {"bytes", Bytes(name)},
                         {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), values = json::array(), tops = json::array();
  for (int i = 0; i < n; ++i) {
    tokens.push_back(ValidUtf8(reply.name(c.token_ids(i))));
    values.push_back(c.token_logprobs(i));
    json top = json::object();
    if (const v1::TopLogprobs* t = top_of(i)) {
      for (int k = 0; k < std::min(t->token_ids_size(), t->logprobs_size()); ++k) {
        top[ValidUtf8(reply.name(t->token_ids(k)))] = t->logprobs(k);
      }
    }
    tops.push_back(top);
  }
  return {{"tokens", tokens},
          {"token_logprobs", values},
          {"top_logprobs", c.top_logprobs_size() > 0 ? tops : json(nullptr)},
          {"text_offset", nullptr}};
}

json Usage(const v1::SampleResponse& r) {
  return {{"prompt_tokens", r.prompt_tokens()},
          {"completion_tokens", r.completion_tokens()},
          {"total_tokens", r.prompt_tokens() + r.completion_tokens()}};
}

std::string Event(const json& choices, const json& usage, const ApiReply& reply) {
  json chunk = {{"id", reply.id},
                {"object", reply.kind == ApiKind::kChat ? "chat.completion.chunk" : "text_completion"},
                {"created", reply.created},
                {"model", reply.model},
                {"choices", choices}};
  if (!usage.is_null()) chunk["usage"] = usage;
  return absl::StrCat("data: ", chunk.dump(), "\n\n");
}

}  // namespace

json ApiResponseJson(const v1::SampleResponse& r, const ApiReply& reply) {
  json choices = json::array();
  for (int i = 0; i < r.completions_size(); ++i) {
    const v1::Completion& c = r.completions(i);
    json choice = {{"index", i}, {"finish_reason", c.finish_reason()}};
    if (reply.kind == ApiKind::kChat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text()}};
    } else {
      choice["text"] = c.text();
    }
    choice["logprobs"] = reply.logprobs ? LogprobsJson(c, reply) : json(nullptr);
    choices.push_back(choice);
  }
  return {{"id", reply.id},
          {"object", reply.kind == ApiKind::kChat ? "chat.completion" : "text_completion"},
          {"created", reply.created},
          {"model", reply.model},
          {"system_fingerprint", "crl-policy-v" + r.policy_version()},
          {"choices", choices},
          {"usage", Usage(r)}};
}

std::string ApiStreamEvents(const v1::Completion& piece, int index, bool first, const ApiReply& reply) {
  std::string out;
  if (first || !piece.text().empty() || piece.token_ids_size() > 0) {
    json choice = {{"index", index}, {"finish_reason", nullptr}};
    if (reply.kind == ApiKind::kChat) {
      choice["delta"] = {{"content", piece.text()}};
      if (first) choice["delta"]["role"] = "assistant";
    } else {
      choice["text"] = piece.text();
    }
    choice["logprobs"] = reply.logprobs ? LogprobsJson(piece, reply) : json(nullptr);
    out += Event(json::array({choice}), nullptr, reply);
  }
  if (!piece.finish_reason().empty()) {
    json end = {{"index", index}, {"finish_reason", piece.finish_reason()}, {"logprobs", nullptr}};
    if (reply.kind == ApiKind::kChat) {
      end["delta"] = json::object();
    } else {
      end["text"] = "";
    }
    out += Event(json::array({end}), nullptr, reply);
  }
  return out;
}

std::string ApiStreamEnd(const v1::SampleResponse& r, const ApiReply& reply) {
  return absl::StrCat(Event(json::array(), Usage(r), reply), "data: [DONE]\n\n");
}

std::string ApiStreamError(const json& error) { return absl::StrCat("data: ", error.dump(), "\n\n"); }

json ApiError(const std::string& message, const std::string& type, const std::string& param) {
  return {{"error", {{"message", message}, {"type", type}, {"param", param.empty() ? json(nullptr) : json(param)},
                     {"code", nullptr}}}};
}

}  // namespace crl::sampler
