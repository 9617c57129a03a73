"""Generation for the critic tasks: lm-eval's ``vllm`` model (vLLM's CPU build) vs its ``hf`` model, same machine.

    python benchmarks/vllm_vs_hf.py                       # critic_feedback,critic_meta on our sample, 64 tokens
    python benchmarks/vllm_vs_hf.py --tasks critic --max_gen_toks 128 --hf_batch_size 8

Both sides run the README's command as a subprocess on the same model (SmolLM2-135M-Instruct as a Hugging Face
folder, float32, greedy), the same tasks, the same generation budget and the chat template:

* vLLM: ``.venv-vllm/bin/lm_eval --model vllm --batch_size auto`` (``bash scripts/setup.sh --vllm``), with the CPU
  settings of the README (fixed KV cache, ``enforce_eager=True``; threads as vLLM binds them, or ``--omp_bind``);
* HF: ``lm_eval --model hf --batch_size N`` from this environment (``--batch_size auto`` never starts on a CPU).

Wall time is the whole command (start-up, model load, generation, scoring), printed side by side with the ratio
HF / vLLM, and how many generations are identical (greedy float32 on both: they should all be). On a shared
machine, run it when the machine is otherwise idle.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV = Path(os.environ.get("CRITIC_VLLM_VENV", REPO / ".venv-vllm"))


def run(cmd: list[str], out: Path, env: dict) -> tuple[float, dict, dict[str, str]]:
    start = time.perf_counter()
    proc = subprocess.run(cmd + ["--log_samples", "--output_path", str(out)], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"vllm_vs_hf: {cmd[0]} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    (results,) = folder.glob("results_*.json")
    generations = {}
    for path in folder.glob("samples_*.jsonl"):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            generations[f"{path.name.rsplit('_', 1)[0]}/{row['doc_id']}"] = row["resps"][0][0]
    return seconds, json.loads(results.read_text())["results"], generations


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="critic_feedback,critic_meta")
    parser.add_argument("--max_gen_toks", type=int, default=64)
    parser.add_argument("--hf_batch_size", default="8")
    parser.add_argument("--omp_bind", default=None, help="VLLM_CPU_OMP_THREADS_BIND for vLLM, e.g. 0-1")
    parser.add_argument("--model", default=str(VENV / "smollm2-hf"), help="a Hugging Face model folder")
    args = parser.parse_args()
    if not (VENV / "bin" / "lm_eval").exists():
        sys.exit(f"vllm_vs_hf: no vLLM environment at {VENV} (bash scripts/setup.sh --vllm)")
    if not (Path(args.model) / "config.json").exists():
        sys.exit(f"vllm_vs_hf: {args.model} is not a model folder (python scripts/smollm2_hf.py DIR)")
    lm_eval_here = shutil.which("lm_eval", path=str(Path(sys.executable).parent)) or "lm_eval"
    tasks_dir = str(REPO / "critic_tasks" / "adapters" / "lm_eval" / "tasks")
    common = ["--include_path", tasks_dir, "--tasks", args.tasks, "--apply_chat_template",
              "--gen_kwargs", f"max_gen_toks={args.max_gen_toks}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "CRITICBENCH_DATA_DIR": os.environ.get("CRITICBENCH_DATA_DIR", "sample"),
           "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}  # this checkout's tasks
    vllm_env = {**env, **({"VLLM_CPU_OMP_THREADS_BIND": args.omp_bind} if args.omp_bind else {})}
    with tempfile.TemporaryDirectory() as tmp:
        print(f"vLLM: {args.tasks}, {args.max_gen_toks} tokens ...", flush=True)
        v_s, v_res, v_gen = run([str(VENV / "bin" / "lm_eval"), *common, "--model", "vllm", "--batch_size", "auto",
                                 "--model_args", f"pretrained={args.model},dtype=float32,enforce_eager=True,"
                                 "kv_cache_memory_bytes=2147483648,max_model_len=4096"], Path(tmp) / "vllm", vllm_env)
        print(f"HF: {args.tasks}, {args.max_gen_toks} tokens, batch size {args.hf_batch_size} ...", flush=True)
        h_s, h_res, h_gen = run([lm_eval_here, *common, "--model", "hf", "--batch_size", args.hf_batch_size,
                                 "--device", "cpu", "--model_args", f"pretrained={args.model},dtype=float32"],
                                Path(tmp) / "hf", env)
    n = len(v_gen)
    same = sum(v_gen.get(k) == h for k, h in h_gen.items())
    print(f"\n{'':28}{'vLLM (CPU)':>14}{'HF':>14}")
    print(f"{'wall time, s':28}{v_s:14.1f}{h_s:14.1f}")
    print(f"{'generations':28}{n:14d}{len(h_gen):14d}")
    print(f"{'s per generation':28}{v_s / n:14.2f}{h_s / max(len(h_gen), 1):14.2f}")
    print(f"{'ratio HF / vLLM':28}{'1.00':>14}{h_s / v_s:14.2f}")
    for task in sorted(v_res):
        for key in ("score,none", "parse_rate,none"):
            if key in v_res[task] and key in h_res.get(task, {}):
                print(f"{task + ' ' + key.split(',')[0]:28}{v_res[task][key]:14.2f}{h_res[task][key]:14.2f}")
    print(f"\nidentical generations: {same}/{n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
