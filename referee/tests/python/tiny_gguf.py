"""Writes a tiny llama-architecture GGUF model (random weights, seeded; a
SentencePiece vocabulary of byte tokens and a few words) with the `gguf`
package, for llama.cpp's OpenAI-compatible server to load in the tests. Its
answers are gibberish, made by a real inference engine: what the gateway
meters is what came back. Usage: tiny_gguf.py OUT.gguf"""
import sys
import numpy as np
import gguf

out = sys.argv[1]
rng = np.random.default_rng(7)
n_embd, n_head, n_ff, n_layer, n_ctx = 64, 4, 128, 1, 512
tokens, scores, types = [], [], []
for text, kind in [("<unk>", 2), ("<s>", 3), ("</s>", 3)]:
    tokens.append(text.encode()); scores.append(0.0); types.append(kind)
for byte in range(256):
    tokens.append(f"<0x{byte:02X}>".encode()); scores.append(0.0); types.append(6)
for word in ["▁JAB", "▁HEAVY", "▁BLOCK", "▁DODGE", "▁FEINT", "▁RECOVER", "▁the", "▁a", "."]:
    tokens.append(word.encode()); scores.append(-1.0); types.append(1)
n_vocab = len(tokens)
w = gguf.GGUFWriter(out, "llama")
w.add_name("duel-tiny")
w.add_context_length(n_ctx)
w.add_embedding_length(n_embd)
w.add_block_count(n_layer)
w.add_feed_forward_length(n_ff)
w.add_head_count(n_head)
w.add_head_count_kv(n_head)
w.add_rope_dimension_count(n_embd // n_head)
w.add_layer_norm_rms_eps(1e-5)
w.add_file_type(0)
w.add_tokenizer_model("llama")
w.add_token_list(tokens)
w.add_token_scores(scores)
w.add_token_types(types)
w.add_bos_token_id(1)
w.add_eos_token_id(2)
w.add_unk_token_id(0)
def t(name, *shape):
    w.add_tensor(name, (rng.standard_normal(shape) * 0.1).astype(np.float32))
t("token_embd.weight", n_vocab, n_embd)
w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
t("output.weight", n_vocab, n_embd)
for i in range(n_layer):
    w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
    t(f"blk.{i}.attn_q.weight", n_embd, n_embd)
    t(f"blk.{i}.attn_k.weight", n_embd, n_embd)
    t(f"blk.{i}.attn_v.weight", n_embd, n_embd)
    t(f"blk.{i}.attn_output.weight", n_embd, n_embd)
    w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
    t(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
    t(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
    t(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(out, n_vocab)
