// An external client for allot's rollout worker, written only against rollout.proto with the
// stock @grpc/grpc-js and @grpc/proto-loader packages. It plays the learner: Hello, a Rollout
// stream with a few episodes, acknowledgements, and checks on the trajectories that come back.
//
// usage: node rollout_client.js <worker host:port> <proto root> <token>
'use strict';
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const [address, protoRoot, token] = process.argv.slice(2);
const def = protoLoader.loadSync('allot/v1/rollout.proto', {
  includeDirs: [protoRoot],
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});
const v1 = grpc.loadPackageDefinition(def).allot.v1;
const client = new v1.RolloutWorker(address, grpc.credentials.createInsecure());
const meta = () => {
  const m = new grpc.Metadata();
  m.set('authorization', 'Bearer ' + token);
  return m;
};
const fail = (msg) => {
  console.error('FAIL: ' + msg);
  process.exit(1);
};
setTimeout(() => fail('timeout'), 20000);

const N = 5;
const ids = Array.from({length: N}, (_, i) => 'js-' + i);

client.Hello({protocol_version: 1, learner_id: 'node'}, new grpc.Metadata(), (err) => {
  if (!err || err.code !== grpc.status.UNAUTHENTICATED) fail('Hello without token was not rejected');
  client.Hello({protocol_version: 1, learner_id: 'node'}, meta(), (err2, hello) => {
    if (err2) fail('Hello: ' + err2.message);
    if (!(hello.capacity > 0) || !hello.envs.includes('echo')) fail('bad Hello reply');
    const stream = client.Rollout(meta());
    const got = new Map();
    stream.on('data', (msg) => {
      for (const r of msg.rejected) fail('rejected ' + r.episode_id + ': ' + r.message);
      const acks = [];
      for (const c of msg.chunks) {
        if (c.body !== 'whole') fail('expected whole trajectories');
        const t = c.whole;
        const policy = t.segments.find((s) => s.trainable);
        if (!policy || policy.ids.length !== 6 || policy.logprobs.length !== 6) {
          fail('bad policy segment in ' + t.episode_id);
        }
        if (t.segments[0].role !== 'SEGMENT_ROLE_PROMPT' || t.segments[0].trainable) {
          fail('prompt segment must be masked');
        }
        // An unset sub-message (no failure) decodes as null.
        if (t.failure && t.failure.reason !== 'FAILURE_REASON_NONE') fail('failure ' + t.failure.message);
        got.set(t.episode_id, t.rewards.map((r) => r.name + '=' + r.value).join(','));
        acks.push(c.episode_id);
      }
      if (acks.length) stream.write({acks});
      if (got.size === N) {
        stream.end();
        const sorted = [...got.keys()].sort();
        console.log(JSON.stringify({ids: sorted, rewards: got.get('js-0')}));
        process.exit(0);
      }
    });
    stream.on('error', (e) => fail('stream: ' + e.message));
    stream.write({
      episodes: ids.map((id) => ({
        episode_id: id,
        env: 'echo',
        env_config: '{tokens: 6}',
        dataset_item: '{"q": "' + id + '"}',
        sampling: {temperature: 0.7, top_p: 0.95},
        policy_version: 0,
      })),
    });
  });
});
