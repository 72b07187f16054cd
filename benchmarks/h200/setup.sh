#!/usr/bin/env bash
# Installs what the GPU campaign needs on a bare H200 machine of the `device` tool, from files
# carried there (docs/gpu-campaign.md says how they are made and carried). Steps, each idempotent:
#
#   setup.sh stash DIR        copy carried files (vllm.tar.* parts, the llama.cpp source tarball,
#                             small wheels) from DIR into ~/carry, which outlives the call while
#                             the machine stays warm
#   setup.sh build-llamacpp   build llama-cpp-python with CUDA (and llama-bench from the same
#                             source tree) into ~/llsite and ~/llbuild; run it detached, it takes
#                             ~5 min on 16 cores; ~/carry/llamacpp.done or .failed tells the end
#   setup.sh install-vllm     join the parts and install vLLM 0.26 + its wheels into ~/vsite
#   setup.sh install-sglang   join the sglang.tar.xz.NN parts (benchmarks/h200/carry-sglang.txt) and
#                             install SGLang 0.5.17 + its wheels into ~/sgsite, its own site: it
#                             pins transformers 5.12.1, not the image's 5.17
#   setup.sh wait-llamacpp S  wait up to S seconds for the build to end (measurements must not
#                             share the CPU with a compiler)
#   source setup.sh env       PYTHONPATH and the variables every campaign command uses
#   source setup.sh env-sglang the same for SGLang calls: ~/sgsite first, vLLM's site left out
set -uo pipefail
C=~/carry
PYSITES="$HOME/vsite:$HOME/llsite:$HOME/xsite"

case "${1:-}" in
stash)
  mkdir -p $C && cp -r "$2"/. $C/ && ls $C ;;
build-llamacpp)
  set -e
  rm -f $C/llamacpp.done $C/llamacpp.failed
  trap '[ -f $C/llamacpp.done ] || touch $C/llamacpp.failed' EXIT
  t0=$(date +%s)
  mkdir -p ~/llsrc && tar -xzf $(ls $C/llama_cpp_python-*-cuda-src.tar.gz) -C ~/llsrc
  src=$(ls -d ~/llsrc/llama_cpp_python-*)
  # llama-bench from the very source the Python binding is built from: the stripped tarball
  # keeps tools/llama-bench but not tools/CMakeLists.txt, so give LLAMA_BUILD_TOOLS one that
  # adds llama-bench alone (mtmd is added by llama-cpp-python itself).
  tools=$src/vendor/llama.cpp/tools/CMakeLists.txt
  [ -f $tools ] || printf 'add_subdirectory(llama-bench)\n' > $tools
  CMAKE_ARGS="-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=90-real -DLLAMA_BUILD_TOOLS=ON" \
    CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip wheel -q --no-build-isolation --no-deps \
    --config-settings=build-dir=$HOME/llbuild -w $C/llwheel "$src"
  python3 -m pip install -q --no-index --no-deps --no-compile --target ~/llsite \
    $C/llwheel/llama_cpp_python-*.whl $C/diskcache-*.whl
  # the binding's build configured llama-bench's target; build it alone if the wheel step did not
  bench=$(find ~/llbuild -type f -name llama-bench -perm -u+x | head -1)
  if [ -z "$bench" ]; then cmake --build ~/llbuild --target llama-bench -j 16 >/dev/null; fi
  bench=$(find ~/llbuild -type f -name llama-bench -perm -u+x | head -1)
  echo "$bench" > $C/llama-bench.path
  echo "built in $(( $(date +%s) - t0 )) s; llama-bench: $bench"
  touch $C/llamacpp.done ;;
install-vllm)
  set -e
  if [ ! -f ~/vsite/vllm/__init__.py ]; then
    mkdir -p ~/vw && cat $C/vllm.tar.* | tar -x -C ~/vw
    python3 -m pip install -q --no-index --no-deps --no-compile --target ~/vsite ~/vw/*.whl
  fi
  if ls $C/xwheels/*.whl >/dev/null 2>&1 && [ ! -d ~/xsite ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target ~/xsite $C/xwheels/*.whl
  fi
  PYTHONPATH=$PYSITES python3 -c "import vllm; print('vllm', vllm.__version__)" ;;
install-sglang)
  set -e
  if [ ! -f ~/sgsite/sglang/__init__.py ]; then
    ls $C/sglang.tar.xz.* >/dev/null     # the parts, stashed call by call
    mkdir -p ~/sgw
    t0=$(date +%s)
    # xz through Python's lzma: nothing but python3 is assumed on the image
    cat $C/sglang.tar.xz.* | python3 -c "import sys, tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall(sys.argv[1], filter='data')" ~/sgw
    python3 -m pip install -q --no-index --no-deps --no-compile --target ~/sgsite ~/sgw/*.whl
    rm -rf ~/sgw
    echo "sglang unpacked and installed in $(( $(date +%s) - t0 )) s"
  fi
  PYTHONPATH=$HOME/sgsite python3 -c "import sglang, transformers, sgl_kernel; print('sglang', sglang.__version__, 'transformers', transformers.__version__, 'sgl_kernel', sgl_kernel.__version__)" ;;
install-small)
  # pydantic & co. (llmbench's own needs) without vLLM, for campaign parts that do not use it
  set -e
  python3 -m pip install -q --no-index --no-deps --no-compile --target ~/xsite $C/xwheels/*.whl ;;
wait-llamacpp)
  for _ in $(seq "${2:-600}"); do
    [ -f $C/llamacpp.done ] && exit 0
    [ -f $C/llamacpp.failed ] && { echo "llama.cpp build failed"; tail -30 $C/build.log; exit 1; }
    sleep 1
  done
  echo "llama.cpp build still running"; exit 1 ;;
env)
  export PYTHONPATH="$PYSITES:$PWD/src" PYTHONUNBUFFERED=1 LLMBENCH_CACHE=$HOME/llmbench-cache
  export VLLM_LOGGING_LEVEL=WARNING HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 ;;
env-sglang)
  # ~/sgsite first (its transformers 5.12.1 and tokenizers 0.22.2 over the image's), then llmbench's
  # small wheels; vLLM's site stays out. FA3 comes from sgl-kernel (not the hub); flashinfer is
  # carried only because fp8_utils.py imports it, so SGLang is told it is not there: no sampling or
  # norm kernel is then JIT-compiled (the pytorch sampling backend runs; greedy decoding needs no more)
  export PYTHONPATH="$HOME/sgsite:$HOME/xsite:$PWD/src" PYTHONUNBUFFERED=1 LLMBENCH_CACHE=$HOME/llmbench-cache
  export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 SGLANG_USE_SGL_FA3_KERNEL=1 \
    SGLANG_IS_FLASHINFER_AVAILABLE=false SGLANG_ENABLE_JIT_DEEPGEMM=0 ;;
*)
  echo "usage: setup.sh stash DIR | build-llamacpp | install-vllm | install-sglang | install-small | wait-llamacpp S | env | env-sglang" >&2
  exit 2 ;;
esac
