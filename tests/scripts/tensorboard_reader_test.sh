#!/usr/bin/env bash
# allot's TensorBoard event files, read back by a reader that shares nothing with allot's writer
# (tests/scripts/tensorboard_reader.py: TFRecord frames with their CRC-32C checked, each event
# decoded by the protobuf runtime with TensorBoard's own schema, tensorboard_event.proto), equal
# metrics.jsonl scalar for scalar. The run is the synthetic chain's navigator (seconds), then
# the same run resumed from an earlier checkpoint, as after a crash: the steps after that
# checkpoint are trained again and must not appear twice in either file.
#
#   tests/scripts/tensorboard_reader_test.sh ALLOT_BINARY
# Exit 0: passed; 77: skipped (no protoc or no python3 protobuf runtime); else failed.
set -uo pipefail
allot=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
# Debian's python3-* packages install for the system interpreter.
py=/usr/bin/python3
[[ -x $py ]] || py=python3
if ! command -v protoc > /dev/null || ! "$py" -c 'import google.protobuf' 2> /dev/null; then
  echo "SKIP: needs protoc and the python3 protobuf runtime (Debian: python3-protobuf)"
  exit 77
fi
tmp=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

protoc --proto_path=tests/scripts --python_out="$tmp" tests/scripts/tensorboard_event.proto ||
  fail "protoc could not compile tests/scripts/tensorboard_event.proto"
run=$tmp/runs/tb
common=(--set "run.output_dir=$tmp/runs" --set run.name=tb --set logging.tensorboard=true)
"$allot" train -c configs/quickstart/chain.yaml "${common[@]}" --set trainer.total_steps=200 \
  > "$tmp/train.log" 2>&1 || fail "allot train: $(tail -5 "$tmp/train.log")"
"$py" tests/scripts/tensorboard_reader.py "$run" "$tmp" || exit 1

# A crash after step 200's metrics but before its checkpoint: resume trains 151..200 again.
rm -rf "$run"/checkpoints/step-000000000200
[[ -d $run/checkpoints/step-000000000150 ]] || fail "no step-150 checkpoint in $run/checkpoints"
"$allot" resume tb --output-dir "$tmp/runs" --set trainer.total_steps=250 \
  > "$tmp/resume.log" 2>&1 || fail "allot resume: $(tail -5 "$tmp/resume.log")"
grep -q "150" "$tmp/resume.log" || fail "the resumed run did not start from step 150"
last=$(tail -n 1 "$run/metrics.jsonl" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["step"])')
[[ $last == 250 ]] || fail "the resumed run's last metrics step is $last, not 250"
"$py" tests/scripts/tensorboard_reader.py "$run" "$tmp" || exit 1
