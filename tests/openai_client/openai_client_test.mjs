// The official `openai` npm client (pinned in scripts/fetch_test_clients.sh), unchanged,
// against `specd serve` on loopback (tests/support/with_server.sh sets SPECD_BASE_URL):
// the model list, a streamed chat completion, a streamed completion, a non-streamed chat
// completion and a refused request. Greedy output must equal `specd generate` on the same pair.
// Then what apps expect at the door, with plain fetch where the client has no method: a
// CORS preflight and the header on answers (the server runs with --cors-origins
// http://app.example), /tokenize and /detokenize against `specd tokenize`, /v1/models'
// context length, unseeded samples that differ while a seed repeats, a history with an
// assistant's tool_calls and a tool turn rendered through the template, tools with
// tool_choice auto streamed and not (the committed model answers in prose, so the
// content must come through the tool-call hold-back unchanged), and tool_choice
// "required" and a named function, which decode under the grammar of the template's
// <tool_call> syntax, so even this tiny Shakespeare model calls: message.tool_calls with
// arguments the schema admits, and streamed a head delta then argument pieces that add up
// to the same call. A parameters schema outside the grammar subset is a 400 naming it.
// Then n choices, whole and streamed.
//
//   node openai_client_test.mjs --specd build/specd
import { execFileSync } from 'node:child_process';
import { specdGenerate, requireClient, parseArgs, assertEqual, assertTrue } from '../support/expected.mjs';

const args = parseArgs(process.argv.slice(2));
const specd = args.specd;
const baseURL = `${process.env.SPECD_BASE_URL}/v1`;
if (!specd || !process.env.SPECD_BASE_URL) throw new Error('needs --specd and SPECD_BASE_URL (run under with_server.sh)');
const OpenAI = requireClient('openai').default;
const client = new OpenAI({ baseURL, apiKey: 'specd-test', maxRetries: 0, timeout: 120000 });

const maxTokens = 24;
const chatPrompt = 'Speak, what are you?';
const completionPrompt = 'KING HENRY:';
const chatExpected = specdGenerate(specd, { prompt: chatPrompt, chat: true, maxTokens });
const completionExpected = specdGenerate(specd, { prompt: completionPrompt, maxTokens });

async function streamedChat() {
  const stream = await client.chat.completions.create({
    model: 'specd', messages: [{ role: 'user', content: chatPrompt }], max_tokens: maxTokens,
    temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let chunks = 0;
  let finish = null;
  let usage = null;
  let role = null;
  const objects = new Set();
  for await (const chunk of stream) {
    objects.add(chunk.object);
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      if (choice.delta.role) role = choice.delta.role;
      if (choice.delta.content) {
        text += choice.delta.content;
        chunks += 1;
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assertEqual(text, chatExpected.text, 'streamed chat text equals specd generate --chat');
  assertEqual(role, 'assistant', 'streamed chat role');
  assertEqual([...objects], ['chat.completion.chunk'], 'streamed chat chunk objects');
  assertEqual(finish, chatExpected.finish_reason, 'streamed chat finish_reason');
  assertEqual(usage && usage.completion_tokens, chatExpected.completion_tokens, 'streamed chat usage.completion_tokens');
  assertEqual(usage && usage.prompt_tokens, chatExpected.prompt_tokens, 'streamed chat usage.prompt_tokens');
  assertTrue(chunks > 1, `chat streamed in ${chunks} content chunks, not one`);
}

async function streamedCompletion() {
  const stream = await client.completions.create({
    model: 'specd', prompt: completionPrompt, max_tokens: maxTokens, temperature: 0, stream: true,
  });
  let text = '';
  let chunks = 0;
  let finish = null;
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      if (choice.text) {
        text += choice.text;
        chunks += 1;
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assertEqual(text, completionExpected.text, 'streamed completion text equals specd generate');
  assertEqual(finish, completionExpected.finish_reason, 'streamed completion finish_reason');
  assertTrue(chunks > 1, `completion streamed in ${chunks} text chunks, not one`);
}

async function wholeChat() {
  const response = await client.chat.completions.create({
    model: 'specd', messages: [{ role: 'user', content: chatPrompt }], max_tokens: maxTokens, temperature: 0,
  });
  assertEqual(response.object, 'chat.completion', 'non-streamed object');
  assertEqual(response.choices[0].message.content, chatExpected.text, 'non-streamed chat text equals specd generate --chat');
  assertEqual(response.choices[0].finish_reason, chatExpected.finish_reason, 'non-streamed finish_reason');
  assertEqual(response.usage.completion_tokens, chatExpected.completion_tokens, 'non-streamed usage.completion_tokens');
}

async function refusedRequest() {
  try {
    await client.chat.completions.create({
      model: 'specd', messages: [{ role: 'user', content: chatPrompt }], max_tokens: maxTokens, temperature: -1,
    });
  } catch (e) {
    assertTrue(e instanceof OpenAI.BadRequestError, `temperature -1 raises OpenAI.BadRequestError (${e.constructor.name})`);
    assertEqual(e.status, 400, 'refused request status');
    return;
  }
  throw new Error('temperature -1 was accepted');
}

async function models() {
  const ids = [];
  for await (const model of client.models.list()) ids.push(model.id);
  assertEqual(ids, ['specd-tiny'], 'models.list() names the served model (conf/specd.toml model_name)');
}

async function post(path, body, headers = {}) {
  const response = await fetch(`${process.env.SPECD_BASE_URL}${path}`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

async function cors() {
  const origin = 'http://app.example';
  const preflight = await fetch(`${baseURL}/chat/completions`, {
    method: 'OPTIONS',
    headers: { Origin: origin, 'Access-Control-Request-Method': 'POST',
               'Access-Control-Request-Headers': 'authorization,content-type' },
  });
  assertEqual(preflight.status, 204, 'CORS preflight from an allowed origin');
  assertEqual(preflight.headers.get('access-control-allow-origin'), origin, 'preflight Access-Control-Allow-Origin');
  assertTrue(preflight.headers.get('access-control-allow-methods').includes('POST'), 'preflight allows POST');
  assertEqual(preflight.headers.get('access-control-allow-headers'), 'authorization,content-type',
              'preflight allows the requested headers');
  const other = await fetch(`${baseURL}/chat/completions`, {
    method: 'OPTIONS', headers: { Origin: 'http://other.example', 'Access-Control-Request-Method': 'POST' },
  });
  assertEqual(other.status, 403, 'CORS preflight from another origin');
  const answer = await post('/v1/chat/completions',
                            { messages: [{ role: 'user', content: chatPrompt }], max_tokens: 4, temperature: 0 },
                            { Origin: origin });
  assertEqual(answer.headers.get('access-control-allow-origin'), origin, 'chat answer Access-Control-Allow-Origin');
}

async function tokenize() {
  const text = 'ROMEO: But soft, what light';
  const expected = JSON.parse(execFileSync(specd, ['tokenize', '--text', text, '--json'], { encoding: 'utf8' })).ids;
  const r = await post('/tokenize', { content: text });
  assertEqual(r.status, 200, '/tokenize status');
  assertEqual(r.body.tokens, expected, '/tokenize ids equal specd tokenize');
  assertEqual(r.body.count, expected.length, '/tokenize count');
  const back = await post('/detokenize', { tokens: expected });
  assertEqual(back.body.content, text, '/detokenize returns the text');
  const bad = await post('/detokenize', { tokens: [1, 999999] });
  assertEqual([bad.status, bad.body.error.code], [400, 'bad_value'], '/detokenize refuses an id outside the vocabulary');
}

async function contextLength() {
  const response = await fetch(`${baseURL}/models`);
  const body = await response.json();
  assertEqual(body.data[0].max_model_len, 1024, '/v1/models max_model_len (the pair\'s max_position_embeddings)');
}

async function unseededSamples() {
  const sample = async (seed) => {
    const r = await client.chat.completions.create({
      model: 'specd', messages: [{ role: 'user', content: chatPrompt }], max_tokens: 24, temperature: 1,
      ...(seed === undefined ? {} : { seed }),
    });
    return r.choices[0].message.content;
  };
  const unseeded = [await sample(), await sample(), await sample()];
  assertEqual(new Set(unseeded).size, 3, 'three unseeded samples at temperature 1 differ');
  assertEqual(await sample(7), await sample(7), 'seed 7 gives the same sample twice');
}

const tools = [{
  type: 'function',
  function: { name: 'get_weather', description: 'The weather in a city',
              parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
}];
const toolHistory = [
  { role: 'user', content: 'What is the weather in Verona?' },
  { role: 'assistant', content: null,
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Verona"}' } }] },
  { role: 'tool', tool_call_id: 'call_1', content: 'Fair, 21 C' },
];

async function toolHistoryRendered() {
  const rendered = await post('/apply-template', { messages: toolHistory, tools });
  assertEqual(rendered.status, 200, '/apply-template status');
  assertTrue(rendered.body.prompt.includes(
      'ASSISTANT:\n<tool_call>{"name": "get_weather", "arguments": {"city": "Verona"}}</tool_call></s>TOOL:\nFair, 21 C</s>'),
      'the template renders the assistant\'s call and the tool turn');
  assertTrue(rendered.body.prompt.includes('"name": "get_weather", "description": "The weather in a city"'),
             'the template lists the tools');
  const counted = await post('/tokenize', { messages: toolHistory, tools });
  const whole = await client.chat.completions.create({
    model: 'specd', messages: toolHistory, tools, max_tokens: maxTokens, temperature: 0,
  });
  assertEqual(whole.usage.prompt_tokens, counted.body.count, 'a chat with tool turns is prompted with the rendered history');
  const stream = await client.chat.completions.create({
    model: 'specd', messages: toolHistory, tools, max_tokens: maxTokens, temperature: 0, stream: true,
  });
  let text = '';
  let finish = null;
  let toolDeltas = 0;
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      if (choice.delta.content) text += choice.delta.content;
      if (choice.delta.tool_calls) toolDeltas += 1;
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assertEqual(toolDeltas, 0, 'no tool_calls deltas in a streamed prose answer');
  assertTrue(whole.choices[0].message.tool_calls === undefined, 'a whole prose answer has no tool_calls');
  assertEqual(text, whole.choices[0].message.content, 'streamed content through the hold-back equals the whole answer');
  assertEqual(finish, whole.choices[0].finish_reason, 'streamed finish_reason with tools');
  assertTrue(['stop', 'length'].includes(finish), `finish_reason ${finish}`);
}

// Closed schemas, so that the tiny model's forced call always ends (it pads every gap
// with the most whitespace the grammar allows).
const forcedTools = [
  { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: {
    type: 'object', properties: { city: { enum: ['Verona', 'Mantua'] }, unit: { enum: ['celsius', 'fahrenheit'] } },
    required: ['city', 'unit'], additionalProperties: false } } },
  { type: 'function', function: { name: 'get_time', description: 'The time in a zone', parameters: {
    type: 'object', properties: { zone: { enum: ['CET', 'UTC'] } }, required: ['zone'], additionalProperties: false } } },
];
function checkForcedArguments(name, args, who) {
  const parsed = JSON.parse(args);
  if (name === 'get_weather') {
    assertTrue(['Verona', 'Mantua'].includes(parsed.city) && ['celsius', 'fahrenheit'].includes(parsed.unit) &&
               Object.keys(parsed).length === 2, `${who}: get_weather arguments follow the schema: ${args}`);
  } else {
    assertEqual(name, 'get_time', `${who}: a tool's name`);
    assertTrue(['CET', 'UTC'].includes(parsed.zone) && Object.keys(parsed).length === 1,
               `${who}: get_time arguments follow the schema: ${args}`);
  }
  return parsed;
}

async function forcedToolCalls() {
  const request = { model: 'specd', messages: [{ role: 'user', content: 'What is the weather in Verona?' }],
                    tools: forcedTools, tool_choice: 'required', parallel_tool_calls: false, max_tokens: 300,
                    temperature: 0 };
  const whole = await client.chat.completions.create(request);
  const choice = whole.choices[0];
  assertEqual(choice.finish_reason, 'tool_calls', 'tool_choice required: finish_reason');
  assertEqual(choice.message.content, null, 'tool_choice required: content is null');
  assertEqual(choice.message.tool_calls.length, 1, 'parallel_tool_calls false: one call');
  const call = choice.message.tool_calls[0];
  assertTrue(/^call_[A-Za-z0-9]{24}$/.test(call.id), `a call id: ${call.id}`);
  assertEqual(call.type, 'function', 'the call type');
  const args = checkForcedArguments(call.function.name, call.function.arguments, 'tool_choice required');

  // Streamed: the same greedy call, its head first, then its arguments in pieces.
  const stream = await client.chat.completions.create({ ...request, stream: true });
  const deltas = [];
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      for (const d of c.delta.tool_calls ?? []) deltas.push(d);
      assertTrue(!c.delta.content, `no content besides the call: ${JSON.stringify(c.delta)}`);
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assertEqual(finish, 'tool_calls', 'streamed tool_choice required: finish_reason');
  assertTrue(deltas.length >= 3, `a head and at least two argument pieces (${deltas.length} deltas)`);
  const head = deltas[0];
  assertEqual([head.index, head.type, head.function.name, head.function.arguments],
              [0, 'function', call.function.name, ''], 'the first delta: index, type, name, empty arguments');
  assertTrue(/^call_/.test(head.id), 'the first delta carries the id');
  assertTrue(deltas.slice(1).every((d) => d.index === 0 && d.id === undefined && d.function.name === undefined),
             'the next deltas carry argument pieces only');
  const streamedArgs = deltas.slice(1).map((d) => d.function.arguments).join('');
  assertEqual(JSON.parse(streamedArgs), args, 'the streamed arguments add up to the whole answer\'s');

  // A named function: that function is called, whatever the model would prefer.
  const named = await client.chat.completions.create({
    ...request, tool_choice: { type: 'function', function: { name: 'get_time' } } });
  assertEqual(named.choices[0].finish_reason, 'tool_calls', 'a named function: finish_reason');
  assertEqual(named.choices[0].message.tool_calls.length, 1, 'a named function: one call');
  assertEqual(named.choices[0].message.tool_calls[0].function.name, 'get_time', 'a named function: its name');
  checkForcedArguments('get_time', named.choices[0].message.tool_calls[0].function.arguments, 'a named function');

  try {
    await client.chat.completions.create({ ...request, tools: [{ type: 'function', function: { name: 'when',
      parameters: { type: 'object', properties: { day: { type: 'string', format: 'date' } } } } }] });
  } catch (e) {
    assertTrue(e instanceof OpenAI.BadRequestError, `a schema outside the subset raises BadRequestError (${e.constructor.name})`);
    assertTrue(/tools\[0\]\.function\.parameters \(when\): unsupported JSON Schema keyword 'format'/.test(e.message),
               `the refusal names the tool and the keyword: ${e.message}`);
    return;
  }
  throw new Error('a tool schema with "format" was accepted under tool_choice required');
}

// Logprobs: one entry per generated token, each the chosen token's, with the asked
// alternatives sorted; the same tokens streamed and whole (greedy, so the same text).
async function logprobs() {
  const body = {
    model: 'specd', messages: [{ role: 'user', content: chatPrompt }], max_tokens: maxTokens, temperature: 0,
    logprobs: true, top_logprobs: 3,
  };
  const whole = await client.chat.completions.create(body);
  const content = whole.choices[0].logprobs.content;
  assertEqual(content.length, whole.usage.completion_tokens, 'one logprobs entry per completion token');
  for (const entry of content) {
    assertTrue(entry.logprob <= 0 && entry.top_logprobs.length === 3, `entry ${JSON.stringify(entry)}`);
    assertEqual(entry.top_logprobs[0].token, entry.token, 'greedy picks the most likely token');
    assertTrue(entry.top_logprobs[0].logprob >= entry.top_logprobs[1].logprob, 'alternatives sorted');
    assertEqual(Buffer.from(entry.bytes).toString('utf8') === entry.token || entry.token.startsWith('bytes:'), true,
      'bytes spell the token');
  }
  const stream = await client.chat.completions.create({ ...body, stream: true });
  const streamed = [];
  for await (const chunk of stream) {
    const lp = chunk.choices[0]?.logprobs;
    if (lp) streamed.push(...lp.content);
  }
  assertEqual(JSON.stringify(streamed), JSON.stringify(content), 'streamed logprobs equal the whole answer\'s');
  const completion = await client.completions.create({
    model: 'specd', prompt: completionPrompt, max_tokens: 8, temperature: 0, logprobs: 2,
  });
  const lp = completion.choices[0].logprobs;
  assertEqual(lp.tokens.length, completion.usage.completion_tokens, 'completions: one token per completion token');
  assertEqual(lp.token_logprobs.length, lp.tokens.length, 'completions: token_logprobs parallel to tokens');
  assertEqual(Object.keys(lp.top_logprobs[0]).length, 2, 'completions: 2 alternatives');
}

// response_format: the answer parses and follows the schema; json_object gives an object.
async function structuredOutput() {
  const schema = {
    type: 'object', properties: { name: { type: 'string', maxLength: 8 }, lines: { type: 'integer' } },
    required: ['name'], additionalProperties: false,
  };
  const answer = await client.chat.completions.create({
    model: 'specd', messages: [{ role: 'user', content: 'Who speaks?' }], max_tokens: 256, temperature: 0,
    response_format: { type: 'json_schema', json_schema: { name: 'speaker', schema, strict: true } },
  });
  assertEqual(answer.choices[0].finish_reason, 'stop', 'json_schema: the document ends');
  const doc = JSON.parse(answer.choices[0].message.content);
  assertTrue(typeof doc.name === 'string' && doc.name.length <= 8, `json_schema: name follows the schema: ${JSON.stringify(doc)}`);
  assertTrue(Object.keys(doc).every((k) => k === 'name' || k === 'lines'), 'json_schema: no other keys');
  const sampled = await client.chat.completions.create({
    model: 'specd', messages: [{ role: 'user', content: 'Who speaks?' }], max_tokens: 256, temperature: 1, seed: 3,
    response_format: { type: 'json_schema', json_schema: { name: 'speaker', schema, strict: true } },
  });
  if (sampled.choices[0].finish_reason === 'stop') JSON.parse(sampled.choices[0].message.content);
  const any = await client.chat.completions.create({
    model: 'specd', messages: [{ role: 'user', content: 'Answer in JSON.' }], max_tokens: 16, temperature: 0,
    response_format: { type: 'json_object' },
  });
  assertTrue(any.choices[0].message.content.trimStart().startsWith('{'), 'json_object: an object starts');
  try {
    await client.chat.completions.create({
      model: 'specd', messages: [{ role: 'user', content: 'x' }], max_tokens: 8,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', not: {} } } },
    });
  } catch (e) {
    assertTrue(e instanceof OpenAI.BadRequestError, `an unsupported schema raises BadRequestError (${e.constructor.name})`);
    assertTrue(/not/.test(e.message), `the refusal names the keyword: ${e.message}`);
    return;
  }
  throw new Error('a schema with "not" was accepted');
}

// n > 1: the client's own types (choices with their index, streamed deltas told apart by index).
async function choices() {
  const request = { model: 'specd', messages: [{ role: 'user', content: chatPrompt }], max_tokens: 8, temperature: 1,
                    seed: 9, n: 3 };
  const whole = await client.chat.completions.create(request);
  assertEqual(whole.choices.map((c) => c.index).join(','), '0,1,2', 'n: 3 gives choices 0, 1 and 2');
  const single = await client.chat.completions.create({ ...request, n: 1 });
  assertEqual(whole.choices[0].message.content, single.choices[0].message.content, 'choice 0 is the n: 1 sample');
  assertTrue(whole.usage.completion_tokens >= 3 && whole.usage.prompt_tokens === single.usage.prompt_tokens,
             `usage counts the prompt once and every choice's tokens: ${JSON.stringify(whole.usage)}`);
  const stream = await client.chat.completions.create({ ...request, stream: true });
  const texts = ['', '', ''];
  for await (const chunk of stream) for (const c of chunk.choices) texts[c.index] += c.delta?.content ?? '';
  assertEqual(JSON.stringify(texts), JSON.stringify(whole.choices.map((c) => c.message.content)),
              'streamed choices add up to the whole ones, by index');
}

await models();
await streamedChat();
await streamedCompletion();
await wholeChat();
await refusedRequest();
await cors();
await tokenize();
await contextLength();
await unseededSamples();
await toolHistoryRendered();
await forcedToolCalls();
await logprobs();
await structuredOutput();
await choices();
console.log('openai client test passed');
