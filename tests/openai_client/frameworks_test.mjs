// The frameworks apps build on, unchanged (pinned in scripts/fetch_test_clients.sh),
// against `specd serve` on loopback (tests/support/with_server.sh sets SPECD_BASE_URL):
// LangChain's ChatOpenAI (invoke, and bindTools) and the Vercel AI SDK's generateText
// through @ai-sdk/openai-compatible (plain, with tools and toolChoice "auto", and
// toolChoice "required" refused). Greedy text must equal `specd generate --chat`, and
// with tools the server's own answer to the same request: the committed model answers
// in prose, so no tool call comes back (calls are parsed on recorded outputs in
// tests/tool_calls_test.cpp).
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

async function langchain() {
  const llm = new ChatOpenAI({ model: 'specd', apiKey: 'specd-test', temperature: 0, maxTokens,
                               configuration: { baseURL }, maxRetries: 0 });
  const plain = await llm.invoke([['human', chatPrompt]]);
  assertEqual(plain.content, expected.text, 'LangChain ChatOpenAI.invoke text equals specd generate --chat');
  const tooled = await llm.bindTools([{ type: 'function', function: weather }]).invoke([['human', chatPrompt]]);
  assertEqual(tooled.tool_calls, [], 'LangChain bindTools: a prose answer has no tool_calls');
  assertEqual(tooled.content, withTool, 'LangChain bindTools: the text of the server\'s answer with tools');
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
  try {
    await generateText({ model: provider('specd'), prompt: chatPrompt, maxOutputTokens: 8, tools,
                         toolChoice: 'required', maxRetries: 0 });
  } catch (e) {
    assertEqual(e.statusCode, 400, 'AI SDK toolChoice required is refused with 400');
    assertTrue(/constrained decoding/.test(e.responseBody || e.message), 'the refusal says why');
    return;
  }
  throw new Error('toolChoice required was accepted');
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
