#!/usr/bin/env bash
# DQN navigator benchmark: allot's update (fused and LibTorch paths) and greedy action selection
# against PyTorch running the same network and update, in the same run.
#
#   bench/trainer/run.sh [BUILD_DIR]      (default: build; ALLOT_BUILD_DIR also works)
#
# Both sides are single-threaded and timed in process CPU seconds, which stays meaningful on a
# busy machine. Targets: >= 10x PyTorch's updates/s at batch 64, < 20 us per action.
# RUNS=N (default 1) repeats both sides N times, alternating, and prints each run and the
# medians; ratios are of the medians. ALLOT_BENCH_NO_BUILD=1 skips the build (for a tree that
# is built under a lock of its own).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-${ALLOT_BUILD_DIR:-build}}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
PY=/usr/bin/python3

if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "installing python3-torch (Debian) ..." >&2
  SUDO=""
  [[ "$(id -u)" != 0 ]] && SUDO="sudo"
  $SUDO apt-get install -y python3-torch >/dev/null
fi

if [[ "${ALLOT_BENCH_NO_BUILD:-0}" != 1 ]]; then
  cmake --build "$BUILD" --target allot_dqn_bench -- -j2 >/dev/null
fi
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

RUNS="${RUNS:-1}"
for ((i = 0; i < RUNS; ++i)); do
  "$BUILD/bench/trainer/allot_dqn_bench" --benchmark_format=json >"$OUT/cpp$i.json"
  "$PY" "$ROOT/bench/trainer/dqn_torch.py" --seconds "${SECONDS_PER_SIDE:-3}" >"$OUT/py$i.json"
done

"$PY" - "$OUT" "$RUNS" <<'PYEOF'
import json, os, statistics, sys
d, runs = sys.argv[1], int(sys.argv[2])
cpps = [{b["name"].split("/")[0]: b
         for b in json.load(open(os.path.join(d, f"cpp{i}.json")))["benchmarks"]}
        for i in range(runs)]
pys = [json.load(open(os.path.join(d, f"py{i}.json"))) for i in range(runs)]
def ups_of(cpp, name):  # updates per CPU second
    b = cpp[name]
    return 1e9 / (b["cpu_time"] * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]])
def us_of(cpp, name):
    b = cpp[name]
    return b["cpu_time"] * {"ns": 1e-3, "us": 1, "ms": 1e3, "s": 1e6}[b["time_unit"]]
if runs > 1:
    for i, (c, p) in enumerate(zip(cpps, pys)):
        f, l, t = ups_of(c, "BM_DqnUpdateFused"), ups_of(c, "BM_DqnUpdateLibTorch"), p["updates_per_cpu_s"]
        print(f"run {i + 1}: updates/s fused {f:9.0f}  libtorch {l:8.0f}  pytorch {t:8.0f}   "
              f"fused/pytorch {f / t:5.1f}x  libtorch/pytorch {l / t:5.2f}x")
    print(f"medians of {runs} runs:")
cpp = {name: cpps[0][name] for name in cpps[0]}
ups = lambda name: statistics.median(ups_of(c, name) for c in cpps)
us = lambda name: statistics.median(us_of(c, name) for c in cpps)
py = {"torch_version": pys[0]["torch_version"],
      "updates_per_cpu_s": statistics.median(p["updates_per_cpu_s"] for p in pys),
      "greedy_us": statistics.median(p["greedy_us"] for p in pys)}
mark = lambda ok: "PASS" if ok else "MISS"
fused, lt, torch_ups = ups("BM_DqnUpdateFused"), ups("BM_DqnUpdateLibTorch"), py["updates_per_cpu_s"]
print(f"PyTorch {py['torch_version']}, batch 64, one thread, process CPU time")
print(f"updates/s    allot fused {fused:>9.0f}   allot libtorch {lt:>8.0f}   pytorch {torch_ups:>8.0f}")
print(f"  ratio fused/pytorch {fused / torch_ups:6.1f}x (target >= 10x) {mark(fused / torch_ups >= 10)}"
      f"   like for like, libtorch/pytorch {lt / torch_ups:5.2f}x")
print("  what differs: the headline is allot's hand-written fused kernels (dqn.fused_update, the"
      " default) against PyTorch autograd; like for like is allot's LibTorch autograd path"
      " (dqn.fused_update: false) against the same update written in PyTorch")
for name, isa in (("BM_FusedKernelsAvx2", "avx2+fma"), ("BM_FusedKernelsPortable", "sse2")):
    b = cpp.get(name)
    if b is None or b.get("error_occurred"):
        print(f"  kernels alone, {isa:8s}: not run ({(b or {}).get('error_message', 'missing')})")
    else:
        print(f"  kernels alone, {isa:8s}: {ups(name):9.0f} updates/s   {ups(name) / torch_ups:6.1f}x pytorch")
g = us("BM_NavigatorGreedy")
print(f"greedy action  allot {g:8.3f} us   pytorch {py['greedy_us']:8.1f} us   "
      f"ratio {py['greedy_us'] / g:6.0f}x   (target < 20 us) {mark(g < 20)}")
PYEOF
