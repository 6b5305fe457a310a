// Runs an exported navigator (navigator.onnx) with Microsoft's onnxruntime, a second
// implementation of ONNX beside the project's own interpreter, and prints its Q-values.
//
// usage: node onnx_navigator.js <model.onnx> <states.json>
//   states.json: {"n": rows, "dim": features, "values": [row-major floats]}
// prints: {"input": ..., "output": ..., "dims": [...], "q": [row-major floats]}
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

const fail = (msg) => {
  console.error('FAIL: ' + msg);
  process.exit(1);
};

(async () => {
  const [modelPath, statesPath] = process.argv.slice(2);
  if (!modelPath || !statesPath) fail('usage: node onnx_navigator.js <model.onnx> <states.json>');
  const states = JSON.parse(fs.readFileSync(statesPath, 'utf8'));
  const session = await ort.InferenceSession.create(fs.readFileSync(modelPath), {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'disabled',  // run the graph as exported
  });
  if (session.inputNames.length !== 1 || session.outputNames.length !== 1) {
    fail(`expected one input and one output, got ${session.inputNames} -> ${session.outputNames}`);
  }
  const input = new ort.Tensor('float32', Float32Array.from(states.values), [states.n, states.dim]);
  const out = await session.run({[session.inputNames[0]]: input});
  const q = out[session.outputNames[0]];
  console.log(JSON.stringify({
    input: session.inputNames[0],
    output: session.outputNames[0],
    dims: q.dims,
    q: Array.from(q.data),
  }));
})().catch((e) => fail(e && e.stack ? e.stack : String(e)));
