#!/usr/bin/env bash
# One call of at most 10 minutes on an H100/H200 host with no TensorFlow (PyTorch and JAX there;
# Keras and ansible-core travel as wheels in .whl/, see fetch_wheels.sh): in order of need,
#   1. gpu_facts through ansible-playbook on this host (benchmarks/gpu/gpu_facts.yml);
#   2. tests/gpu_bench/test_raw_graph.py: the PyTorch and JAX raw loops equal Keras on the GPU;
#   3. runner vs raw loop on the JAX backend (the runner syncs every K steps, K auto), R = 3,
#      the rows that were below 0.95x first: InceptionV3 b32, AlexNet b512, then ResNet-50 b32,
#      bf16; --max-minutes keeps the call inside its budget, finished records are kept;
#   4. the sharing claim (4 concurrent ResNet-50 b64 jobs vs one) on the JAX runner, if it fits.
# Everything lands in $OUT: log, facts.json, facts.log, train/records.jsonl, sharing/records.jsonl.
#
#   OUT=/tmp/gpu-call BUDGET_S=540 bash benchmarks/gpu/call_parity.sh
#   OUT=/tmp/gpu-call SMOKE=1 bash benchmarks/gpu/call_parity.sh     # the same steps, tiny, on CPU
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the directory for the records}"
BUDGET_S=${BUDGET_S:-540}
SMOKE=${SMOKE:-0}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log") 2>&1
start=$SECONDS
# minutes left in the budget after reserving $1 seconds (never below 0)
left_min() { "$PY" -c "print(round(max(0.0, ($BUDGET_S - ($SECONDS - $start) - $1) / 60), 2))"; }
stamp() { echo "== $(date -u +%H:%M:%S) +$((SECONDS - start))s $*"; }

if [ "$SMOKE" = 0 ] && compgen -G '.whl/*.whl' >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 2
  export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 COLUMNS=200 XLA_PYTHON_CLIENT_PREALLOCATE=false
export JAX_COMPILATION_CACHE_DIR=${JAX_COMPILATION_CACHE_DIR:-/tmp/gpulab-jax-cache}
if [ "$SMOKE" = 1 ]; then
  train=(--cpu-smoke) sharing=(--cpu-smoke)
else
  train=(--train inception_v3:32 --train alexnet:512 --train resnet50:32 --precisions bf16
    --repeats 3 --steps 200 --warmup 10)
  sharing=()
fi

stamp "the GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,clocks.max.sm,power.limit \
  --format=csv 2>&1 || echo "nvidia-smi: not here"
"$PY" -c "import jax, keras, sys; print(sys.version.split()[0], 'jax', jax.__version__, jax.devices(), 'keras', keras.__version__)"

stamp "1. gpu_facts through ansible-playbook"
ANSIBLE_ROLES_PATH=$PWD/playbooks/roles ANSIBLE_LOCALHOST_WARNING=false timeout 150 \
  ansible-playbook -i localhost, -c local benchmarks/gpu/gpu_facts.yml \
  -e gpu_facts_json="$OUT/facts.json" \
  -e ansible_python_interpreter="$("$PY" -c 'import sys; print(sys.executable)')" >"$OUT/facts.log" 2>&1
grep -E 'fatal|ok=' "$OUT/facts.log"
cat "$OUT/facts.json" 2>/dev/null

stamp "2. the raw loops against Keras"
KERAS_BACKEND=${RAW_GRAPH_BACKEND:-torch} timeout 150 "$PY" -m pytest --noconftest -q \
  -p no:cacheprovider -o addopts= tests/gpu_bench/test_raw_graph.py 2>&1 | tail -15

stamp "3. runner vs raw loop, JAX (max $(left_min 200) min)"
KERAS_BACKEND=jax "$PY" benchmarks/gpu/h100_suite.py --backends jax --parts train "${train[@]}" \
  --max-minutes "$(left_min 200)" --no-report --out "$OUT/train"

stamp "4. 4 concurrent jobs vs 1, JAX (max $(left_min 110) min)"
KERAS_BACKEND=jax "$PY" benchmarks/gpu/h100_suite.py --backends jax --parts sharing \
  "${sharing[@]}" --max-minutes "$(left_min 110)" --no-report --out "$OUT/sharing"
stamp "facts against the records' fingerprint"
"$PY" benchmarks/gpu/facts_vs_fingerprint.py "$OUT/facts.json" "$OUT"/train/records.jsonl
stamp "done"
