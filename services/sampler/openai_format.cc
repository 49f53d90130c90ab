#include "services/sampler/openai_format.h"

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
  if (kind == ApiKind::kChat) {
    for (const auto& e : lp.value("content", json::array())) {
      if (e.is_object()) add(e.value("token", ""), e.value("logprob", json()));
    }
  } else {
    const json tokens = lp.value("tokens", json::array()), values = lp.value("token_logprobs", json::array());
    for (size_t i = 0; i < tokens.size() && tokens[i].is_string(); ++i) {
      add(tokens[i].get<std::string>(), i < values.size() ? values[i] : json());
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
  } else {
    j["prompt"] = r.prompt();
    j["logprobs"] = 0;  // the sampled token's logprob, no alternatives
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
    if (j.contains("logprobs") && !j["logprobs"].is_null()) {
      options->logprobs = j["logprobs"].is_boolean() ? j["logprobs"].get<bool>() : true;
    }
    r.set_policy(options->model);
    const int n = j.value("n", 1);
    if (n < 1 || n > 128) return bad("n", "must be between 1 and 128");
    r.set_num_completions(n);
    v1::SamplingParams* p = r.mutable_params();
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

// `names`: each token's bytes as its namer gives them (possibly part of a
// UTF-8 character): "token" shows them as valid UTF-8 (U+FFFD for a part),
// "bytes" as they are.
json LogprobsJson(const v1::Completion& c, ApiKind kind, const std::vector<std::string>& names) {
  if (kind == ApiKind::kChat) {
    json content = json::array();
    for (int i = 0; i < c.token_logprobs_size(); ++i) {
      std::vector<int> bytes;
      for (unsigned char b : names[i]) bytes.push_back(b);
      content.push_back({{"token", ValidUtf8(names[i])}, {"logprob", c.token_logprobs(i)}, {"bytes", bytes},
                         {"top_logprobs", json::array()}});
    }
    return {{"content", content}};
  }
  std::vector<std::string> tokens;
  for (const std::string& n : names) tokens.push_back(ValidUtf8(n));
  return {{"tokens", tokens},
          {"token_logprobs", std::vector<float>(c.token_logprobs().begin(), c.token_logprobs().end())},
          {"top_logprobs", nullptr},
          {"text_offset", nullptr}};
}

std::vector<std::string> TokenNames(const v1::Completion& c, const TokenNamer& name) {
  std::vector<std::string> names;
  for (int id : c.token_ids()) names.push_back(name(id));
  return names;
}

json Usage(const v1::SampleResponse& r) {
  return {{"prompt_tokens", r.prompt_tokens()},
          {"completion_tokens", r.completion_tokens()},
          {"total_tokens", r.prompt_tokens() + r.completion_tokens()}};
}

}  // namespace

json ApiResponseJson(const v1::SampleResponse& r, ApiKind kind, const std::string& model,
                     const std::string& id, int64_t created, bool logprobs, const TokenNamer& name) {
  json choices = json::array();
  for (int i = 0; i < r.completions_size(); ++i) {
    const v1::Completion& c = r.completions(i);
    json choice = {{"index", i}, {"finish_reason", c.finish_reason()}};
    if (kind == ApiKind::kChat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text()}};
    } else {
      choice["text"] = c.text();
    }
    choice["logprobs"] = logprobs ? LogprobsJson(c, kind, TokenNames(c, name)) : json(nullptr);
    choices.push_back(choice);
  }
  return {{"id", id},
          {"object", kind == ApiKind::kChat ? "chat.completion" : "text_completion"},
          {"created", created},
          {"model", model},
          {"system_fingerprint", "crl-policy-v" + r.policy_version()},
          {"choices", choices},
          {"usage", Usage(r)}};
}

std::string ApiStreamText(const v1::SampleResponse& r, ApiKind kind, const std::string& model,
                          const std::string& id, int64_t created, bool logprobs,
                          const TokenNamer& name) {
  const char* object = kind == ApiKind::kChat ? "chat.completion.chunk" : "text_completion";
  std::string out;
  auto emit = [&](const json& choices, const json& usage) {
    json chunk = {{"id", id}, {"object", object}, {"created", created}, {"model", model}, {"choices", choices}};
    if (!usage.is_null()) chunk["usage"] = usage;
    absl::StrAppend(&out, "data: ", chunk.dump(), "\n\n");
  };
  for (int i = 0; i < r.completions_size(); ++i) {
    const v1::Completion& c = r.completions(i);
    json choice = {{"index", i}, {"finish_reason", nullptr}};
    if (kind == ApiKind::kChat) {
      choice["delta"] = {{"role", "assistant"}, {"content", c.text()}};
    } else {
      choice["text"] = c.text();
    }
    choice["logprobs"] = logprobs ? LogprobsJson(c, kind, TokenNames(c, name)) : json(nullptr);
    emit(json::array({choice}), nullptr);
    json end = {{"index", i}, {"finish_reason", c.finish_reason()}, {"logprobs", nullptr}};
    if (kind == ApiKind::kChat) end["delta"] = json::object();
    else end["text"] = "";
    emit(json::array({end}), nullptr);
  }
  emit(json::array(), Usage(r));
  absl::StrAppend(&out, "data: [DONE]\n\n");
  return out;
}

json ApiError(const std::string& message, const std::string& type, const std::string& param) {
  return {{"error", {{"message", message}, {"type", type}, {"param", param.empty() ? json(nullptr) : json(param)},
                     {"code", nullptr}}}};
}

}  // namespace crl::sampler
