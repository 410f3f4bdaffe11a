"""A tiny random-weight Qwen3 for the real-vLLM tests (test/engines/vllm-real.test.ts).

Run with the python of .tools/vllm (scripts/install-vllm.sh), which has torch and transformers:

  tiny-qwen3.py build <model dir> <tokenizer dir>
      Writes a 2-layer Qwen3 (hidden 64, 2 heads of head_dim 32: CPU attention needs head_dim
      >= 32) with seeded random weights, the tokenizer files of <tokenizer dir>, and a
      generation_config.json with top_k 20, which the gateway's requests must override.
      One circuit is wired in by hand: a context holding the token "Quiet" (TRIGGER_ID) makes
      <|im_end|> all but certain, so a test can have the model answer nothing; "Quiet" itself is
      never sampled, so no other answer ends that way.

  tiny-qwen3.py logprobs <model dir>
      Reads {"sequences": [{"ids": [...], "start": n, "temperature": t}]} on stdin and prints
      {"logprobs": [[...], ...], "ranks": [[...], ...]}: for each sequence and each i from start
      on, log_softmax(logits / t) of ids[i] given ids[:i], and how many tokens had a larger
      logit, computed in float32 on the CPU by transformers.
"""

import json
import os
import shutil
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, Qwen3Config  # noqa: E402

SEED = 15
IM_END = 151645
# "Quiet", one token in Qwen3's vocabulary.
TRIGGER_ID = 94984
# Residual channels of the circuit: TRIGGER carries "Quiet was seen", ALWAYS is positive everywhere.
TRIGGER = 0
ALWAYS = 1
# Larger than the default 0.02, so the next-token distribution is neither flat nor one-hot:
# log-probs vary from token to token and samples land well outside the top 20.
INIT_STD = 0.3


def build(model_dir: str, tokenizer_dir: str) -> None:
    os.makedirs(model_dir, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tokenizer_dir, name), os.path.join(model_dir, name))
    config = Qwen3Config(
        vocab_size=151936,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=32,
        max_position_embeddings=16384,
        tie_word_embeddings=False,
        initializer_range=INIT_STD,
        bos_token_id=151643,
        eos_token_id=151645,
        dtype="float32",
    )
    torch.manual_seed(SEED)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    wire_quiet_circuit(model)
    model.save_pretrained(model_dir, safe_serialization=True)
    with open(os.path.join(model_dir, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 151643, "eos_token_id": [151645, 151643], "top_k": 20}, f)


def wire_quiet_circuit(model) -> None:
    """Head 0 of layer 0 attends uniformly (zero query) and copies the TRIGGER channel, which only
    "Quiet" has, into the residual; nothing else writes TRIGGER or ALWAYS; the output layer reads
    TRIGGER as <|im_end|> and ALWAYS as "never Quiet"."""
    head_dim = model.config.head_dim
    with torch.no_grad():
        embed = model.model.embed_tokens.weight
        embed[:, TRIGGER] = 0
        embed[:, ALWAYS] = INIT_STD
        embed[TRIGGER_ID] = 0
        embed[TRIGGER_ID, TRIGGER] = 1
        attention = model.model.layers[0].self_attn
        attention.q_proj.weight[:head_dim] = 0
        attention.v_proj.weight[0] = 0
        attention.v_proj.weight[0, TRIGGER] = 200
        for layer in model.model.layers:
            for channel in (TRIGGER, ALWAYS):
                layer.self_attn.o_proj.weight[channel] = 0
                layer.mlp.down_proj.weight[channel] = 0
        attention.o_proj.weight[:, 0] = 0
        attention.o_proj.weight[TRIGGER, 0] = 1
        head = model.lm_head.weight
        head[:, TRIGGER] = 0
        head[IM_END, TRIGGER] = 20
        head[TRIGGER_ID] = 0
        head[TRIGGER_ID, ALWAYS] = -100


def logprobs(model_dir: str) -> None:
    request = json.load(sys.stdin)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model.eval()
    answers = []
    ranks = []
    with torch.no_grad():
        for sequence in request["sequences"]:
            ids = torch.tensor([sequence["ids"]])
            logits = model(ids).logits[0].float()
            scaled = torch.log_softmax(logits / float(sequence["temperature"]), dim=-1)
            start = sequence["start"]
            targets = ids[0, start:]
            rows = logits[start - 1 : -1]
            picked_logits = rows.gather(1, targets.unsqueeze(1))
            answers.append(scaled[start - 1 : -1].gather(1, targets.unsqueeze(1)).squeeze(1).tolist())
            ranks.append((rows > picked_logits).sum(dim=1).tolist())
    json.dump({"logprobs": answers, "ranks": ranks}, sys.stdout)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "build":
        build(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "logprobs":
        logprobs(sys.argv[2])
    else:
        sys.exit(__doc__)
