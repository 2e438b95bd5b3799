"""A toy causal LM for GRPO tests: a tiny random Gemma-3 network and a digit-only tokenizer.

The tokenizer keeps only the digits of a prompt (everything else is dropped), so the network
sees the menu numbers and counts in order, prompts stay short (about a hundred tokens), and it
can only write a digit or a special token: a few of its first outputs already name a valid menu
entry, which gives GRPO a signal to amplify within minutes on two CPU cores.
"""

from __future__ import annotations

from pathlib import Path

SPECIALS = ["<pad>", "<eos>", "<unk>", "<bos>"]


def make_toy_model(root: Path, seed: int = 0) -> Path:
    """Write the toy model and tokenizer to ``root`` (a directory transformers can load)."""
    import torch
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate([*SPECIALS, *"0123456789"])}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.normalizer = normalizers.Replace(Regex(r"[^0-9]+"), " ")  # words carry no signal here
    tk.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True)])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>",
                                  unk_token="<unk>", bos_token="<bos>")
    torch.manual_seed(seed)
    cfg = Gemma3TextConfig(vocab_size=len(vocab), hidden_size=64, intermediate_size=128,
                           num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                           head_dim=16, max_position_embeddings=4096, sliding_window=512,
                           pad_token_id=0, eos_token_id=1, bos_token_id=3,
                           # After the final norm, a logit is at most |embedding| * sqrt(d):
                           # the default scale (0.02) caps it near 1, and LoRA on attention
                           # cannot grow it; 0.05 starts near-uniform (logit s.d. ~0.4) and
                           # leaves room for a confident policy (logits up to ~3).
                           initializer_range=0.05)
    model = Gemma3ForCausalLM(cfg)
    model.save_pretrained(root)
    tok.save_pretrained(root)
    return root
