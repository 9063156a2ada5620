"""A tiny chat model made here, for real servers in the tests: random weights, a byte-level BPE
tokenizer trained on local text, a chat template. Under 1 MB of safetensors; vLLM's CPU build
serves it in seconds. It answers nonsense, deterministically: the tests judge the harness
(greedy outputs that repeat, goldens, errors), never the model.

Run with a Python that has torch, transformers and tokenizers (the vLLM CPU venv):
    python -m tests.helpers.tiny_model OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# vLLM's CPU attention refuses a head size of 16 at the first request: 64 / 2 heads = 32.
CONFIG = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
    "vocab_size": 2048,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": True,
    # Wide random weights: greedy decoding then depends on the prompt (narrow ones repeat one
    # token for every prompt), so goldens and drift have something to tell apart.
    "initializer_range": 0.5,
}
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|user|>", "<|assistant|>", "<|system|>", "<|end|>"]
SEED = 1234


def corpus() -> list[str]:
    """Text to train the tokenizer on: this project's own docs and code (always here)."""
    root = Path(__file__).resolve().parents[2]
    files = sorted(root.glob("docs/*.md")) + sorted(root.glob("plugins/module_utils/arcops/**/*.py"))
    return [p.read_text(encoding="utf-8", errors="replace") for p in files]


def build(out: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=CONFIG["vocab_size"],
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus(), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|end|>", bos_token="<|endoftext|>", pad_token="<|endoftext|>"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    torch.manual_seed(SEED)
    config = LlamaConfig(
        **CONFIG,
        bos_token_id=fast.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=fast.convert_tokens_to_ids("<|end|>"),
        pad_token_id=fast.convert_tokens_to_ids("<|endoftext|>"),
        torch_dtype="float32",
    )
    LlamaForCausalLM(config).save_pretrained(out, safe_serialization=True)
    (out / "arcops-tiny-model.json").write_text(json.dumps({"seed": SEED, **CONFIG}, indent=2) + "\n")
    return out


if __name__ == "__main__":
    print(build(Path(sys.argv[1])))
