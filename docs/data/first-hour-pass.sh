#!/usr/bin/env bash
# Issue 54's repeated pass: the request kinds and load patterns as a new user runs them on this
# CPU (llama.cpp launched by llmbench, the bundled SmolLM2-135M). Each command, its exit status
# and the lines a user sees (the summary table's rows, notes, failures, the last line) go to the
# log named by $1. Run from the repository root after `make run`.
set -u
LOG=${1:-docs/data/first-hour-pass.log}
W=$(mktemp -d /tmp/llmbench-first-hour-XXXXXX)   # its own folder: /tmp is shared
R=${R:-$W/res}
export COLUMNS=200
LB=".venv/bin/llmbench"
SCHEMA=docs/data/structured-person.schema.json
TOOLS=docs/data/tools-weather.json
: > "$LOG"
echo "# issue 54's repeated pass, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD), $(nproc) cores shared with other jobs (each point's contention is said); driver: docs/data/first-hour-pass.sh" >> "$LOG"
echo "" >> "$LOG"
say() { echo "$*" >> "$LOG"; }
step() {  # step "what" cmd...: run, keep the exit status and what the user reads
  local what=$1; shift
  local t0=$SECONDS
  "$@" > $W/out 2>&1; local rc=$?
  say "## $what"
  say "\$ ${*/#.venv\/bin\//}"
  say "exit $rc ($((SECONDS - t0)) s)"
  # what the user reads: table rows, notes, failures, refusals, the last line
  grep -E '^│|^\| |note|contended|failed|invalid input|^  |prompts of|capacity|healthy|report|results:|speculation|llmbench:' $W/out \
    | grep -v '^┏\|^┡\|^└' | sed 's/[[:space:]]*$//' | head -40 >> "$LOG"
  say ""
}
S="serve --launch llamacpp --model smollm2-135m --results $R"
step "structured json-schema, dialect from the engine" $LB $S --api chat --structured json-schema=$SCHEMA -n 8 --input-len 32 --output-len 48
step "structured choice" $LB $S --api chat --structured choice=yes,no -n 8 --input-len 32 --output-len 16
step "structured choice, the unconstrained twin" $LB $S --api chat --structured choice=yes,no --shape-opt enforce=false -n 8 --input-len 32 --output-len 16
step "structured regex on llama.cpp (refused up front)" $LB $S --api chat --structured 'regex=[0-9]{4}' -n 8
step "tools, tool_choice auto" $LB $S --api chat --tools $TOOLS -n 4 --input-len 32 --output-len 48
step "tools, tool_choice required on llama.cpp (refused up front)" $LB $S --api chat --tools $TOOLS --tool-choice required -n 8
step "rerank on llama.cpp (refused up front)" $LB $S --shape rerank -n 8
step "embeddings" $LB $S --shape embeddings -n 8 --input-len 32
step "text, completions, two concurrencies" $LB $S -c 1,2 -n 8 --input-len 32 --output-len 16
step "text, chat: the server's prompt count" $LB $S --api chat -c 1 -n 8 --input-len 32 --output-len 16
step "open loop, Poisson 4 req/s" $LB $S --rate 4 -n 16 --input-len 32 --output-len 16
step "stages ramp" $LB $S --pattern stages --pattern-opt stages=5s:1,5s:2 --input-len 32 --output-len 16
step "conversations, 2 turns" $LB $S --api chat --turns 2 -c 2 -n 4 --input-len 32 --output-len 16
step "shared prefix" $LB $S --shared-prefix 0.5 -c 2 -n 8 --input-len 64 --output-len 16
step "speculation ngram k=4, 3 prompts checked, 32 tokens" $LB $S --speculative ngram:k=4 --prompts copy --check-speculation 3 -c 1 -n 3 --input-len 96 --output-len 32
step "speculation ngram k=10, 4 prompts checked, 96 tokens" $LB $S --speculative ngram:k=10 --prompts copy --check-speculation 4 -c 1 -n 4 --input-len 96 --output-len 96
step "capacity search" $LB $S --find-max-rate --slo ttft_s=1 --rate 2 --max-points 3 -n 8 --input-len 32 --output-len 16
# mistakes
step "mistake: a schema file that is not there" $LB $S --api chat --structured json-schema=nope.json -n 8
step "mistake: --tool-choice maybe" $LB $S --api chat --tools $TOOLS --tool-choice maybe -n 8
step "mistake: --max-error-rate 2" $LB $S --max-error-rate 2 -n 8
step "mistake: draft speculation on llama.cpp" $LB $S --speculative draft:smollm2-135m -n 8
step "mistake: a server argument the server refuses" $LB $S --server-arg=--no-such-flag -n 8
step "mistake: structured on the completions API" $LB $S --structured choice=yes,no -n 8
# a llama-cpp-python server started by hand: its interrupt_requests default, then off
PY=.venv/bin/python
GGUF=$($PY -c "from llmbench.models.sources import model_path; print(model_path('smollm2-135m', 'gguf'))")
for flag in "" "--interrupt_requests False"; do
  $PY -m llama_cpp.server --model "$GGUF" --host 127.0.0.1 --port 8931 --model_alias smollm2-135m $flag > $W/server.log 2>&1 &
  SP=$!
  for _ in $(seq 60); do curl -sf http://127.0.0.1:8931/v1/models >/dev/null && break; sleep 0.5; done
  step "by hand: llama-cpp-python server ${flag:-(defaults)}, choice at -c 2, 40 requests" $LB serve http://127.0.0.1:8931/v1 --model smollm2-135m --api chat --structured choice=yes,no --shape-opt dialect=json-object -c 2 -n 40 --input-len 32 --output-len 16 --results $R
  kill $SP; wait $SP 2>/dev/null
done
# offline
step "run: llama.cpp, two batch sizes" $LB run --backend llamacpp --model smollm2-135m --batch-size 1,4 --input-len 32 --output-len 32 --repeats 2 --results $R
step "run: --fidelity on two GGUF types" $LB run --backend llamacpp --model smollm2-135m --batch-size 1 --input-len 32 --output-len 32 --repeats 2 --fidelity 4 -B llamacpp.gguf_type=q8_0,q4_0 --results $R
# reading
step "results, default view" $LB results --results $R
step "results --columns request_shape_options (a mistake: a pointer)" $LB results --results $R --columns request_shape_options
step "report, default --out" $LB report --results $R --no-png
step "report again: the earlier report is replaced, and said so" $LB report --results $R --no-png
