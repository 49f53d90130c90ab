// The official OpenAI client (npm "openai") against an OpenAI-compatible
// server, as a user's script would call it:
//   node openai_client.mjs BASE_URL MODEL API_KEY
// Prints one JSON object with what each call returned (or the error it threw).
import OpenAI from "openai";

const [baseURL, model, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: apiKey || "none", maxRetries: 0, timeout: 120000 });
const out = {};

async function record(name, fn) {
  try {
    out[name] = await fn();
  } catch (e) {
    out[name] = { error: true, status: e.status ?? null, type: e.error?.type ?? null, message: e.message };
  }
}

await record("models", async () => (await client.models.list()).data.map((m) => m.id));
await record("chat", async () => {
  const r = await client.chat.completions.create({
    model, n: 2, max_tokens: 8, seed: 1, logprobs: true, temperature: 1.0,
    messages: [{ role: "system", content: "You write CUDA." }, { role: "user", content: "make relu faster" }],
  });
  return {
    choices: r.choices.length,
    finish: r.choices.map((c) => c.finish_reason),
    logprobs: r.choices.map((c) => c.logprobs.content.length),
    first_logprob: r.choices[0].logprobs.content[0].logprob,
    // Every token's bytes, decoded, are its text (or a part of a character).
    bytes_match: r.choices.every((c) => c.logprobs.content.every((t) =>
      Array.isArray(t.bytes) && t.bytes.length > 0 &&
      (Buffer.from(t.bytes).toString("utf8") === t.token || t.token.includes("\uFFFD")))),
    usage: r.usage,
    text: r.choices.map((c) => c.message.content),
  };
});
await record("chat_again", async () => {
  const r = await client.chat.completions.create({
    model, n: 2, max_tokens: 8, seed: 1, temperature: 1.0,
    messages: [{ role: "system", content: "You write CUDA." }, { role: "user", content: "make relu faster" }],
  });
  return { text: r.choices.map((c) => c.message.content) };
});
await record("completion_stop", async () => {
  const r = await client.completions.create({ model, prompt: "def forward(self, x):", max_tokens: 30, stop: ["e", "a"] });
  return { text: r.choices[0].text, finish: r.choices[0].finish_reason };
});
await record("stream", async () => {
  const s = await client.chat.completions.create({
    model, stream: true, max_tokens: 6, messages: [{ role: "user", content: "hi" }],
  });
  let text = "", finish = null, chunks = 0;
  for await (const chunk of s) {
    chunks++;
    for (const c of chunk.choices) {
      text += c.delta?.content ?? "";
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish, chunks };
});
// Top tokens: each sampled token's alternatives, most likely first.
const seeded = {
  model, max_tokens: 12, seed: 2, logprobs: true, top_logprobs: 3, temperature: 1.0,
  messages: [{ role: "user", content: "make softmax faster" }],
};
await record("chat_top", async () => {
  const r = await client.chat.completions.create(seeded);
  const content = r.choices[0].logprobs.content;
  return {
    tokens: content.length,
    top_sizes: [...new Set(content.map((t) => t.top_logprobs.length))],
    descending: content.every((t) => t.top_logprobs.every((a, i) => i === 0 || a.logprob <= t.top_logprobs[i - 1].logprob)),
    sampled_not_above_first: content.every((t) => t.logprob <= t.top_logprobs[0].logprob + 1e-5),
    well_formed: content.every((t) => t.top_logprobs.every((a) =>
      typeof a.token === "string" && Number.isFinite(a.logprob) && Array.isArray(a.bytes) && a.bytes.length > 0)),
    text: r.choices[0].message.content,
  };
});
// The same request streamed through the client's own stream helper, which
// accumulates deltas and logprobs into a completion.
await record("stream_tokens", async () => {
  const s = client.chat.completions.stream({ ...seeded, stream_options: { include_usage: true } });
  let tokenChunks = 0;
  s.on("chunk", (c) => { if (c.choices[0]?.logprobs?.content?.length) tokenChunks++; });
  const done = await s.finalChatCompletion();
  const content = done.choices[0].logprobs?.content ?? [];
  return {
    token_chunks: tokenChunks,
    tokens: content.length,
    top_sizes: [...new Set(content.map((t) => t.top_logprobs.length))],
    text: done.choices[0].message.content,
    finish: done.choices[0].finish_reason,
    usage: done.usage,
  };
});
await record("top_without_logprobs", async () =>
  client.chat.completions.create({ model, top_logprobs: 2, messages: [{ role: "user", content: "x" }] }));
await record("completion_top", async () => {
  const r = await client.completions.create({ model, prompt: "def forward(self, x):", max_tokens: 5, logprobs: 2, seed: 4 });
  const lp = r.choices[0].logprobs;
  return { tokens: lp.tokens.length, top: lp.top_logprobs.map((d) => Object.keys(d).length) };
});
await record("unknown_model", async () =>
  client.chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "x" }] }));
await record("bad_temperature", async () =>
  client.chat.completions.create({ model, temperature: 9, messages: [{ role: "user", content: "x" }] }));
console.log(JSON.stringify(out));
