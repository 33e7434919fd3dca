// Drives a running homering agent with the official OpenAI, Anthropic and
// Ollama JavaScript clients and prints one JSON object per check on stdout;
// app/apptest/clients_test.go asserts on them. Usage: node clients.mjs URL TOKEN
// (the agent's model folder holds second-story.gguf beside the selected
// stories260K).
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";

const [url, token] = process.argv.slice(2);
const out = (o) => console.log(JSON.stringify(o));
// failure runs f, which must throw, and returns what the client's error says.
const failure = async (f) => {
  try {
    await f();
  } catch (e) {
    return { name: e.constructor.name, status: e.status ?? e.status_code, code: e.code ?? null, type: e.error?.error?.type ?? e.type ?? null, message: e.message };
  }
  return { name: "no error" };
};
const capped = "x-homering-max-tokens-capped";

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

{
  const m = await openai.models.retrieve("second-story");
  out({ check: "openai.models.retrieve", id: m.id });
}
out({ check: "openai.unknown_model", ...(await failure(() => openai.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "Hi" }] }))) });
out({ check: "openai.unknown_path", ...(await failure(() => openai.embeddings.create({ model: "stories260K", input: "Hi" }))) });
{
  // Another model than the selected one: loaded on first use, answered under its name.
  const r = await openai.chat.completions.create({ model: "second-story", messages: [{ role: "user", content: "Once" }], max_tokens: 4, temperature: 0 });
  out({ check: "openai.other_model", model: r.model, text: r.choices[0].message.content });
}
{
  const { data, response } = await openai.chat.completions
    .create({ model: "stories260K", messages: [{ role: "user", content: "Once" }], max_tokens: 100000, temperature: 0 })
    .withResponse();
  out({ check: "openai.capped", header: response.headers.get(capped), finish: data.choices[0].finish_reason, usage: data.usage });
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
{
  const ids = [];
  for await (const m of anthropic.models.list()) ids.push(m.id);
  out({ check: "anthropic.models", ids });
}
out({ check: "anthropic.unknown_model", ...(await failure(() => anthropic.messages.create({ model: "no-such-model", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }))) });
{
  const { data, response } = await anthropic.messages
    .create({ model: "stories260K", max_tokens: 8192, temperature: 0, messages: [{ role: "user", content: "Once" }] })
    .withResponse();
  out({ check: "anthropic.capped", header: response.headers.get(capped), stop_reason: data.stop_reason, usage: data.usage });
}

// Ollama's own client; fetch is wrapped to read the answer's headers.
let lastHeaders = null;
const ollama = new Ollama({
  host: url,
  fetch: async (u, o) => {
    const r = await fetch(u, o);
    lastHeaders = r.headers;
    return r;
  },
});
out({ check: "ollama.version", version: await ollama.version().then((v) => v.version) });
{
  const l = await ollama.list();
  out({ check: "ollama.list", names: l.models.map((m) => m.name), details: l.models[0]?.details });
}
{
  const s = await ollama.show({ model: "stories260K" });
  out({ check: "ollama.show", details: s.details, arch: s.model_info["general.architecture"], context_length: s.model_info["llama.context_length"], capabilities: s.capabilities });
}
{
  const stream = await ollama.chat({ model: "stories260K", messages: [{ role: "user", content: "Hi" }], stream: true, options: { num_predict: 6, temperature: 0 } });
  let text = "", parts = 0, last = null;
  for await (const p of stream) {
    text += p.message.content;
    parts++;
    last = p;
  }
  out({ check: "ollama.chat.stream", text, parts, done: last?.done, done_reason: last?.done_reason, eval_count: last?.eval_count });
}
{
  const r = await ollama.generate({ model: "second-story", prompt: "Once", stream: false, options: { num_predict: 4, temperature: 0 } });
  out({ check: "ollama.generate.other_model", model: r.model, text: r.response, done: r.done });
}
{
  const p = await ollama.ps();
  out({ check: "ollama.ps", models: p.models.map((m) => ({ name: m.name, context_length: m.context_length })) });
}
out({ check: "ollama.unknown_model", ...(await failure(() => ollama.chat({ model: "llama3.2:1b", messages: [{ role: "user", content: "Hi" }] }))) });
out({ check: "ollama.unknown_path", ...(await failure(() => ollama.embed({ model: "stories260K", input: "Hi" }))) });
{
  const r = await ollama.generate({ model: "stories260K", prompt: "Once", stream: false, options: { num_predict: 100000, temperature: 0 } });
  out({ check: "ollama.capped", header: lastHeaders?.get(capped), done_reason: r.done_reason, eval_count: r.eval_count });
}

// Structured output: a schema stories260K (it writes stories, never JSON)
// meets only under its grammar; greedy, so that the reply is the same each run.
const mood = {
  type: "object",
  properties: { name: { type: "string", maxLength: 12 }, mood: { enum: ["happy", "sad"] } },
  required: ["name", "mood"],
  additionalProperties: false,
};
const asMood = { type: "json_schema", json_schema: { name: "mood", strict: true, schema: mood } };
const ask = [{ role: "user", content: "Who is sad?" }];
{
  const r = await openai.chat.completions.create({ model: "stories260K", messages: ask, max_tokens: 200, temperature: 0, response_format: asMood });
  out({ check: "openai.json_schema", text: r.choices[0].message.content, finish: r.choices[0].finish_reason });
}
{
  const stream = await openai.chat.completions.create({ model: "stories260K", messages: ask, max_tokens: 200, temperature: 0, response_format: asMood, stream: true });
  let text = "", finish = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? "";
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  out({ check: "openai.json_schema.stream", text, finish });
}
out({
  check: "openai.bad_schema",
  ...(await failure(() => openai.chat.completions.create({
    model: "stories260K", messages: ask, max_tokens: 8,
    response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "thing" } } },
  }))),
});
{
  const r = await ollama.chat({ model: "stories260K", messages: ask, format: mood, stream: false, options: { num_predict: 200, temperature: 0 } });
  out({ check: "ollama.format_schema", text: r.message.content, done_reason: r.done_reason });
}
{
  const stream = await ollama.generate({ model: "stories260K", prompt: "Who is sad?", format: mood, stream: true, options: { num_predict: 200, temperature: 0 } });
  let text = "", last = null;
  for await (const p of stream) { text += p.response; last = p; }
  out({ check: "ollama.format_schema.stream", text, done_reason: last?.done_reason });
}
out({ check: "ollama.bad_schema", ...(await failure(() => ollama.chat({ model: "stories260K", messages: ask, format: { type: "thing" }, stream: true }))) });

// Tool calling: tool-llama.gguf (a generated model with a Llama 3.1-style
// chat template, beside stories260K) gets tools rendered by that family and
// its reply parsed for calls. A random model writes no call by itself, so
// the call's JSON schema (Llama 3's call is one JSON object) forces a
// well-formed one through the structured output grammar: render, generate,
// parse, and each client sees its own tool calls.
const weather = {
  name: "get_weather",
  description: "Get the current weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const callSchema = {
  type: "object",
  properties: {
    name: { enum: ["get_weather"] },
    parameters: { type: "object", properties: { city: { enum: ["Paris"] } }, required: ["city"], additionalProperties: false },
  },
  required: ["name", "parameters"],
  additionalProperties: false,
};
const askWeather = [{ role: "user", content: "What is the weather in Paris?" }];
const asCall = { type: "json_schema", json_schema: { name: "call", strict: true, schema: callSchema } };
{
  const r = await openai.chat.completions.create({
    model: "tool-llama", messages: askWeather, tools: [{ type: "function", function: weather }],
    response_format: asCall, max_tokens: 200, temperature: 0,
  });
  const m = r.choices[0].message;
  out({ check: "openai.tools", finish: r.choices[0].finish_reason, content: m.content, calls: (m.tool_calls ?? []).map((c) => ({ id: c.id, type: c.type, name: c.function.name, arguments: c.function.arguments })) });
  // The call and its result go back as the next turn's messages.
  const next = await openai.chat.completions.create({
    model: "tool-llama", max_tokens: 8, temperature: 0, tools: [{ type: "function", function: weather }],
    messages: [...askWeather, m, ...(m.tool_calls ?? []).map((c) => ({ role: "tool", tool_call_id: c.id, content: "22 degrees, clear" }))],
  });
  out({ check: "openai.tools.result", finish: next.choices[0].finish_reason, object: next.object });
}
{
  const stream = await openai.chat.completions.create({
    model: "tool-llama", messages: askWeather, tools: [{ type: "function", function: weather }],
    response_format: asCall, max_tokens: 200, temperature: 0, stream: true,
  });
  let content = "", finish = null;
  const calls = [];
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta ?? {};
    content += d.content ?? "";
    for (const c of d.tool_calls ?? []) {
      calls[c.index] ??= { id: c.id, name: "", arguments: "" };
      calls[c.index].name += c.function?.name ?? "";
      calls[c.index].arguments += c.function?.arguments ?? "";
    }
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  out({ check: "openai.tools.stream", finish, content, calls });
}
// tool_choice forces a call without any response_format: "required" (of
// either tool) and a named function (of that one). Their parameters pin
// the arguments, which a random model would otherwise fill at random.
const pinned = (name) => ({ name, parameters: { type: "object", properties: { city: { enum: ["Paris"] } }, required: ["city"] } });
const twoTools = [{ type: "function", function: pinned("get_weather") }, { type: "function", function: pinned("get_time") }];
for (const [check, tool_choice] of [["openai.tools.required", "required"], ["openai.tools.named", { type: "function", function: { name: "get_time" } }]]) {
  const r = await openai.chat.completions.create({ model: "tool-llama", messages: askWeather, tools: twoTools, tool_choice, max_tokens: 200, temperature: 0 });
  const m = r.choices[0].message;
  out({ check, finish: r.choices[0].finish_reason, usage: r.usage, content: m.content, calls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })) });
}
// The SDK's stream helper accumulates the streamed call from its deltas
// (id and name first, then the arguments in fragments).
{
  const stream = openai.chat.completions.stream({
    model: "tool-llama", messages: askWeather, tools: twoTools, tool_choice: { type: "function", function: { name: "get_weather" } }, max_tokens: 200, temperature: 0,
  });
  let fragments = 0;
  stream.on("tool_calls.function.arguments.delta", () => { fragments++; });
  const final = await stream.finalChatCompletion();
  const m = final.choices[0].message;
  out({ check: "openai.tools.stream_helper", finish: final.choices[0].finish_reason, fragments, calls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })) });
}
out({
  check: "openai.tools.no_template",
  ...(await failure(() => openai.chat.completions.create({ model: "stories260K", messages: askWeather, tools: [{ type: "function", function: weather }], max_tokens: 8 }))),
});
{
  const r = await ollama.chat({
    model: "tool-llama", messages: askWeather, tools: [{ type: "function", function: weather }],
    format: callSchema, stream: false, options: { num_predict: 200, temperature: 0 },
  });
  out({ check: "ollama.tools", done_reason: r.done_reason, content: r.message.content, calls: (r.message.tool_calls ?? []).map((c) => c.function) });
  const next = await ollama.chat({
    model: "tool-llama", stream: false, options: { num_predict: 8, temperature: 0 }, tools: [{ type: "function", function: weather }],
    messages: [...askWeather, r.message, { role: "tool", content: "22 degrees, clear" }],
  });
  out({ check: "ollama.tools.result", done: next.done });
}
{
  const stream = await ollama.chat({
    model: "tool-llama", messages: askWeather, tools: [{ type: "function", function: weather }],
    format: callSchema, stream: true, options: { num_predict: 200, temperature: 0 },
  });
  let content = "";
  const calls = [];
  for await (const p of stream) {
    content += p.message.content;
    calls.push(...(p.message.tool_calls ?? []).map((c) => c.function));
  }
  out({ check: "ollama.tools.stream", content, calls });
}
out({ check: "ollama.tools.show", capabilities: (await ollama.show({ model: "tool-llama" })).capabilities });
out({
  check: "ollama.tools.no_template",
  ...(await failure(() => ollama.chat({ model: "stories260K", messages: askWeather, tools: [{ type: "function", function: weather }], stream: false }))),
});
// The Messages API has no structured output to force a call with: its
// client sends tools, a tool_use turn and its tool_result back, and gets a
// reply; a model without tool calling gets its BadRequestError.
{
  const tools = [{ name: "get_weather", description: weather.description, input_schema: weather.parameters }];
  const r = await anthropic.messages.create({
    model: "tool-llama", max_tokens: 8, tools,
    messages: [
      ...askWeather,
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_01", name: "get_weather", input: { city: "Paris" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_01", content: "22 degrees, clear" }] },
    ],
  });
  out({ check: "anthropic.tools.result", type: r.type, stop_reason: r.stop_reason, blocks: r.content.map((b) => b.type) });
  out({
    check: "anthropic.tools.no_template",
    ...(await failure(() => anthropic.messages.create({ model: "stories260K", max_tokens: 8, tools, messages: askWeather }))),
  });
}
