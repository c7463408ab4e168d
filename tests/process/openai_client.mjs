// Asks a running pipeline through the official OpenAI Node client: the
// models list, a camera question plain and streamed (with usage), an image
// sent as a data URL, and an unknown camera. Prints one JSON object with
// what came back; openai_api_test.sh checks it against the scene's truth.
// A camera question is asked again (every 200 ms) until its answer is about
// a frame whose truth the scene knows (KNOWN_FRAMES, a JSON list: the scene
// does not say how many shapes there are while one is half in view).
//   KNOWN_FRAMES=[...] node openai_client.mjs BASE_URL TOKEN CAMERA QUESTION IMAGE.png
import fs from 'node:fs';
import OpenAI from 'openai';

const [baseURL, apiKey, camera, question, imagePath] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const out = {};
const known = new Set(JSON.parse(process.env.KNOWN_FRAMES));
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function aboutAKnownFrame(ask) {
  for (let i = 0; i < 150; i += 1) {
    const a = await ask();
    if (known.has(a.seq)) return a;
    await pause(200);
  }
  throw new Error('no answer was about a frame whose truth is known');
}

const models = await client.models.list();
out.models = models.data.map((m) => m.id);
const model = out.models[0];

const ask = (url, extra = {}) =>
  client.chat.completions.create({
    model,
    max_tokens: 8,
    temperature: 0,
    messages: [{ role: 'user', content: [{ type: 'text', text: question }, { type: 'image_url', image_url: { url } }] }],
    ...extra,
  });

out.plain = await aboutAKnownFrame(async () => {
  const plain = await ask(`camera://${camera}`);
  return {
    text: plain.choices[0].message.content,
    finish_reason: plain.choices[0].finish_reason,
    usage: plain.usage,
    seq: plain.vlcache.frame_seq,
  };
});

out.streamed = await aboutAKnownFrame(async () => {
  const stream = await ask(`camera://${camera}`, { stream: true, stream_options: { include_usage: true } });
  const streamed = { text: '', content_chunks: 0, chunks: 0 };
  for await (const chunk of stream) {
    streamed.chunks += 1;
    if (chunk.usage) {
      streamed.usage = chunk.usage;
      streamed.seq = chunk.vlcache.frame_seq;
    }
    for (const choice of chunk.choices) {
      if (choice.delta?.content) {
        streamed.text += choice.delta.content;
        streamed.content_chunks += 1;
      }
      if (choice.finish_reason) streamed.finish_reason = choice.finish_reason;
    }
  }
  return streamed;
});

const png = fs.readFileSync(imagePath).toString('base64');
const image = await ask(`data:image/png;base64,${png}`);
out.image = { text: image.choices[0].message.content, usage: image.usage };

try {
  await ask('camera://no-such-camera');
  out.unknown_camera = { status: 200 };
} catch (e) {
  out.unknown_camera = { status: e.status, message: e.message };
}
console.log(JSON.stringify(out));
