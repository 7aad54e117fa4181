// The frameworks apps build on, unchanged (pinned in scripts/fetch_test_clients.sh),
// against `specd serve` on loopback (tests/support/with_server.sh sets SPECD_BASE_URL):
// LangChain's ChatOpenAI (invoke, and bindTools) and the Vercel AI SDK's generateText
// through @ai-sdk/openai-compatible (plain, with tools and toolChoice "auto" and
// "required"). Greedy text must equal `specd generate --chat`, and with tools the
// server's own answer to the same request: with "auto" the committed model answers in
// prose, so no tool call comes back; with a forced choice (LangChain's tool_choice
// "required", the AI SDK's toolChoice "required") it decodes under the grammar of its
// template's <tool_call> syntax, so the framework gets a call whose arguments follow the
// schema.
//
//   node frameworks_test.mjs --specd build/specd
import { specdGenerate, requireClient, parseArgs, assertEqual, assertTrue } from '../support/expected.mjs';

const args = parseArgs(process.argv.slice(2));
const baseURL = `${process.env.SPECD_BASE_URL}/v1`;
if (!args.specd || !process.env.SPECD_BASE_URL) throw new Error('needs --specd and SPECD_BASE_URL (run under with_server.sh)');
const { ChatOpenAI } = requireClient('@langchain/openai');
const { generateText, generateObject, tool, jsonSchema } = requireClient('ai');
const { createOpenAICompatible } = requireClient('@ai-sdk/openai-compatible');

const maxTokens = 24;
const chatPrompt = 'Speak, what are you?';
const expected = specdGenerate(args.specd, { prompt: chatPrompt, chat: true, maxTokens });
const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

// The server's greedy answer to the chat with the tool, as a plain request.
async function answerWithTool() {
  const response = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: chatPrompt }], max_tokens: maxTokens, temperature: 0,
                           tools: [{ type: 'function', function: weather }] }),
  });
  const body = await response.json();
  assertEqual(response.status, 200, 'a chat with tools is answered');
  return body.choices[0].message.content;
}
const withTool = await answerWithTool();

// Structured output: a short closed schema, so the tiny model's answer always ends (it
// pads each gap with the most whitespace the grammar allows, about 90 tokens in all).
const verdict = {
  type: 'object', properties: { answer: { enum: ['yes', 'no'] }, sure: { type: 'boolean' } },
  required: ['answer', 'sure'], additionalProperties: false,
};
function checkVerdict(object, who) {
  assertTrue(['yes', 'no'].includes(object.answer) && typeof object.sure === 'boolean',
    `${who}: the object follows the schema: ${JSON.stringify(object)}`);
}

// A closed schema for the forced calls, so the tiny model's call always ends.
const forecast = {
  name: 'get_forecast',
  description: 'The forecast for a city',
  parameters: { type: 'object', properties: { city: { enum: ['Verona', 'Mantua'] }, days: { enum: [1, 2, 3] } },
                required: ['city', 'days'], additionalProperties: false },
};
function checkForecast(args, who) {
  assertTrue(['Verona', 'Mantua'].includes(args.city) && [1, 2, 3].includes(args.days) &&
             Object.keys(args).length === 2, `${who}: the arguments follow the schema: ${JSON.stringify(args)}`);
}

async function langchain() {
  const llm = new ChatOpenAI({ model: 'specd', apiKey: 'specd-test', temperature: 0, maxTokens,
                               configuration: { baseURL }, maxRetries: 0 });
  const plain = await llm.invoke([['human', chatPrompt]]);
  assertEqual(plain.content, expected.text, 'LangChain ChatOpenAI.invoke text equals specd generate --chat');
  const tooled = await llm.bindTools([{ type: 'function', function: weather }]).invoke([['human', chatPrompt]]);
  assertEqual(tooled.tool_calls, [], 'LangChain bindTools: a prose answer has no tool_calls');
  assertEqual(tooled.content, withTool, 'LangChain bindTools: the text of the server\'s answer with tools');
  const forcing = new ChatOpenAI({ model: 'specd', apiKey: 'specd-test', temperature: 0, maxTokens: 300,
                                   configuration: { baseURL }, maxRetries: 0 });
  const called = await forcing.bindTools([{ type: 'function', function: forecast }],
                                         { tool_choice: 'required', parallel_tool_calls: false })
    .invoke([['human', 'Will it rain in Verona?']]);
  assertEqual(called.tool_calls.length, 1, 'LangChain bindTools with tool_choice required: one call');
  assertEqual(called.tool_calls[0].name, 'get_forecast', 'LangChain bindTools: the call\'s name');
  assertTrue(/^call_/.test(called.tool_calls[0].id), 'LangChain bindTools: the call\'s id');
  checkForecast(called.tool_calls[0].args, 'LangChain bindTools with tool_choice required');
  assertEqual(called.response_metadata.finish_reason, 'tool_calls', 'LangChain: finish_reason tool_calls');
  const structured = new ChatOpenAI({ model: 'specd', apiKey: 'specd-test', temperature: 0, maxTokens: 256,
                                      configuration: { baseURL }, maxRetries: 0 })
    .withStructuredOutput(verdict, { method: 'jsonSchema', name: 'verdict' });
  checkVerdict(await structured.invoke([['human', 'Is it true?']]), 'LangChain withStructuredOutput (json_schema)');
}

async function aiSdk() {
  const provider = createOpenAICompatible({ name: 'specd', baseURL, apiKey: 'specd-test' });
  const plain = await generateText({ model: provider('specd'), prompt: chatPrompt, temperature: 0,
                                     maxOutputTokens: maxTokens, maxRetries: 0 });
  assertEqual(plain.text, expected.text, 'AI SDK generateText text equals specd generate --chat');
  const tools = { get_weather: tool({ description: weather.description, inputSchema: jsonSchema(weather.parameters) }) };
  const auto = await generateText({ model: provider('specd'), prompt: chatPrompt, temperature: 0,
                                    maxOutputTokens: maxTokens, tools, toolChoice: 'auto', maxRetries: 0 });
  assertEqual(auto.toolCalls, [], 'AI SDK generateText with tools: a prose answer has no tool calls');
  assertEqual(auto.text, withTool, 'AI SDK generateText with tools: the text of the server\'s answer with tools');
  const forced = await generateText({
    model: provider('specd'), prompt: 'Will it rain in Verona?', temperature: 0, maxOutputTokens: 300, maxRetries: 0,
    tools: { get_forecast: tool({ description: forecast.description, inputSchema: jsonSchema(forecast.parameters) }) },
    toolChoice: 'required', providerOptions: { specd: { parallel_tool_calls: false } } });
  assertEqual(forced.finishReason, 'tool-calls', 'AI SDK toolChoice required: finishReason');
  assertEqual(forced.toolCalls.length, 1, 'AI SDK toolChoice required: one call');
  assertEqual(forced.toolCalls[0].toolName, 'get_forecast', 'AI SDK toolChoice required: the tool');
  checkForecast(forced.toolCalls[0].input, 'AI SDK generateText with toolChoice required');
  assertEqual(forced.text, '', 'AI SDK toolChoice required: no text besides the call');
}

async function aiSdkObject() {
  const provider = createOpenAICompatible({ name: 'specd', baseURL, apiKey: 'specd-test',
                                            supportsStructuredOutputs: true });
  const { object } = await generateObject({ model: provider('specd'), schema: jsonSchema(verdict), prompt: 'Is it true?',
                                            temperature: 0, maxOutputTokens: 256, maxRetries: 0 });
  checkVerdict(object, 'AI SDK generateObject (json_schema)');
}

await langchain();
await aiSdk();
await aiSdkObject();
console.log('frameworks test passed');
