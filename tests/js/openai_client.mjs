// Drives `allot serve` with the official OpenAI client (npm "openai"), which nobody here wrote:
// completions, chat completions, n > 1, logprobs and streaming, then malformed requests over
// raw fetch. Exits non-zero on the first mismatch.
//
//   node openai_client.mjs http://127.0.0.1:PORT MODEL_NAME
import OpenAI from 'openai';

const [base, model] = process.argv.slice(2);
if (!base || !model) {
  console.error('usage: node openai_client.mjs BASE_URL MODEL');
  process.exit(2);
}
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });

let failures = 0;
function check(cond, what, detail) {
  if (cond) {
    console.log(`ok   ${what}`);
  } else {
    failures++;
    console.log(`FAIL ${what}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`);
  }
}

async function main() {
  const models = await client.models.list();
  check(models.data.some((m) => m.id === model), 'models.list names the model', models.data);

  const c = await client.completions.create({
    model, prompt: 'Hello', max_tokens: 8, temperature: 0, ignore_eos: true,
  });
  check(c.object === 'text_completion', 'completion object', c.object);
  check(c.choices.length === 1 && typeof c.choices[0].text === 'string', 'completion text', c);
  check(c.usage.completion_tokens === 8 && c.usage.total_tokens === c.usage.prompt_tokens + 8,
        'completion usage', c.usage);
  check(c.choices[0].finish_reason === 'length', 'finish_reason length', c.choices[0]);

  const again = await client.completions.create({
    model, prompt: 'Hello', max_tokens: 8, temperature: 0, ignore_eos: true,
  });
  check(again.choices[0].text === c.choices[0].text, 'greedy completions repeat', again);

  const many = await client.completions.create({
    model, prompt: [[1, 2, 3], 'abc'], n: 3, max_tokens: 4, temperature: 1.0, seed: 7,
    ignore_eos: true,
  });
  check(many.choices.length === 6, 'two prompts x n=3 give six choices', many.choices.length);
  check(many.choices.map((x) => x.index).join(',') === '0,1,2,3,4,5', 'choice indices',
        many.choices.map((x) => x.index));

  const lp = await client.completions.create({
    model, prompt: 'Hi', max_tokens: 5, logprobs: 2, temperature: 1.0, seed: 1, ignore_eos: true,
  });
  const l = lp.choices[0].logprobs;
  check(l && l.tokens.length === 5 && l.token_logprobs.length === 5, 'completion logprobs', l);
  check(l.token_logprobs.every((x) => x <= 0 && Number.isFinite(x)), 'logprobs are <= 0', l);
  check(l.top_logprobs.length === 5 && l.top_logprobs.every((t) => Object.keys(t).length >= 2),
        'top_logprobs have alternatives', l.top_logprobs);

  const chat = await client.chat.completions.create({
    model, messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'Hi' }],
    max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 2, ignore_eos: true,
  });
  check(chat.object === 'chat.completion', 'chat object', chat.object);
  check(chat.choices[0].message.role === 'assistant', 'chat role', chat.choices[0].message);
  const content = chat.choices[0].logprobs.content;
  check(content.length === 6 && content.every((e) => e.top_logprobs.length === 2),
        'chat logprobs', content);

  const nchat = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Hi' }], n: 2, max_tokens: 3, seed: 3,
  });
  check(nchat.choices.length === 2, 'chat n=2', nchat.choices.length);

  // Streaming: the deltas add up to the non-streamed greedy text.
  const stream = await client.completions.create({
    model, prompt: 'Hello', max_tokens: 8, temperature: 0, ignore_eos: true, stream: true,
  });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    for (const ch of chunk.choices) {
      text += ch.text;
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  check(text === c.choices[0].text, 'streamed completion equals the non-streamed one',
        [text, c.choices[0].text]);
  check(finish === 'length', 'streamed finish_reason', finish);

  const cstream = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 6, temperature: 0,
    ignore_eos: true, stream: true, stream_options: { include_usage: true },
  });
  let ctext = '';
  let role = null;
  let usage = null;
  for await (const chunk of cstream) {
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) {
      if (ch.delta.role) role = ch.delta.role;
      if (ch.delta.content) ctext += ch.delta.content;
    }
  }
  const cfull = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 6, temperature: 0,
    ignore_eos: true,
  });
  check(role === 'assistant', 'chat stream role', role);
  check(ctext === cfull.choices[0].message.content, 'chat stream text', [ctext, cfull]);
  check(usage && usage.completion_tokens === 6, 'chat stream usage', usage);

  // Errors surface as the client's typed exceptions.
  try {
    await client.completions.create({ model: 'no-such-model', prompt: 'x', max_tokens: 1 });
    check(false, 'unknown model is rejected');
  } catch (e) {
    check(e instanceof OpenAI.NotFoundError, 'unknown model -> NotFoundError', String(e));
  }
  try {
    await client.completions.create({ model, prompt: 'x', max_tokens: 1, n: 0 });
    check(false, 'n=0 is rejected');
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.param === 'n', 'n=0 -> BadRequestError',
          String(e));
  }

  // Malformed requests over raw fetch.
  const raw = async (path, init) => {
    const r = await fetch(`${base}${path}`, init);
    let body = null;
    try { body = await r.json(); } catch { body = null; }
    return { status: r.status, body };
  };
  const post = (path, body) => raw(path, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body,
  });
  const isError = (b) => b && b.error && typeof b.error.message === 'string' &&
      'type' in b.error && 'param' in b.error && 'code' in b.error;
  for (const [what, res, status] of [
    ['bad JSON', await post('/v1/completions', '{"prompt": "x",'), 400],
    ['prompt of the wrong type', await post('/v1/completions', '{"prompt": {"a": 1}}'), 400],
    ['negative max_tokens', await post('/v1/completions', '{"prompt": "x", "max_tokens": -5}'), 400],
    ['messages missing', await post('/v1/chat/completions', '{"model": "x"}'), 400],
    ['top_p out of range', await post('/v1/completions', '{"prompt": "x", "top_p": 7}'), 400],
    ['GET on a POST route', await raw('/v1/chat/completions', { method: 'GET' }), 405],
    ['unknown route', await raw('/v2/whatever', { method: 'GET' }), 404],
  ]) {
    check(res.status === status && isError(res.body), `${what} -> ${status} + error JSON`, res);
  }
  const health = await fetch(`${base}/health`);
  check(health.status === 200, 'still healthy after malformed requests', health.status);
}

main().then(() => {
  if (failures > 0) {
    console.log(`${failures} check(s) failed`);
    process.exit(1);
  }
  console.log('all checks passed');
}, (e) => {
  console.log(`FAIL uncaught: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
