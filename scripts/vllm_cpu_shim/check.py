"""Check a .venv-vllm made by `bash scripts/setup.sh --vllm`; exit 1 with one line per problem.

- the metadata-only `vllm` distribution answers lm-eval's ``importlib.metadata.version("vllm")`` (0.32.0+cpu);
- ``import vllm`` resolves to vllm-cpu's package (the shim ships no modules);
- vLLM picks its CPU platform; transformers imports (no GPU torchvision left to break it);
- lm-eval's vLLM model class imports (its own version check passes).
"""

from __future__ import annotations

import importlib.metadata as md
import sys


def main() -> int:
    problems = []
    try:
        version = md.version("vllm")
        if not version.endswith("+cpu"):
            problems.append(f"importlib.metadata.version('vllm') = {version!r}, expected the shim's 0.32.0+cpu")
    except md.PackageNotFoundError:
        problems.append("no distribution named 'vllm' (install scripts/vllm_cpu_shim with --no-deps)")
    import vllm

    owner = [d.metadata["Name"] for d in md.distributions() if d.files
             and any(str(f).replace("\\", "/") == "vllm/__init__.py" for f in d.files)]
    if owner != ["vllm-cpu"]:
        problems.append(f"`import vllm` ({vllm.__file__}) is owned by {owner}, expected ['vllm-cpu']")
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        problems.append(f"vLLM chose platform {type(current_platform).__name__}, not its CPU platform")
    try:
        import transformers  # noqa: F401
        from transformers import AutoModelForCausalLM  # noqa: F401  (imports torchvision if present)
    except Exception as err:  # noqa: BLE001
        problems.append(f"transformers does not import: {type(err).__name__}: {err}")
    for gpu_only in ("torchvision", "torchaudio", "torchcodec"):
        try:
            md.version(gpu_only)
            problems.append(f"{gpu_only} is installed (a GPU build breaks transformers' imports): uninstall it")
        except md.PackageNotFoundError:
            pass
    try:
        from lm_eval.models.vllm_causallms import VLLM  # noqa: F401
    except Exception as err:  # noqa: BLE001
        problems.append(f"lm-eval's vLLM model does not import: {type(err).__name__}: {err}")
    for p in problems:
        print(f"setup --vllm: {p}", file=sys.stderr)
    if not problems:
        print(f"setup --vllm: vllm {version} (vllm-cpu {md.version('vllm-cpu')}), CPU platform, torch "
              f"{md.version('torch')}, transformers {md.version('transformers')}, lm-eval {md.version('lm_eval')}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
