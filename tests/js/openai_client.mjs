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
await record("unknown_model", async () =>
  client.chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "x" }] }));
await record("bad_temperature", async () =>
  client.chat.completions.create({ model, temperature: 9, messages: [{ role: "user", content: "x" }] }));
console.log(JSON.stringify(out));
