// The official `openai` npm client (pinned in scripts/fetch_test_clients.sh), unchanged,
// against `specd serve` on loopback (tests/support/with_server.sh sets SPECD_BASE_URL):
// the model list, a streamed chat completion, a streamed completion, a non-streamed chat
// completion and a refused request. Greedy output must equal `specd generate` on the same pair.
//
//   node openai_client_test.mjs --specd build/specd
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

await models();
await streamedChat();
await streamedCompletion();
await wholeChat();
await refusedRequest();
console.log('openai client test passed');
