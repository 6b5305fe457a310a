// Checks docs/launch/kubernetes.yaml offline: every object is validated against the Kubernetes
// API's OpenAPI schema (npm kubernetes-models: types, enums and required fields; the schema
// allows unknown fields, so a misspelt optional field passes here as it does in the API), and
// the manifest stays in step with docs/launch/slurm.sbatch: the same rollout and metrics ports,
// mutual TLS on both sides, N and M given consistently.
//   node tests/js/kubernetes_manifest.mjs [MANIFEST]      exit 0: valid; 1: the errors printed
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const manifest = process.argv[2] ?? join(root, "docs/launch/kubernetes.yaml");
const errors = [];
const docs = parseAllDocuments(readFileSync(manifest, "utf8"));
const objects = [];
for (const doc of docs) {
  if (doc.errors.length > 0) errors.push(`${manifest}: ${doc.errors.map(String).join("; ")}`);
  const o = doc.toJS();
  if (o) objects.push(o);
}

// apiVersion "apps/v1" -> module "kubernetes-models/apps/v1/<Kind>"; "v1" -> "kubernetes-models/v1/<Kind>".
for (const o of objects) {
  const where = `${manifest}: ${o.kind} ${o.metadata?.name}`;
  let mod;
  try {
    mod = await import(`kubernetes-models/${o.apiVersion}/${o.kind}`);
  } catch (e) {
    errors.push(`${where}: no schema for ${o.apiVersion} ${o.kind}`);
    continue;
  }
  try {
    new mod[o.kind](o).validate();
  } catch (e) {
    errors.push(`${where}: ${e.message}`);
  }
}

const find = (kind) => objects.find((o) => o.kind === kind);
const workers = find("StatefulSet");
const learners = find("Job");
if (!workers || !learners) {
  errors.push(`${manifest}: expected a StatefulSet (workers) and a Job (learners)`);
} else {
  const w = workers.spec.template.spec.containers[0];
  const l = learners.spec.template.spec.containers[0];
  const env = Object.fromEntries(l.env.filter((e) => "value" in e).map((e) => [e.name, e.value]));
  const args = l.args.join(" ");
  const sbatch = readFileSync(join(root, "docs/launch/slurm.sbatch"), "utf8");
  const check = (ok, what) => ok || errors.push(`${manifest}: ${what}`);
  check(String(workers.spec.replicas) === env.NUM_WORKERS, "StatefulSet replicas != NUM_WORKERS");
  check(learners.spec.completions === learners.spec.parallelism &&
        String(learners.spec.completions) === env.WORLD_SIZE,
        "Job completions, parallelism and WORLD_SIZE differ");
  for (const [name, port] of [["WORKER_PORT", "50051"], ["METRICS_PORT", "9464"], ["MASTER_PORT", "29500"]]) {
    check(sbatch.includes(`${name}=\${${name}:-${port}}`), `slurm.sbatch's ${name} default is not ${port}`);
  }
  check(w.command.includes("0.0.0.0:50051") && args.includes(":50051"), "rollout port is not 50051 on both sides");
  check(w.command.includes("rollout.worker.metrics_listen=0.0.0.0:9464"), "workers' /metrics not on 9464");
  check(env.MASTER_PORT === "29500", "MASTER_PORT is not 29500");
  for (const f of ["tls_ca=/tls/ca.pem", "tls_cert=/tls/worker.pem", "tls_key=/tls/worker.key"]) {
    check(w.command.includes(`rollout.worker.auth.${f}`), `workers lack rollout.worker.auth.${f}`);
  }
  for (const f of ["tls_ca=/tls/ca.pem", "tls_cert=/tls/learner.pem", "tls_key=/tls/learner.key"]) {
    check(args.includes(`rollout.dispatcher.auth.${f}`), `learners lack rollout.dispatcher.auth.${f}`);
  }
}

if (errors.length > 0) {
  console.log(errors.join("\n"));
  process.exit(1);
}
console.log(`${manifest}: ${objects.length} objects valid against the Kubernetes API schema`);
