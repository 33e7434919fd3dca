// Drives a running homering agent with the official OpenAI and Anthropic SDKs
// and prints one JSON object per check on stdout; app/apptest/clients_test.go
// asserts on them. Usage: node clients.mjs URL TOKEN
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";

const [url, token] = process.argv.slice(2);
const out = (o) => console.log(JSON.stringify(o));

const openai = new OpenAI({ baseURL: url + "/v1", apiKey: token, maxRetries: 0 });

{
  const stream = await openai.chat.completions.create({
    model: "stories260K",
    messages: [{ role: "system", content: "You tell stories." }, { role: "user", content: "Once upon a time" }],
    max_tokens: 24,
    seed: 1,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = "", chunks = 0, finish = null, usage = null, role = null;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (c?.delta?.role) role = c.delta.role;
    if (c?.delta?.content) { text += c.delta.content; chunks++; }
    if (c?.finish_reason) finish = c.finish_reason;
    if (chunk.usage) usage = chunk.usage;
  }
  out({ check: "openai.chat.stream", text, chunks, finish, usage, role });
}
{
  const r = await openai.chat.completions.create({
    model: "stories260K", messages: [{ role: "user", content: "Tell me about a cat." }], max_tokens: 8, temperature: 0, seed: 1,
  });
  out({ check: "openai.chat", text: r.choices[0].message.content, finish: r.choices[0].finish_reason, usage: r.usage });
}
{
  const stream = await openai.completions.create({ model: "stories260K", prompt: "The dog", max_tokens: 8, seed: 1, stream: true });
  let text = "", chunks = 0;
  for await (const chunk of stream) { text += chunk.choices[0]?.text ?? ""; chunks++; }
  out({ check: "openai.completions.stream", text, chunks });
}
{
  const models = await openai.models.list();
  out({ check: "openai.models", ids: models.data.map((m) => m.id) });
}

const anthropic = new Anthropic({ baseURL: url, apiKey: token, maxRetries: 0 });
{
  const stream = anthropic.messages.stream({
    model: "stories260K", max_tokens: 24, temperature: 0, system: "You tell stories.",
    messages: [{ role: "user", content: "Once upon a time" }],
  });
  const events = [];
  let text = "";
  stream.on("streamEvent", (e) => events.push(e.type));
  stream.on("text", (t) => { text += t; });
  const msg = await stream.finalMessage();
  out({ check: "anthropic.stream", text, events, stop_reason: msg.stop_reason, usage: msg.usage, final_text: msg.content[0]?.text });
}
{
  const msg = await anthropic.messages.create({
    model: "stories260K", max_tokens: 8, temperature: 0, messages: [{ role: "user", content: "Hello" }],
  });
  out({ check: "anthropic.create", text: msg.content[0]?.text, stop_reason: msg.stop_reason, usage: msg.usage, type: msg.type });
}
