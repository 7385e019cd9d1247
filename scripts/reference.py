#!/usr/bin/python3
"""reference.py: the PyTorch reference of nmt's model (docs/model.md).

Owns four modes (see docs/reference.md):

  fixtures  writes tests/fixtures/reference/*.json: for several tiny models
            (float64, explicit per-step code, no nn.LSTM) the weights, one
            padded batch, the logits, the loss, every gradient (by
            torch.autograd) and the losses of 5 Adam steps. The C model
            must reproduce them.
  check     validates this reference: explicit LSTM against nn.LSTM
            (packed, so padding carry and the backward start are checked),
            the layer-normalised LSTM (model.layer_norm) against a loop
            over F.layer_norm,
            the loss against F.cross_entropy, a padded batch against its
            sentences run one by one, torch.autograd.gradcheck, local-p
            gradients reaching attn_Wp/attn_vp, and (if present) that the
            committed fixtures are what this script computes.
  bench     trains a float32 PyTorch model of the given sizes (nn.LSTM,
            Luong general global attention, input feeding, label smoothing
            0.1, dropout 0.3, Adam) and prints tokens/s, peak RSS, threads
            and BLAS; --decode also times batched beam search.
  decode    loads an nmt checkpoint (weights, config, SentencePiece models)
            into that model and translates a file with nmt translate's
            batching, greedy decoding and batched beam search, step for step
            (src/model/beam_search.c, src/model/seq2seq_decode.c), timing
            the decoding (scripts/bench-decode.sh).

Run it with the Debian Python that has torch:  /usr/bin/python3 scripts/reference.py ...
"""

import argparse
import json
import math
import os
import re
import resource
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

PAD, UNK, BOS, EOS = 0, 1, 2, 3
FORMAT, VERSION = "nmt-reference", 1
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_DIR = os.path.join(ROOT, "tests", "fixtures", "reference")


# ----------------------------------------------------------------------------
# Sizes (docs/model.md "Sizes and notation")
# ----------------------------------------------------------------------------

class Dims:
    """Model sizes resolved from a nested nmt config and the vocabularies."""

    def __init__(self, cfg, V_s, V_t):
        m = cfg["model"]
        a = m.get("attention", {})
        self.V_s, self.V_t = V_s, V_t
        self.E = m["emb_dim"]
        self.H = m["hidden"]
        self.K = m.get("enc_hidden", 0) or self.H
        self.bidirectional = m.get("bidirectional", True)
        if self.bidirectional and self.K % 2:
            raise ValueError("model.bidirectional: enc_hidden must be even")
        self.D_e = self.K // 2 if self.bidirectional else self.K
        self.L_e = m.get("enc_layers", 2)
        self.L_d = m.get("dec_layers", 2)
        self.style = a.get("style", "luong")
        score = a.get("score", "general")
        if score == "auto":
            score = "dot" if self.H == self.K else "additive"
        self.score = "additive" if score == "concat" else score
        self.mode = a.get("mode", "global")
        self.window = a.get("window", 10)
        self.heads = a.get("heads", 1)
        self.A = self.H
        self.input_feed = m.get("input_feed", True) and self.style == "luong"
        self.tie = m.get("tie_embeddings", False)
        if self.tie and self.E != self.H:
            raise ValueError("model.tie_embeddings: needs emb_dim == hidden")
        self.bridge = m.get("bridge", "learned")
        self.residual = m.get("residual", False)   # layers above the first: out = h + input
        self.layer_norm = m.get("layer_norm", False)   # every LSTM: LN of both gate products
        self.eps = cfg.get("train", {}).get("label_smoothing", 0.1)
        if self.style != "none" and self.score in ("dot", "scaled_dot"):
            if self.heads == 1 and self.H != self.K:
                raise ValueError("dot scores need hidden == enc_hidden")
            if self.H % self.heads:
                raise ValueError("model.attention.heads must divide hidden")
        self.dh = self.H // self.heads
        self.dec_in = self.E + (self.H if self.input_feed else 0) + \
            (self.K if self.style == "bahdanau" else 0)
        self.wc_in = self.H + self.K + self.E if self.style == "bahdanau" else self.K + self.H


def param_shapes(d):
    """[(name, shape)] in the order of docs/model.md's table, as the C code
    (src/model/params.c) lists them: enc0_bwd_* right after enc0_fwd_*; with
    model.layer_norm each LSTM's gains _ln_ih, _ln_hh right after its _b."""
    out = [("src_emb", (d.V_s, d.E)), ("tgt_emb", (d.V_t, d.E))]

    def lstm(prefix, inp, size):
        out.extend([(prefix + "_W_ih", (4 * size, inp)),
                    (prefix + "_W_hh", (4 * size, size)),
                    (prefix + "_b", (4 * size,))])
        if d.layer_norm:
            out.extend([(prefix + "_ln_ih", (4 * size,)), (prefix + "_ln_hh", (4 * size,))])

    for l in range(d.L_e):
        lstm("enc%d_fwd" % l, d.E if l == 0 else d.K, d.D_e if l == 0 else d.K)
        if l == 0 and d.bidirectional:
            lstm("enc0_bwd", d.E, d.D_e)
    for l in range(d.L_d):
        lstm("dec%d" % l, d.dec_in if l == 0 else d.H, d.H)
    if d.bridge == "learned":
        out.extend([("bridge_h_W", (d.L_d * d.H, d.K)), ("bridge_h_b", (d.L_d * d.H,)),
                    ("bridge_c_W", (d.L_d * d.H, d.K)), ("bridge_c_b", (d.L_d * d.H,))])
    if d.style != "none":
        n = d.heads
        if d.score in ("dot", "scaled_dot"):
            if n > 1:
                out.extend([("attn_Wq", (n, d.dh, d.H)), ("attn_Wk", (n, d.dh, d.K))])
        elif d.score == "general":
            out.append(("attn_Wa", (n, d.H, d.K)))
        else:
            out.extend([("attn_W1", (n, d.A, d.H)), ("attn_W2", (n, d.A, d.K)),
                        ("attn_v", (n, d.A))])
        if n > 1:
            out.append(("attn_Wo", (d.K, n * d.K)))
        if d.mode == "local-p":
            out.extend([("attn_Wp", (d.H, d.H)), ("attn_vp", (d.H,))])
        out.append(("out_Wc", (d.H, d.wc_in)))
    if not d.tie:
        out.append(("out_W", (d.V_t, d.H)))
    out.append(("out_b", (d.V_t,)))
    return out


# ----------------------------------------------------------------------------
# The model, explicit per-step code (reference mode, any dtype)
# ----------------------------------------------------------------------------

LN_EPS = 1e-5


def layer_norm(v, g):
    """model.layer_norm: each row of v (..., 4D) normalised over all its 4D
    values at once (the four gates together), biased variance, times the gain
    g (4D,); no bias (the LSTM's b follows)."""
    mu = v.mean(dim=-1, keepdim=True)
    var = ((v - mu) ** 2).mean(dim=-1, keepdim=True)
    return g * (v - mu) / torch.sqrt(var + LN_EPS)


def lstm_weights(d, P, prefix):
    """(W_ih, W_hh, b, g_ih, g_hh) of one LSTM; the gains are None without
    model.layer_norm."""
    ln = d.layer_norm
    return (P[prefix + "_W_ih"], P[prefix + "_W_hh"], P[prefix + "_b"],
            P[prefix + "_ln_ih"] if ln else None, P[prefix + "_ln_hh"] if ln else None)


def lstm_input(x, W_ih, b, g_ih=None):
    """The input part of the gate pre-activations: W_ih x + b, or with layer
    normalisation LN(W_ih x; g_ih) + b."""
    v = x @ W_ih.t()
    return (v if g_ih is None else layer_norm(v, g_ih)) + b


def lstm_cell(x_proj, h, c, W_hh, g_hh=None):
    """One step; x_proj = lstm_input(x, ...) precomputed. Gate order i, f, g, o.
    With layer normalisation (g_hh given) the recurrent product is LN(W_hh h; g_hh)."""
    v = h @ W_hh.t()
    z = x_proj + (v if g_hh is None else layer_norm(v, g_hh))
    i, f, g, o = z.chunk(4, dim=1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    h_new = torch.sigmoid(o) * torch.tanh(c_new)
    return h_new, c_new


def lstm_layer(x, lens, W_ih, W_hh, b, g_ih=None, g_hh=None, reverse=False):
    """x (S, B, in), lens (B,) long. Returns outputs (S, B, D) and the final
    (h, c) (B, D). Steps t >= lens[b] carry the state unchanged; the reverse
    direction starts from zeros at each sentence's own last token, and its
    outputs at padded positions are the (zero) carried state. g_ih, g_hh:
    the layer-norm gains (model.layer_norm), or None."""
    S, B, _ = x.shape
    D = W_hh.shape[1]
    h = x.new_zeros(B, D)
    c = x.new_zeros(B, D)
    xp = lstm_input(x, W_ih, b, g_ih)
    outs = [None] * S
    for t in (range(S - 1, -1, -1) if reverse else range(S)):
        hn, cn = lstm_cell(xp[t], h, c, W_hh, g_hh)
        m = (t < lens).unsqueeze(1)
        h = torch.where(m, hn, h)
        c = torch.where(m, cn, c)
        outs[t] = h
    return torch.stack(outs), h, c


def encode(d, P, src, src_len):
    """src (S, B). Returns keys (S, B, K) and the bridge inputs h_fin, c_fin (B, K)."""
    x = P["src_emb"][src]
    out, h, c = lstm_layer(x, src_len, *lstm_weights(d, P, "enc0_fwd"))
    if d.bidirectional:
        ob, hb, cb = lstm_layer(x, src_len, *lstm_weights(d, P, "enc0_bwd"), reverse=True)
        out = torch.cat([out, ob], dim=2)
        h = torch.cat([h, hb], dim=1)
        c = torch.cat([c, cb], dim=1)
    for l in range(1, d.L_e):
        p = "enc%d_fwd" % l
        below = out
        out, h, c = lstm_layer(out, src_len, *lstm_weights(d, P, p))
        if d.residual:          # the output, not the state h, gains the input
            out = out + below
    return out, h, c


LOCAL_P_MARGINS = None  # check mode: a list collecting min | |s - p| - W | per step


def attention(d, P, q, keys, src_len, t):
    """q (B, H) query, keys (B, S, K), t the 0-based target step. Returns the
    context (B, K) and the weights (n, B, S)."""
    B, S, _ = keys.shape
    pos = torch.arange(S, dtype=keys.dtype)
    valid = pos.unsqueeze(0) < src_len.unsqueeze(1).to(keys.dtype)          # (B, S)
    gauss = None
    if d.mode == "global":
        allowed = valid
    elif d.mode == "local-m":
        p = torch.clamp(src_len - 1, max=t).to(keys.dtype)                     # min(t, S_b - 1)
        allowed = valid & ((pos.unsqueeze(0) - p.unsqueeze(1)).abs() <= d.window)
    elif d.mode == "local-p":
        p = src_len.to(keys.dtype) * torch.sigmoid(torch.tanh(q @ P["attn_Wp"].t()) @ P["attn_vp"])
        dist = (pos.unsqueeze(0) - p.detach().unsqueeze(1)).abs()
        allowed = valid & (dist <= d.window)
        if LOCAL_P_MARGINS is not None:  # how far the window edge is from a position
            LOCAL_P_MARGINS.append((dist - d.window).abs()[valid].min().item())
        sigma = d.window / 2.0
        gauss = torch.exp(-(pos.unsqueeze(0) - p.unsqueeze(1)) ** 2 / (2 * sigma * sigma))
    else:
        raise ValueError("unknown attention mode " + d.mode)
    ctxs, weights = [], []
    for j in range(d.heads):
        if d.score in ("dot", "scaled_dot"):
            if d.heads == 1:
                e = torch.einsum("bsk,bk->bs", keys, q)
                scale = d.K
            else:
                qj = q @ P["attn_Wq"][j].t()                                    # (B, H/n)
                kj = keys @ P["attn_Wk"][j].t()                                 # (B, S, H/n)
                e = torch.einsum("bsk,bk->bs", kj, qj)
                scale = d.dh
            if d.score == "scaled_dot":
                e = e / math.sqrt(scale)
        elif d.score == "general":
            e = torch.einsum("bsh,bh->bs", keys @ P["attn_Wa"][j].t(), q)
        else:  # additive / concat
            u = torch.tanh((q @ P["attn_W1"][j].t()).unsqueeze(1) + keys @ P["attn_W2"][j].t())
            e = u @ P["attn_v"][j]
        a = torch.softmax(e.masked_fill(~allowed, float("-inf")), dim=1)
        if gauss is not None:
            a = a * gauss
        weights.append(a)
        ctxs.append(torch.einsum("bs,bsk->bk", a, keys))
    c = ctxs[0] if d.heads == 1 else torch.cat(ctxs, dim=1) @ P["attn_Wo"].t()
    return c, torch.stack(weights)


def forward(d, P, src, src_len, tgt_in):
    """Returns logits (T, B, V_t). Every decoder step runs on its input token,
    pad steps included (their logits are not part of the loss)."""
    keys, h_fin, c_fin = encode(d, P, src, src_len)
    keys = keys.transpose(0, 1)                                                 # (B, S, K)
    B = src.shape[1]
    H = d.H
    if d.bridge == "learned":
        hb = torch.tanh(h_fin @ P["bridge_h_W"].t() + P["bridge_h_b"])
        cb = c_fin @ P["bridge_c_W"].t() + P["bridge_c_b"]
        h = [hb[:, l * H:(l + 1) * H] for l in range(d.L_d)]
        c = [cb[:, l * H:(l + 1) * H] for l in range(d.L_d)]
    else:
        h = [keys.new_zeros(B, H) for _ in range(d.L_d)]
        c = [keys.new_zeros(B, H) for _ in range(d.L_d)]
    hh = keys.new_zeros(B, H)
    out_W = P["tgt_emb"] if d.tie else P["out_W"]

    def stack(inp):
        """Runs the layers on inp; returns the top output (with model.residual,
        layers above the first add their input to their state h)."""
        for l in range(d.L_d):
            W_ih, W_hh, b, g_ih, g_hh = lstm_weights(d, P, "dec%d" % l)
            h[l], c[l] = lstm_cell(lstm_input(inp, W_ih, b, g_ih), h[l], c[l], W_hh, g_hh)
            inp = h[l] + inp if d.residual and l > 0 else h[l]
        return inp

    logits = []
    top = h[-1]       # the top output before step 0: the start state
    for t in range(tgt_in.shape[0]):
        w = P["tgt_emb"][tgt_in[t]]
        if d.style == "luong":
            top = stack(torch.cat([w, hh], dim=1) if d.input_feed else w)
            ctx, _ = attention(d, P, top, keys, src_len, t)
            hh = torch.tanh(torch.cat([ctx, top], dim=1) @ P["out_Wc"].t())
        elif d.style == "bahdanau":
            ctx, _ = attention(d, P, top, keys, src_len, t)                      # query s_{t-1}
            top = stack(torch.cat([w, ctx], dim=1))
            hh = torch.tanh(torch.cat([top, ctx, w], dim=1) @ P["out_Wc"].t())
        else:
            top = stack(w)
            hh = top
        logits.append(hh @ out_W.t() + P["out_b"])
    return torch.stack(logits)


def loss_of(d, logits, tgt_out):
    """Label-smoothed cross-entropy over non-pad targets, as docs/model.md.
    Returns (loss, nll_sum, n_tokens)."""
    logp = torch.log_softmax(logits, dim=2)
    nll = -logp.gather(2, tgt_out.unsqueeze(2)).squeeze(2)                    # (T, B)
    smooth = -logp.mean(dim=2)
    mask = (tgt_out != PAD).to(logits.dtype)
    n = int((tgt_out != PAD).sum())
    per = (1.0 - d.eps) * nll + d.eps * smooth
    return (per * mask).sum() / n, (nll * mask).sum(), n


# ----------------------------------------------------------------------------
# Fixtures
# ----------------------------------------------------------------------------

def make_config(emb, hidden, enc_hidden, enc_layers, dec_layers, bidirectional, input_feed,
                tie, bridge, style, score, mode, window, heads, label_smoothing, lr=0.01,
                residual=False, layer_norm=False):
    model_extra = {"residual": True} if residual else {}
    if layer_norm:                  # absent when off: the older fixtures' bytes stay
        model_extra["layer_norm"] = True
    return {
        "model": {"emb_dim": emb, "hidden": hidden, "enc_hidden": enc_hidden,
                  "enc_layers": enc_layers, "dec_layers": dec_layers, **model_extra,
                  "bidirectional": bidirectional, "input_feed": input_feed,
                  "tie_embeddings": tie, "bridge": bridge, "dropout": 0.0,
                  "attention": {"style": style, "score": score, "mode": mode,
                                "window": window, "heads": heads, "dropout": 0.0}},
        "train": {"label_smoothing": label_smoothing, "optimizer": "adam", "lr": lr,
                  "adam_beta1": 0.9, "adam_beta2": 0.999, "adam_eps": 1e-8,
                  "clip_norm": 0.0, "warmup_steps": 0},
    }


# name -> (config, seed). E=6, H=8 unless a config needs otherwise.
FIXTURES = {
    "a_luong_general_global": (make_config(
        6, 8, 8, 2, 2, True, True, False, "learned", "luong", "general", "global", 2, 1, 0.1), 101),
    "b_bahdanau_additive_global": (make_config(
        6, 8, 6, 1, 1, True, False, False, "learned", "bahdanau", "additive", "global", 2, 1, 0.1), 102),
    "c_luong_dot_localp": (make_config(
        6, 8, 8, 1, 1, True, True, False, "learned", "luong", "dot", "local-p", 2, 1, 0.1), 403),
    "d_luong_scaled_dot_localm_heads2": (make_config(
        6, 8, 8, 1, 2, True, False, False, "zero", "luong", "scaled_dot", "local-m", 2, 2, 0.1), 104),
    "e_luong_additive_heads2_tied": (make_config(
        8, 8, 10, 1, 1, True, True, True, "learned", "luong", "additive", "global", 2, 2, 0.1), 105),
    "f_none": (make_config(
        6, 8, 6, 2, 1, False, False, False, "learned", "none", "general", "global", 2, 1, 0.1), 106),
    "g_bahdanau_general_localp_heads2": (make_config(
        6, 8, 6, 2, 2, False, False, False, "learned", "bahdanau", "general", "local-p", 2, 2, 0.0), 507),
    "h_luong_concat_localm": (make_config(
        6, 8, 10, 1, 1, False, False, False, "learned", "luong", "concat", "local-m", 1, 1, 0.2), 108),
    "i_luong_dot_heads2_bidir2": (make_config(
        6, 8, 8, 2, 1, True, True, False, "learned", "luong", "dot", "global", 2, 2, 0.1), 109),
    "j_luong_general_residual3": (make_config(
        6, 8, 8, 3, 3, True, True, False, "learned", "luong", "general", "global", 2, 1, 0.1,
        residual=True), 110),
    "k_bahdanau_additive_residual": (make_config(
        6, 8, 6, 2, 2, False, False, False, "learned", "bahdanau", "additive", "global", 2, 1, 0.1,
        residual=True), 111),
    "l_none_residual": (make_config(
        6, 8, 6, 2, 3, True, False, False, "learned", "none", "general", "global", 2, 1, 0.1,
        residual=True), 112),
    "m_luong_general_ln_bidir2": (make_config(
        6, 10, 6, 2, 2, True, True, False, "learned", "luong", "general", "global", 2, 1, 0.1,
        layer_norm=True), 113),
    "n_bahdanau_additive_ln_residual3": (make_config(
        6, 8, 6, 3, 2, True, False, False, "learned", "bahdanau", "additive", "global", 2, 1, 0.1,
        residual=True, layer_norm=True), 114),
    "o_luong_additive_localp_heads2_ln": (make_config(
        5, 7, 8, 1, 1, True, False, False, "zero", "luong", "additive", "local-p", 2, 2, 0.1,
        layer_norm=True), 1215),
}

FIX_V_S, FIX_V_T = 13, 11
FIX_SRC_LEN = [5, 2, 4]   # S = 5; sentence 1 is shorter than its target (local-m clamps)
FIX_TGT_LEN = [3, 4, 2]   # T = 4, counting EOS; the longest source has neither longest target
ADAM_STEPS = 5


def make_batch(rng, V_s, V_t, src_len, tgt_len):
    """Time-major int64 arrays: src (S, B), tgt_in and tgt_out (T, B)."""
    B, S, T = len(src_len), max(src_len), max(tgt_len)
    src = np.zeros((S, B), dtype=np.int64)
    tgt_in = np.zeros((T, B), dtype=np.int64)
    tgt_out = np.zeros((T, B), dtype=np.int64)
    for b in range(B):
        toks = rng.integers(4, V_s, size=src_len[b])
        if b == 1:
            toks[0] = UNK                                                       # an unk id too
        src[:src_len[b], b] = toks
        y = rng.integers(4, V_t, size=tgt_len[b] - 1)                         # the target without EOS
        tgt_in[0, b] = BOS
        tgt_in[1:tgt_len[b], b] = y
        tgt_out[:tgt_len[b] - 1, b] = y
        tgt_out[tgt_len[b] - 1, b] = EOS
    return src, tgt_in, tgt_out


# Weights are uniform(-1, 1), attention weights uniform(-2, 2): with the
# +-0.3 of a real initialisation the LSTM outputs (the keys) are ~0.05, the
# attention is nearly uniform and the gradients of attn_W1 (~1e-8), attn_W2
# and attn_Wq fall below float32 noise, so the fixtures would not test them;
# local-p's p_t would also stay at S_b / 2.
INIT_SCALE = 1.0
WIDE_INIT = {k: 2.0 for k in ("attn_Wq", "attn_Wk", "attn_Wa", "attn_W1", "attn_W2", "attn_v",
                              "attn_Wp", "attn_vp")}


# Layer-norm gains (model.layer_norm; 1 in the C model's initialisation) are
# 1 + uniform(-0.3, 0.3): none is 1, so code that ignores a gain is caught,
# and each stays well away from 0.
LN_GAIN_SPREAD = 0.3


def random_params(d, rng):
    def draw(name, shape):
        if name.endswith(("_ln_ih", "_ln_hh")):
            return 1.0 + rng.uniform(-LN_GAIN_SPREAD, LN_GAIN_SPREAD, size=shape)
        return rng.uniform(-1, 1, size=shape) * WIDE_INIT.get(name, INIT_SCALE)
    return {name: torch.tensor(draw(name, shape), dtype=torch.float64)
            for name, shape in param_shapes(d)}


def compute(d, P, src, src_len, tgt_in, tgt_out):
    """Forward + backward. Returns logits, loss, nll_sum, n, grads (dict)."""
    Pg = {k: v.detach().clone().requires_grad_(True) for k, v in P.items()}
    logits = forward(d, Pg, src, src_len, tgt_in)
    loss, nll_sum, n = loss_of(d, logits, tgt_out)
    grads = torch.autograd.grad(loss, list(Pg.values()))
    return logits.detach(), loss.item(), nll_sum.item(), n, dict(zip(Pg.keys(), grads))


def adam_losses(d, cfg, P, batch, steps):
    """Loss before the first update and after each of `steps` Adam updates:
    m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; w -= lr * (m / (1-b1^k)) /
    (sqrt(v / (1-b2^k)) + eps). No clipping, no weight decay, constant lr."""
    tr = cfg["train"]
    lr, b1, b2, eps = tr["lr"], tr["adam_beta1"], tr["adam_beta2"], tr["adam_eps"]
    W = {k: v.clone() for k, v in P.items()}
    m = {k: torch.zeros_like(v) for k, v in W.items()}
    v2 = {k: torch.zeros_like(v) for k, v in W.items()}
    losses = []
    for k in range(1, steps + 1):
        _, loss, _, _, g = compute(d, W, *batch)
        losses.append(loss)
        for name in W:
            m[name] = b1 * m[name] + (1 - b1) * g[name]
            v2[name] = b2 * v2[name] + (1 - b2) * g[name] * g[name]
            mhat = m[name] / (1 - b1 ** k)
            vhat = v2[name] / (1 - b2 ** k)
            W[name] = W[name] - lr * mhat / (torch.sqrt(vhat) + eps)
    losses.append(compute(d, W, *batch)[1])
    return losses


def flat(x):
    return [float(v) for v in x.reshape(-1).tolist()]


def fixture_case(name):
    """The fixture's Dims, config, weights and batch (tensors), from its seed."""
    cfg, seed = FIXTURES[name]
    d = Dims(cfg, FIX_V_S, FIX_V_T)
    rng = np.random.default_rng(seed)
    P = random_params(d, rng)
    src, tgt_in, tgt_out = make_batch(rng, FIX_V_S, FIX_V_T, FIX_SRC_LEN, FIX_TGT_LEN)
    batch = (torch.from_numpy(src), torch.tensor(FIX_SRC_LEN, dtype=torch.int64),
             torch.from_numpy(tgt_in), torch.from_numpy(tgt_out))
    return d, cfg, P, batch


def build_fixture(name):
    d, cfg, P, batch = fixture_case(name)
    src, src_len, tgt_in, tgt_out = batch
    logits, loss, nll_sum, n, grads = compute(d, P, *batch)
    shapes = dict(param_shapes(d))
    return {
        "format": FORMAT, "version": VERSION, "name": name, "config": cfg,
        "src_vocab": d.V_s, "tgt_vocab": d.V_t,
        "params": [{"name": k, "shape": list(shapes[k]), "data": flat(v)} for k, v in P.items()],
        "batch": {"B": src.shape[1], "S": src.shape[0], "T": tgt_in.shape[0],
                  "src": src.reshape(-1).tolist(), "src_len": src_len.tolist(),
                  "tgt_in": tgt_in.reshape(-1).tolist(), "tgt_out": tgt_out.reshape(-1).tolist()},
        "logits": flat(logits), "loss": loss, "nll_sum": nll_sum, "n_tokens": n,
        "grads": [{"name": k, "data": flat(g)} for k, g in grads.items()],
        "adam_steps": ADAM_STEPS,
        "adam_losses": adam_losses(d, cfg, P, batch, ADAM_STEPS),
    }


def dump_fixture(obj, path):
    """JSON with one top-level key per line and one tensor per line; floats
    are written by repr (shortest string that reads back to the same double)."""
    def j(x):
        return json.dumps(x, allow_nan=False, separators=(", ", ": "))
    lines = []
    for k, v in obj.items():
        if k in ("params", "grads"):
            inner = ",\n".join("  " + j(e) for e in v)
            lines.append(" %s: [\n%s\n ]" % (j(k), inner))
        else:
            lines.append(" %s: %s" % (j(k), j(v)))
    with open(path + ".tmp", "w") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    os.replace(path + ".tmp", path)


def load_fixture(path):
    """Returns (Dims, cfg, P, batch tensors, the fixture dict)."""
    with open(path) as f:
        fx = json.load(f)
    if fx.get("format") != FORMAT or fx.get("version") != VERSION:
        raise ValueError("%s: not an %s v%d fixture" % (path, FORMAT, VERSION))
    d = Dims(fx["config"], fx["src_vocab"], fx["tgt_vocab"])
    P = {p["name"]: torch.tensor(p["data"], dtype=torch.float64).reshape(p["shape"])
         for p in fx["params"]}
    bt = fx["batch"]
    B, S, T = bt["B"], bt["S"], bt["T"]
    batch = (torch.tensor(bt["src"]).reshape(S, B), torch.tensor(bt["src_len"]),
             torch.tensor(bt["tgt_in"]).reshape(T, B), torch.tensor(bt["tgt_out"]).reshape(T, B))
    return d, fx["config"], P, batch, fx


def cmd_fixtures(args):
    torch.set_default_dtype(torch.float64)
    os.makedirs(args.out, exist_ok=True)
    names = args.only.split(",") if args.only else list(FIXTURES)
    for name in names:
        fx = build_fixture(name)
        path = os.path.join(args.out, name + ".json")
        dump_fixture(fx, path)
        print("%s: loss %.6f, %d params, %d floats" % (
            path, fx["loss"], len(fx["params"]), sum(len(p["data"]) for p in fx["params"])))
    return 0


# ----------------------------------------------------------------------------
# Self-checks of the reference
# ----------------------------------------------------------------------------

class Checker:
    def __init__(self):
        self.passed = self.failed = 0

    def close(self, what, got, want, tol):
        got = torch.as_tensor(got, dtype=torch.float64)
        want = torch.as_tensor(want, dtype=torch.float64)
        err = (got - want).abs().max().item() if got.numel() else 0.0
        scale = max(1.0, want.abs().max().item() if want.numel() else 0.0)
        self.ok(what, got.shape == want.shape and err <= tol * scale,
                "max abs err %.3g (tol %.3g)" % (err, tol * scale))

    def ok(self, what, cond, detail=""):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: %s %s" % (what, detail))


def check_lstm(ck):
    """Explicit lstm_layer against nn.LSTM: unpadded, and padded via
    pack_padded_sequence (which runs each sentence to its own length and
    starts the backward direction at its last token)."""
    g = torch.Generator().manual_seed(5)
    S, B, E, D = 6, 4, 5, 7
    lstm = torch.nn.LSTM(E, D, bidirectional=True).double()
    with torch.no_grad():
        for p in lstm.parameters():
            p.uniform_(-0.5, 0.5, generator=g)
    W = {"f": (lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0 + lstm.bias_hh_l0),
         "b": (lstm.weight_ih_l0_reverse, lstm.weight_hh_l0_reverse,
               lstm.bias_ih_l0_reverse + lstm.bias_hh_l0_reverse)}
    x = torch.rand(S, B, E, generator=g, dtype=torch.float64) * 2 - 1
    with torch.no_grad():
        full = torch.full((B,), S, dtype=torch.int64)
        ref, (hn, cn) = lstm(x)
        of, hf, cf = lstm_layer(x, full, *W["f"])
        ob, hb, cb = lstm_layer(x, full, *W["b"], reverse=True)
        ck.close("lstm unpadded outputs", torch.cat([of, ob], 2), ref, 1e-12)
        ck.close("lstm unpadded final h", torch.stack([hf, hb]), hn, 1e-12)
        ck.close("lstm unpadded final c", torch.stack([cf, cb]), cn, 1e-12)
        lens = torch.tensor([6, 2, 4, 1])
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lens, enforce_sorted=False)
        pout, (hn, cn) = lstm(packed)
        ref, _ = torch.nn.utils.rnn.pad_packed_sequence(pout, total_length=S)
        of, hf, cf = lstm_layer(x, lens, *W["f"])
        ob, hb, cb = lstm_layer(x, lens, *W["b"], reverse=True)
        mask = (torch.arange(S).unsqueeze(1) < lens).unsqueeze(2).double()
        ck.close("lstm padded outputs", torch.cat([of, ob], 2) * mask, ref, 1e-12)
        ck.close("lstm padded final h", torch.stack([hf, hb]), hn, 1e-12)
        ck.close("lstm padded final c", torch.stack([cf, cb]), cn, 1e-12)
        # padding carries the forward state: outputs at s >= S_b repeat S_b - 1
        last = of[lens - 1, torch.arange(B)]
        ck.close("lstm carry", of[S - 1], last, 0)
        ck.close("lstm backward padding is zero", ob * (1 - mask), torch.zeros_like(ob), 0)
    check_lstm_layer_norm(ck)


def check_lstm_layer_norm(ck):
    """The layer-normalised lstm_layer (model.layer_norm) against a separate
    per-sentence loop over F.layer_norm (normalised_shape (4D,): all four
    gates at once, biased variance, eps 1e-5, weight = gain, no bias), each
    sentence alone and unpadded, the backward direction on the reversed
    sentence; then that the gains matter and the normalisation is over the
    four gates together."""
    g = torch.Generator().manual_seed(7)
    S, B, E, D = 6, 4, 5, 7
    u = lambda *shape, lo=-1.0, hi=1.0: torch.rand(*shape, generator=g, dtype=torch.float64) * (hi - lo) + lo
    W = {k: (u(4 * D, E), u(4 * D, D), u(4 * D), u(4 * D, lo=0.7, hi=1.3), u(4 * D, lo=0.7, hi=1.3))
         for k in ("f", "b")}
    x = u(S, B, E)
    lens = torch.tensor([6, 2, 4, 1])

    def ref_run(xs, W_ih, W_hh, b, g_ih, g_hh):
        """xs (T, in), one sentence: outputs (T, D), final h, c."""
        h = xs.new_zeros(D)
        c = xs.new_zeros(D)
        outs = []
        for t in range(xs.shape[0]):
            z = (F.layer_norm(W_ih @ xs[t], (4 * D,), weight=g_ih, bias=None, eps=1e-5)
                 + F.layer_norm(W_hh @ h, (4 * D,), weight=g_hh, bias=None, eps=1e-5) + b)
            i, f, gg, o = torch.sigmoid(z[:D]), torch.sigmoid(z[D:2 * D]), torch.tanh(z[2 * D:3 * D]), \
                torch.sigmoid(z[3 * D:])
            c = f * c + i * gg
            h = o * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs), h, c

    with torch.no_grad():
        of, hf, cf = lstm_layer(x, lens, *W["f"])
        ob, hb, cb = lstm_layer(x, lens, *W["b"], reverse=True)
        for b in range(B):
            n = int(lens[b])
            rf, rhf, rcf = ref_run(x[:n, b], *W["f"])
            rb, rhb, rcb = ref_run(x[:n, b].flip(0), *W["b"])
            ck.close("lstm layer_norm sentence %d outputs" % b,
                     torch.cat([of[:n, b], ob[:n, b]], 1), torch.cat([rf, rb.flip(0)], 1), 1e-12)
            ck.close("lstm layer_norm sentence %d final h, c" % b,
                     torch.stack([hf[b], cf[b], hb[b], cb[b]]), torch.stack([rhf, rcf, rhb, rcb]), 1e-12)
        ck.close("lstm layer_norm carry", of[S - 1], of[lens - 1, torch.arange(B)], 0)
        # a gain of 1 or a normalisation per gate would give other outputs
        W_ih, W_hh, b, g_ih, g_hh = W["f"]
        for what, args in (("g_ih", (W_ih, W_hh, b, torch.ones_like(g_ih), g_hh)),
                           ("g_hh", (W_ih, W_hh, b, g_ih, torch.ones_like(g_hh)))):
            o1 = lstm_layer(x, lens, *args)[0]
            ck.ok("lstm layer_norm " + what + " matters", (o1 - of).abs().max().item() > 1e-3)
        v = x[0] @ W_ih.t()
        per_gate = torch.cat([F.layer_norm(q, (D,), eps=1e-5) for q in v.chunk(4, 1)], 1) * g_ih
        ck.ok("lstm layer_norm over the four gates together",
              (layer_norm(v, g_ih) - per_gate).abs().max().item() > 1e-3)


def check_loss(ck):
    for name in ("a_luong_general_global", "h_luong_concat_localm"):
        d, _, P, (src, sl, ti, to) = fixture_case(name)
        with torch.no_grad():
            logits = forward(d, P, src, sl, ti)
            loss, nll_sum, n = loss_of(d, logits, to)
            V = logits.shape[2]
            ref = F.cross_entropy(logits.reshape(-1, V), to.reshape(-1), ignore_index=PAD,
                                  label_smoothing=d.eps, reduction="sum") / n
            ck.close(name + " loss vs F.cross_entropy", loss, ref, 1e-13)
            nll = F.cross_entropy(logits.reshape(-1, V), to.reshape(-1), ignore_index=PAD,
                                  reduction="sum")
            ck.close(name + " nll_sum", nll_sum, nll, 1e-13)
            ck.ok(name + " n_tokens", n == sum(FIX_TGT_LEN))


def check_per_sentence(ck):
    """The padded batch equals each sentence run alone (B = 1, no padding):
    logits at real target positions, and the loss of the batch is the token-
    weighted mean of the sentences' losses."""
    for name in FIXTURES:
        d, _, P, (src, sl, ti, to) = fixture_case(name)
        with torch.no_grad():
            logits = forward(d, P, src, sl, ti)
            loss, _, n = loss_of(d, logits, to)
            total = 0.0
            for b in range(src.shape[1]):
                Sb, Tb = int(sl[b]), int((to[:, b] != PAD).sum())
                lb = forward(d, P, src[:Sb, b:b + 1], sl[b:b + 1], ti[:Tb, b:b + 1])
                ck.close("%s sentence %d logits" % (name, b), lb[:, 0], logits[:Tb, b], 1e-12)
                total += loss_of(d, lb, to[:Tb, b:b + 1])[0].item() * Tb
            ck.close(name + " loss = mean of sentences", loss, total / n, 1e-12)


def check_gradcheck(ck, full_all=False, full_name="h_luong_concat_localm"):
    """torch.autograd.gradcheck of the loss w.r.t. every parameter: all
    elements for one config, fast mode (random projections) for the rest."""
    for name in FIXTURES:
        d, _, P, batch = fixture_case(name)
        names = list(P)
        inputs = tuple(P[k].clone().requires_grad_(True) for k in names)

        def fn(*ws):
            logits = forward(d, dict(zip(names, ws)), batch[0], batch[1], batch[2])
            return loss_of(d, logits, batch[3])[0]

        fast = not full_all and name != full_name
        try:
            ok = torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-8, rtol=1e-6,
                                          fast_mode=fast)
        except RuntimeError as e:
            ok = False
            print(str(e)[:2000])
        ck.ok("%s gradcheck (%s)" % (name, "fast" if fast else "full"), ok)


def check_local_p(ck):
    """Gradients reach attn_Wp and attn_vp, and no source position lies within
    1e-2 of a window edge in any forward pass of the fixture (Adam steps
    included), so float32 code selects the same windows."""
    global LOCAL_P_MARGINS
    for name in FIXTURES:
        d, cfg, P, batch = fixture_case(name)
        if d.mode != "local-p":
            continue
        LOCAL_P_MARGINS = []
        g = compute(d, P, *batch)[4]
        adam_losses(d, cfg, P, batch, ADAM_STEPS)
        margin, LOCAL_P_MARGINS = min(LOCAL_P_MARGINS), None
        ck.ok("%s window edge margin" % name, margin > 1e-2, "%.3g" % margin)
        for k in ("attn_Wp", "attn_vp"):
            ck.ok("%s %s gradient non-zero" % (name, k), g[k].abs().max().item() > 1e-6,
                  "max |g| %.3g" % g[k].abs().max().item())


def check_fixture_files(ck, folder):
    if not os.path.isdir(folder):
        print("skip: no fixtures in %s" % folder)
        return
    files = sorted(f for f in os.listdir(folder) if f.endswith(".json"))
    for f in files:
        d, cfg, P, batch, fx = load_fixture(os.path.join(folder, f))
        logits, loss, nll_sum, n, grads = compute(d, P, *batch)
        ck.ok(f + " param order", [p["name"] for p in fx["params"]] ==
              [k for k, _ in param_shapes(d)])
        ck.close(f + " logits", logits.reshape(-1), fx["logits"], 1e-12)
        ck.close(f + " loss", loss, fx["loss"], 1e-12)
        ck.close(f + " nll_sum", nll_sum, fx["nll_sum"], 1e-12)
        ck.ok(f + " n_tokens", n == fx["n_tokens"])
        for e in fx["grads"]:
            ck.close(f + " grad " + e["name"], grads[e["name"]].reshape(-1), e["data"], 1e-12)
            # every parameter gets a gradient well above float32 noise
            big = max(abs(x) for x in e["data"])
            ck.ok(f + " grad " + e["name"] + " has signal", big > 1e-4, "max |g| %.3g" % big)
        al = adam_losses(d, cfg, P, batch, fx["adam_steps"])
        ck.close(f + " adam_losses", al, fx["adam_losses"], 1e-11)
        ck.ok(f + " adam decreases the loss", fx["adam_losses"][-1] < fx["adam_losses"][0])


def cmd_check(args):
    torch.set_default_dtype(torch.float64)
    ck = Checker()
    steps = [("lstm", check_lstm), ("loss", check_loss), ("per-sentence", check_per_sentence),
             ("local-p", check_local_p),
             ("fixtures", lambda c: check_fixture_files(c, args.fixtures))]
    if not args.quick:
        steps.append(("gradcheck", lambda c: check_gradcheck(c, args.full_gradcheck)))
    for label, fn in steps:
        t0 = time.time()
        before = ck.failed
        fn(ck)
        print("%-13s %s (%.1f s)" % (label, "ok" if ck.failed == before else "FAILED",
                                     time.time() - t0))
    print("reference check: %d passed, %d failed" % (ck.passed, ck.failed))
    return 1 if ck.failed else 0


# ----------------------------------------------------------------------------
# Benchmark (float32, nn.LSTM / cuDNN allowed)
# ----------------------------------------------------------------------------

class BenchModel(torch.nn.Module):
    """Same sizes and equations as the C model's default configuration: bi-LSTM
    first encoder layer (K/2 per direction), unidirectional layers above,
    learned bridge, Luong general global attention with input feeding, one
    head or a.heads of them (each its own W_a (H, K) over the whole keys, the
    heads' contexts concatenated and mapped back to K by W_o, as
    docs/model.md and the C model have it)."""

    def __init__(self, a):
        super().__init__()
        nn = torch.nn
        E, H, K = a.emb, a.hidden, a.enc_hidden or a.hidden
        self.H, self.K, self.L_d, self.p = H, K, a.dec_layers, a.dropout
        self.bidirectional = a.bidirectional
        self.src_emb = nn.Embedding(a.src_vocab, E)
        self.tgt_emb = nn.Embedding(a.tgt_vocab, E)
        self.enc0 = nn.LSTM(E, K // 2 if a.bidirectional else K, bidirectional=a.bidirectional)
        self.enc_rest = nn.LSTM(K, K, num_layers=a.enc_layers - 1,
                                dropout=a.dropout if a.enc_layers > 2 else 0.0) \
            if a.enc_layers > 1 else None
        self.bridge_h = nn.Linear(K, a.dec_layers * H)
        self.bridge_c = nn.Linear(K, a.dec_layers * H)
        self.dec = nn.ModuleList([nn.LSTMCell(E + H if l == 0 else H, H)
                                  for l in range(a.dec_layers)])
        self.heads = a.heads
        self.attn_Wa = nn.Linear(K, self.heads * H, bias=False)              # heads' W_a stacked
        self.attn_Wo = nn.Linear(self.heads * K, K, bias=False) if self.heads > 1 else None
        self.out_Wc = nn.Linear(K + H, H, bias=False)
        self.out = nn.Linear(H, a.tgt_vocab)
        for p in self.parameters():
            nn.init.uniform_(p, -0.1, 0.1)

    def encode(self, src, src_len):
        pack = torch.nn.utils.rnn.pack_padded_sequence
        unpack = torch.nn.utils.rnn.pad_packed_sequence
        S = src.shape[0]
        lens = src_len.cpu()
        x = F.dropout(self.src_emb(src), self.p, self.training)
        out, (h, c) = self.enc0(pack(x, lens, enforce_sorted=False))
        if self.bidirectional:
            h, c = torch.cat([h[0], h[1]], 1), torch.cat([c[0], c[1]], 1)
        else:
            h, c = h[0], c[0]
        if self.enc_rest is not None:
            x, _ = unpack(out, total_length=S)
            x = F.dropout(x, self.p, self.training)
            out, (h, c) = self.enc_rest(pack(x, lens, enforce_sorted=False))
            h, c = h[-1], c[-1]
        keys, _ = unpack(out, total_length=S)
        return keys.transpose(0, 1).contiguous(), h, c                      # (B, S, K)

    def init_state(self, h_fin, c_fin):
        H = self.H
        hb = torch.tanh(self.bridge_h(h_fin))
        cb = self.bridge_c(c_fin)
        return ([hb[:, l * H:(l + 1) * H] for l in range(self.L_d)],
                [cb[:, l * H:(l + 1) * H] for l in range(self.L_d)])

    def project_keys(self, keys):
        """W_a keys of every head: (B, S, K) -> (B, n*S, H), head j's rows at
        j*S .. j*S + S - 1 (for n = 1 simply keys W_a^T)."""
        B, S, _ = keys.shape
        wk = self.attn_Wa(keys)                                               # (B, S, n*H)
        if self.heads == 1:
            return wk
        return wk.view(B, S, self.heads, self.H).transpose(1, 2).reshape(B, self.heads * S, self.H)

    def attend(self, q, keys, wk, mask):
        """Attention of G query rows a sentence: q (B, G, H), keys (B, S, K),
        wk from project_keys, mask (B, S). Returns the context (B, G, K)."""
        B, G, _ = q.shape
        S, n = keys.shape[1], self.heads
        e = torch.bmm(q, wk.transpose(1, 2)).view(B, G, n, S)                 # (B, G, n, S)
        a = torch.softmax(e.masked_fill(~mask.view(B, 1, 1, S), float("-inf")), 3)
        ctx = torch.bmm(a.view(B, G * n, S), keys)                            # (B, G*n, K)
        if n == 1:
            return ctx
        return self.attn_Wo(ctx.view(B, G, n * keys.shape[2]))

    def step(self, y, hh, h, c, keys, wk, mask):
        """One decoder step for token ids y (N,). Returns the new hh."""
        inp = torch.cat([F.dropout(self.tgt_emb(y), self.p, self.training), hh], 1)
        for l, cell in enumerate(self.dec):
            h[l], c[l] = cell(inp, (h[l], c[l]))
            inp = F.dropout(h[l], self.p, self.training) if l + 1 < self.L_d else h[l]
        ctx = self.attend(h[-1].unsqueeze(1), keys, wk, mask).squeeze(1)
        return torch.tanh(self.out_Wc(torch.cat([ctx, h[-1]], 1)))

    def forward(self, src, src_len, tgt_in, tgt_out, eps):
        keys, h_fin, c_fin = self.encode(src, src_len)
        wk = self.project_keys(keys)                                          # (B, n*S, H)
        mask = torch.arange(keys.shape[1], device=src.device).unsqueeze(0) < src_len.unsqueeze(1)
        h, c = self.init_state(h_fin, c_fin)
        hh = keys.new_zeros(src.shape[1], self.H)
        outs = []
        for t in range(tgt_in.shape[0]):
            hh = self.step(tgt_in[t], hh, h, c, keys, wk, mask)
            outs.append(F.dropout(hh, self.p, self.training))
        logits = self.out(torch.stack(outs))
        n = (tgt_out != PAD).sum()
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[2]), tgt_out.reshape(-1),
                               ignore_index=PAD, label_smoothing=eps, reduction="sum") / n
        return loss

    @torch.no_grad()
    def beam_search(self, src, src_len, beam, max_len, alpha=0.6):
        """Batched beam search (beam rows per sentence), GNMT length penalty.
        Returns a list of token-id lists."""
        B = src.shape[1]
        keys, h_fin, c_fin = self.encode(src, src_len)
        rep = lambda x: x.repeat_interleave(beam, 0)
        keys = rep(keys)
        wk = self.project_keys(keys)
        mask = rep(torch.arange(keys.shape[1], device=src.device).unsqueeze(0) < src_len.unsqueeze(1))
        h, c = self.init_state(h_fin, c_fin)
        h, c = [rep(x) for x in h], [rep(x) for x in c]
        hh = keys.new_zeros(B * beam, self.H)
        y = torch.full((B * beam,), BOS, dtype=torch.long, device=src.device)
        score = torch.full((B, beam), float("-inf"), device=src.device)
        score[:, 0] = 0
        score = score.reshape(-1)
        hist = []
        finished = [[] for _ in range(B)]
        alive = torch.ones(B * beam, dtype=torch.bool, device=src.device)
        V = self.out.out_features
        for t in range(max_len):
            hh = self.step(y, hh, h, c, keys, wk, mask)
            logp = torch.log_softmax(self.out(hh), 1)
            cand = (score.unsqueeze(1) + logp).masked_fill(~alive.unsqueeze(1), float("-inf"))
            top, idx = cand.reshape(B, beam * V).topk(beam, 1)
            origin = (idx // V) + torch.arange(B, device=src.device).unsqueeze(1) * beam
            origin, y, score = origin.reshape(-1), (idx % V).reshape(-1), top.reshape(-1)
            h, c = [x[origin] for x in h], [x[origin] for x in c]
            hh = hh[origin]
            hist = [x[origin] for x in hist] + [y]
            alive = alive[origin] & torch.isfinite(score)
            ended = (y == EOS) & alive
            if ended.any():
                for r in ended.nonzero().flatten().tolist():
                    lp = ((5 + t + 1) / 6) ** alpha
                    finished[r // beam].append((score[r].item() / lp,
                                                [int(x[r]) for x in hist[:-1]]))
                # a sentence with `beam` finished hypotheses stops
                done = torch.tensor([len(f) >= beam for f in finished], device=src.device)
                ended = ended | done.repeat_interleave(beam)
                alive = alive & ~ended
                score = score.masked_fill(ended, float("-inf"))
            if not alive.any():
                break
        out = []
        for b in range(B):
            if not finished[b]:
                finished[b].append((0.0, [int(x[b * beam]) for x in hist]))
            out.append(max(finished[b])[1])
        return out


def read_ids(path):
    with open(path) as f:
        return [[int(x) for x in line.split()] for line in f if line.strip()]


def bench_batches(a, rng):
    """Yields (src, src_len, tgt_in, tgt_out) on a.device forever."""
    dev = a.device
    if a.src_ids:
        src_lines, tgt_lines = read_ids(a.src_ids), read_ids(a.tgt_ids)
        if len(src_lines) != len(tgt_lines):
            raise SystemExit("bench: --src-ids and --tgt-ids differ in line count")
        i = 0
        while True:
            rows = [(src_lines[(i + k) % len(src_lines)][:a.max_len],
                     tgt_lines[(i + k) % len(tgt_lines)][:a.max_len]) for k in range(a.batch)]
            i += a.batch
            rows = [(s or [UNK], t) for s, t in rows]
            S = max(len(s) for s, _ in rows)
            T = max(len(t) for _, t in rows) + 1
            src = np.zeros((S, a.batch), np.int64)
            ti = np.zeros((T, a.batch), np.int64)
            to = np.zeros((T, a.batch), np.int64)
            for b, (s, t) in enumerate(rows):
                src[:len(s), b] = s
                ti[:len(t) + 1, b] = [BOS] + t
                to[:len(t) + 1, b] = t + [EOS]
            yield (torch.from_numpy(src).to(dev), torch.tensor([len(s) for s, _ in rows], device=dev),
                   torch.from_numpy(ti).to(dev), torch.from_numpy(to).to(dev))
    while True:
        S, T = a.src_len, a.tgt_len
        src = rng.integers(4, a.src_vocab, size=(S, a.batch))
        y = rng.integers(4, a.tgt_vocab, size=(T - 1, a.batch))
        ti = np.concatenate([np.full((1, a.batch), BOS), y])
        to = np.concatenate([y, np.full((1, a.batch), EOS)])
        yield (torch.from_numpy(src).to(dev), torch.full((a.batch,), S, device=dev),
               torch.from_numpy(ti).to(dev), torch.from_numpy(to).to(dev))


def sync(dev):
    if dev.startswith("cuda"):
        torch.cuda.synchronize()


def openblas_threads(set_to=0):
    """OpenBLAS's own thread count (torch's set_num_threads does not reach a
    generic libblas.so.3 that is OpenBLAS); sets it first when set_to > 0.
    None when no OpenBLAS is loaded."""
    import ctypes
    with open("/proc/self/maps") as f:
        paths = {l.split()[-1] for l in f if "openblas" in l.lower() and len(l.split()) >= 6}
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
            if set_to > 0:
                lib.openblas_set_num_threads(ctypes.c_int(set_to))
            return int(lib.openblas_get_num_threads())
        except (OSError, AttributeError):
            continue
    return None


def cmd_bench(a):
    torch.zeros(2, 2) @ torch.zeros(2, 2)                                     # loads the BLAS
    if a.threads > 0:
        torch.set_num_threads(a.threads)
        openblas_threads(a.threads)
    if a.bidirectional and (a.enc_hidden or a.hidden) % 2:
        raise SystemExit("bench: bidirectional needs an even encoder size")
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    model = BenchModel(a).to(a.device)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    batches = bench_batches(a, rng)
    nparams = sum(p.numel() for p in model.parameters())
    print("bench: torch %s, device %s, %d threads (interop %d), %d parameters" % (
        torch.__version__, a.device, torch.get_num_threads(), torch.get_num_interop_threads(),
        nparams))
    print("bench: emb %d hidden %d enc_hidden %d enc_layers %d dec_layers %d bidirectional %s "
          "batch %d vocab %d/%d dropout %.2f, luong general global, input feeding, "
          "label smoothing 0.1, adam, clip %.1f" % (
              a.emb, a.hidden, a.enc_hidden or a.hidden, a.enc_layers, a.dec_layers,
              a.bidirectional, a.batch, a.src_vocab, a.tgt_vocab, a.dropout, a.clip_norm))
    model.train()

    def train_step(batch):
        opt.zero_grad(set_to_none=True)
        loss = model(*batch, eps=0.1)
        loss.backward()
        if a.clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip_norm)
        opt.step()
        return loss

    for _ in range(a.warmup):
        train_step(next(batches))
    sync(a.device)
    src_tok = tgt_tok = 0
    t0 = time.perf_counter()
    for _ in range(a.steps):
        batch = next(batches)
        loss = train_step(batch)
        src_tok += int(batch[1].sum())
        tgt_tok += int((batch[3] != PAD).sum())
    sync(a.device)
    dt = time.perf_counter() - t0
    print("train: %d steps in %.2f s (%.1f ms/step), last loss %.4f" % (
        a.steps, dt, 1000 * dt / a.steps, loss.item()))
    print("train: %.0f source tokens/s, %.0f target tokens/s" % (src_tok / dt, tgt_tok / dt))
    if a.decode:
        model.eval()
        batch = next(batches)
        max_len = int(2 * batch[0].shape[0] + 10)
        model.beam_search(batch[0], batch[1], a.beam, max_len)                  # warm-up
        sync(a.device)
        t0 = time.perf_counter()
        out_tok = sent = src_tok = 0
        for _ in range(a.decode_batches):
            batch = next(batches)
            hyps = model.beam_search(batch[0], batch[1], a.beam, max_len)
            out_tok += sum(len(h) + 1 for h in hyps)
            sent += len(hyps)
            src_tok += int(batch[1].sum())
        sync(a.device)
        dt = time.perf_counter() - t0
        print("decode: beam %d, %d sentences in %.2f s: %.1f sentences/s, %.0f source tokens/s, "
              "%.0f output tokens/s (untrained model, max_len 2S+10)" % (
                  a.beam, sent, dt, sent / dt, src_tok / dt, out_tok / dt))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("memory: peak RSS %.1f MiB" % rss)
    if a.device.startswith("cuda"):
        print("memory: peak CUDA allocated %.1f MiB" % (torch.cuda.max_memory_allocated() / 2**20))
    print("threads: torch.get_num_threads() = %d" % torch.get_num_threads())
    print("parallel: " + " | ".join(l.strip() for l in torch.__config__.parallel_info().splitlines()
                                   if l.strip()))
    cfg = torch.__config__.show()
    info = [w.strip(",") for w in cfg.split() if w.startswith(("BLAS_INFO=", "LAPACK_INFO="))]
    info += [l.strip().lstrip("- ") for l in cfg.splitlines()
             if ("MKL" in l or "LAPACK is" in l) and "Build settings" not in l]
    print("blas: torch built with " + (", ".join(info) if info else "(not named)"))
    # BLAS_INFO=generic (Debian) means libblas.so.3, i.e. whatever the
    # alternatives system points at: name the libraries actually mapped.
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            name = os.path.basename(path).lower()
            if any(k in name for k in ("blas", "lapack", "mkl", "gomp", "omp")):
                libs.add(os.path.realpath(path))
    print("blas: loaded " + (", ".join(sorted(libs)) if libs else "(none found in /proc/self/maps)"))
    n = openblas_threads()
    if n is not None:
        print("blas: openblas_get_num_threads() = %d" % n)
    return 0


# ----------------------------------------------------------------------------
# Decoding benchmark: an nmt checkpoint run by PyTorch (float32)
# ----------------------------------------------------------------------------

CKPT_MAGIC = b"NMTCKPT\0"
CKPT_TAGS = ("CONF", "STOK", "TTOK", "TENS", "PARM", "OPTM", "STAT", "HIST")
TOKENIZER_TAG_LEN = 8            # "NMTTOK", format version, kind (src/data/tokenizer.c)
TOKENIZER_SPM = 0
TOKENIZER_WORD = 1


def read_checkpoint(path):
    """Reads an nmt checkpoint (docs/checkpoint-format.md, versions 1 to 3;
    TRAIN_PARAMS of version 2 or 3, the training weights beside their
    moving average, is skipped: PARM is the model; so is version 3's chrF
    in the validation history).
    Returns (config dict, source tokenizer bytes, target tokenizer bytes,
    [(name, count, rows, cols)], float32 weights). Adam moments are skipped."""
    import struct
    import zlib
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 28 or data[:8] != CKPT_MAGIC:
        raise SystemExit("%s: not an nmt checkpoint" % path)
    version, flags, C = struct.unpack_from("<IIQ", data, 8)
    if version not in (1, 2, 3) or flags != 0:
        raise SystemExit("%s: checkpoint format %d (flags %d); this reads formats 1 to 3" % (path, version, flags))
    if len(data) != 28 + C:
        raise SystemExit("%s: %d bytes, the header says %d" % (path, len(data), 28 + C))
    if zlib.crc32(memoryview(data)[:24 + C]) != struct.unpack_from("<I", data, 24 + C)[0]:
        raise SystemExit("%s: corrupt (checksum mismatch)" % path)
    sec, off = {}, 24
    while off < 24 + C:
        tag = data[off:off + 4].decode("ascii", "replace")
        (L,) = struct.unpack_from("<Q", data, off + 4)
        known = tag in CKPT_TAGS or (tag == "TPRM" and version >= 2)
        if not known or tag in sec or off + 12 + L > 24 + C:
            raise SystemExit("%s: bad section %r" % (path, tag))
        sec[tag] = (off + 12, L)
        off += 12 + L
    missing = [t for t in CKPT_TAGS + (("TPRM",) if version == 2 else ()) if t not in sec]
    if missing:
        raise SystemExit("%s: missing sections %s" % (path, ", ".join(missing)))
    body = lambda t: data[sec[t][0]:sec[t][0] + sec[t][1]]
    cfg = json.loads(body("CONF").decode("utf-8") or "{}")
    tens, p = body("TENS"), 4
    tensors = []
    for _ in range(struct.unpack_from("<I", tens, 0)[0]):
        (k,) = struct.unpack_from("<I", tens, p)
        name = tens[p + 4:p + 4 + k].decode("ascii")
        count, rows, cols = struct.unpack_from("<iii", tens, p + 4 + k)
        tensors.append((name, count, rows, cols))
        p += 16 + k
    n = sum(c * r * k for _, c, r, k in tensors)
    if sec["PARM"][1] != 4 * n:
        raise SystemExit("%s: PARAMS holds %d bytes, the tensors need %d" % (path, sec["PARM"][1], 4 * n))
    params = np.frombuffer(data, dtype="<f4", count=n, offset=sec["PARM"][0]).astype(np.float32)
    return cfg, body("STOK"), body("TTOK"), tensors, params


class SpmTokenizer:
    """A SentencePiece tokenizer of a checkpoint, run through the spm_encode
    and spm_decode tools (the model is written to a file first)."""

    def __init__(self, payload, path):
        self.path = path
        with open(path, "wb") as f:
            f.write(payload)

    def encode(self, lines):
        return [[int(x) for x in l.split()] for l in spm_run("spm_encode", self.path, lines, "id")]

    def decode(self, id_lists):
        return spm_run("spm_decode", self.path, [" ".join(map(str, y)) for y in id_lists], "id")


# nmt's word tokenizer splits on these (src/data/word_vocab.h)
WORD_SPACE = re.compile("[ \t\n\v\f\r\u0085\u00a0\u1680\u2000-\u200b\u2028\u2029"
                        "\u202f\u205f\u3000\ufeff]+")


class WordTokenizer:
    """nmt's word tokenizer (src/data/word_vocab.c): whitespace-separated
    words, the vocabulary's text form "word<TAB>count" a line in id order;
    unknown words (and text spelled like a special) are UNK; decoding joins
    the words with one space and skips PAD, BOS and EOS."""

    def __init__(self, payload, side):
        self.pieces = []
        for n, line in enumerate(payload.decode("utf-8", "surrogateescape").split("\n")[:-1], 1):
            word, tab, count = line.rpartition("\t")
            if not tab or not count.isdigit():
                raise SystemExit("decode: the %s word vocabulary, line %d: not word<TAB>count" % (side, n))
            self.pieces.append(word)
        self.ids = {w: i for i, w in enumerate(self.pieces) if i >= 4}

    def encode(self, lines):
        return [[self.ids.get(w, UNK) for w in WORD_SPACE.split(l) if w] for l in lines]

    def decode(self, id_lists):
        return [" ".join(self.pieces[i] for i in y if i not in (PAD, BOS, EOS)) for y in id_lists]


def checkpoint_tokenizers(src_tok, tgt_tok, out_dir):
    """The checkpoint's tokenizers (SentencePiece or word): (source, target).
    SentencePiece models are written to out_dir/src.model and tgt.model."""
    toks = []
    for side, tok in (("src", src_tok), ("tgt", tgt_tok)):
        if len(tok) < TOKENIZER_TAG_LEN or tok[:6] != b"NMTTOK" or tok[7] not in (TOKENIZER_SPM, TOKENIZER_WORD):
            raise SystemExit("decode: the %s tokenizer is neither SentencePiece nor word" % side)
        payload = tok[TOKENIZER_TAG_LEN:]
        toks.append(SpmTokenizer(payload, os.path.join(out_dir, side + ".model")) if tok[7] == TOKENIZER_SPM
                    else WordTokenizer(payload, side))
    return toks


def spm_run(tool, model, lines, fmt):
    """spm_encode / spm_decode over a list of lines; one line out per line in."""
    import subprocess
    opt = "--output_format" if tool == "spm_encode" else "--input_format"
    text = "".join(l + "\n" for l in lines)
    r = subprocess.run([tool, "--model", model, opt, fmt], input=text.encode("utf-8"),
                       stdout=subprocess.PIPE, check=True)
    out = r.stdout.decode("utf-8").split("\n")
    if out and out[-1] == "":
        out.pop()
    if len(out) != len(lines):
        raise SystemExit("decode: %s gave %d lines for %d" % (tool, len(out), len(lines)))
    return out


def bench_args_of(cfg, V_s, V_t):
    """The BenchModel sizes of an nmt config; refuses what BenchModel lacks."""
    d = Dims(cfg, V_s, V_t)
    unsupported = [what for what, bad in (
        ("attention style %s" % d.style, d.style != "luong"),
        ("score %s" % d.score, d.score != "general"),
        ("mode %s" % d.mode, d.mode != "global"),
        ("no input feeding", not d.input_feed),
        ("tied embeddings", d.tie),
        ("bridge %s" % d.bridge, d.bridge != "learned"),
        ("residual connections (model.residual)", d.residual and (d.L_e > 1 or d.L_d > 1)),
        ("layer-normalised LSTMs (model.layer_norm)", d.layer_norm),
        ("a right-to-left target (model.right_to_left)", cfg["model"].get("right_to_left", False))) if bad]
    if unsupported:
        raise SystemExit("decode: the PyTorch decoder has Luong general global attention (any number "
                         "of heads) with input feeding and a learned bridge only; this model has "
                         + ", ".join(unsupported))
    a = argparse.Namespace(emb=d.E, hidden=d.H, enc_hidden=d.K, enc_layers=d.L_e, dec_layers=d.L_d,
                           bidirectional=d.bidirectional, dropout=0.0, src_vocab=V_s, tgt_vocab=V_t,
                           heads=d.heads)
    return d, a


def load_nmt_weights(model, d, tensors, params):
    """Copies the checkpoint's weights into a BenchModel. Names, order and
    sizes must be those of param_shapes (i.e. src/model/params.c). The C
    LSTM has one bias: nn.LSTM's bias_ih takes it, bias_hh is zero. nn.LSTM
    has no layer normalisation: a model.layer_norm checkpoint is refused."""
    if d.layer_norm:
        raise SystemExit("decode: the checkpoint's model has layer-normalised LSTMs (model.layer_norm); "
                         "the PyTorch decoder (nn.LSTM) has none")
    want = param_shapes(d)
    got = [(n, c * r * k) for n, c, r, k in tensors]
    if [(n, int(np.prod(s))) for n, s in want] != got:
        raise SystemExit("decode: the checkpoint's parameters are not those of its config:\n  %s\n  %s"
                         % (got, [(n, int(np.prod(s))) for n, s in want]))
    P, off = {}, 0
    for name, shape in want:
        size = int(np.prod(shape))
        P[name] = torch.from_numpy(params[off:off + size].copy())
        off += size
    target = {"src_emb": model.src_emb.weight, "tgt_emb": model.tgt_emb.weight,
              "bridge_h_W": model.bridge_h.weight, "bridge_h_b": model.bridge_h.bias,
              "bridge_c_W": model.bridge_c.weight, "bridge_c_b": model.bridge_c.bias,
              "attn_Wa": model.attn_Wa.weight, "out_Wc": model.out_Wc.weight,
              **({"attn_Wo": model.attn_Wo.weight} if model.attn_Wo is not None else {}),
              "out_W": model.out.weight, "out_b": model.out.bias}

    def lstm(prefix, mod, suffix):
        target[prefix + "_W_ih"] = getattr(mod, "weight_ih" + suffix)
        target[prefix + "_W_hh"] = getattr(mod, "weight_hh" + suffix)
        target[prefix + "_b"] = getattr(mod, "bias_ih" + suffix)
        getattr(mod, "bias_hh" + suffix).data.zero_()

    lstm("enc0_fwd", model.enc0, "_l0")
    if d.bidirectional:
        lstm("enc0_bwd", model.enc0, "_l0_reverse")
    for l in range(1, d.L_e):
        lstm("enc%d_fwd" % l, model.enc_rest, "_l%d" % (l - 1))
    for l in range(d.L_d):
        lstm("dec%d" % l, model.dec[l], "")
    if sorted(target) != sorted(P):
        raise SystemExit("decode: unmapped parameters %s" % sorted(set(P) ^ set(target)))
    with torch.no_grad():
        for name, t in target.items():
            t.copy_(P[name].reshape(t.shape))


class Decoder:
    """Greedy decoding and batched beam search over a BenchModel, step for
    step the algorithm of nmt's seq2seq_greedy and seq2seq_ensemble_search
    (src/model/beam_search.c) with nbest 1 and no coverage penalty:

    - the K hypotheses of sentence b are rows g*B + b; they all read the
      sentence's encoder states (B, S, K) where they are (batched matmuls
      over sentences, no copy per hypothesis);
    - PAD and BOS get -inf logits before the log-softmax (never output);
    - each live row proposes its K best tokens; a sentence's K*K candidates
      (log p in float64) are ranked by log p, ties by row then token; in that
      order an EOS candidate (or any candidate at step t + 1 >= limit) is a
      finished hypothesis with score log p / ((5 + n) / 6)^alpha, n counting
      EOS, and the first K others are the next rows;
    - limit = int(max_len_a * source length) + max_len_b, the batch's steps
      T = the largest limit (at most int(max_len_a * max_src) + max_len_b);
    - a sentence stops when no row is left, or when its best finished score
      is >= max over its live rows of log p / lp(limit);
    - finished sentences stay in the batch (their rows are computed and
      ignored) unless drop_finished, which compacts the batch instead.

    Every tensor lives on the model's device (the source batch must be
    there too); a step reads back to the host only what the search loop
    tests, as a PyTorch user would write it."""

    def __init__(self, model, beam, alpha, max_len_a, max_len_b, max_decode_T, drop_finished=False):
        self.m, self.G, self.alpha = model, beam, alpha
        self.a, self.b, self.max_T = max_len_a, max_len_b, max_decode_T
        self.drop = drop_finished
        self.dev = model.out.weight.device

    def lp(self, n):
        return ((5.0 + n) / 6.0) ** self.alpha if self.alpha > 0 else 1.0

    def limit(self, n):
        return int(self.a * n) + self.b

    def step(self, y, hh, h, c, keys, wk, mask):
        """One decoder step of R = G*B rows (G-major): new hh (R, H) and the
        logits (R, V), PAD and BOS at -inf."""
        m = self.m
        B = keys.shape[0]
        G = y.shape[0] // B
        inp = torch.cat([m.tgt_emb(y), hh], 1)
        for l, cell in enumerate(m.dec):
            h[l], c[l] = cell(inp, (h[l], c[l]))
            inp = h[l]
        q = h[-1]
        ctx = m.attend(q.view(G, B, -1).transpose(0, 1), keys, wk, mask)           # (B, G, K)
        ctx = ctx.transpose(0, 1).reshape(G * B, -1)                             # (R, K)
        hh = torch.tanh(m.out_Wc(torch.cat([ctx, q], 1)))
        logits = m.out(hh)
        logits[:, PAD] = float("-inf")
        logits[:, BOS] = float("-inf")
        return hh, logits

    def setup(self, src, src_len, G):
        m = self.m
        keys, h_fin, c_fin = m.encode(src, src_len)                              # (B, S, K)
        wk = m.project_keys(keys)                                                # (B, n*S, H)
        mask = torch.arange(keys.shape[1], device=self.dev).unsqueeze(0) < src_len.unsqueeze(1)
        h, c = m.init_state(h_fin, c_fin)
        if G > 1:
            h, c = [x.repeat(G, 1) for x in h], [x.repeat(G, 1) for x in c]
        return keys, wk, mask, h, c

    @torch.no_grad()
    def greedy(self, src, src_len):
        lens = src_len.tolist()
        B = len(lens)
        T = min(max(self.limit(n) for n in lens), self.max_T)
        keys, wk, mask, h, c = self.setup(src, src_len, 1)
        hh = keys.new_zeros(B, self.m.H)
        dev = self.dev
        prev = torch.full((B,), BOS, dtype=torch.long, device=dev)
        out = [[] for _ in range(B)]
        done = [False] * B
        rows = list(range(B))            # sentence of each batch row (drop_finished)
        active = B
        for t in range(T):
            if not active:
                break
            hh, logits = self.step(prev, hh, h, c, keys, wk, mask)
            best = logits.argmax(1)
            ids = best.tolist()
            keep = []
            for i, b in enumerate(rows):
                if done[b]:
                    continue
                tok = ids[i]
                if tok == EOS or t + 1 >= min(self.limit(lens[b]), T):
                    if tok != EOS:
                        out[b].append(tok)
                    done[b] = True
                    active -= 1
                else:
                    out[b].append(tok)
                    keep.append(i)
            prev = best.masked_fill(torch.tensor([done[b] for b in rows], device=dev), EOS)
            if self.drop and active and len(keep) < len(rows):
                idx = torch.tensor(keep, device=dev)
                rows = [rows[i] for i in keep]
                prev, hh = prev[idx], hh[idx]
                h, c = [x[idx] for x in h], [x[idx] for x in c]
                keys, wk, mask = keys[idx], wk[idx], mask[idx]
        return out

    @torch.no_grad()
    def beam_search(self, src, src_len):
        G = self.G
        lens = src_len.tolist()
        B0 = len(lens)
        T = min(max(self.limit(n) for n in lens), self.max_T)
        keys, wk, mask, h, c = self.setup(src, src_len, G)
        V = self.m.out.out_features
        ninf = float("-inf")
        dev = self.dev
        i64, f64 = dict(dtype=torch.long, device=dev), dict(dtype=torch.float64, device=dev)
        sent = torch.arange(B0, device=dev)                      # sentence of each batch column
        limits = [min(self.limit(n), T) for n in lens]
        limit = torch.tensor(limits, **i64)
        lp_limit = torch.tensor([self.lp(n) for n in limits], **f64)
        B = B0
        R = G * B
        hh = keys.new_zeros(R, self.m.H)
        prev = torch.full((R,), BOS, **i64)
        logp = torch.full((R,), ninf, **f64)
        logp[:B] = 0.0                                           # one live row per sentence at first
        hist = torch.zeros((T, R), **i64)
        done = torch.zeros(B, dtype=torch.bool, device=dev)
        best_score = torch.full((B0,), ninf, **f64)
        best = [[] for _ in range(B0)]
        g_of = torch.arange(G, device=dev).repeat_interleave(G)  # candidate i = g*G + j
        for t in range(T):
            if bool(done.all()):
                break
            hh, logits = self.step(prev, hh, h, c, keys, wk, mask)
            vals, ids = torch.log_softmax(logits, 1).topk(G, 1)                                          # (R, G)
            cand = (logp.unsqueeze(1) + vals.double()).view(G, B, G).transpose(0, 1).reshape(B, G * G)
            tok = ids.view(G, B, G).transpose(0, 1).reshape(B, G * G)
            row = g_of.unsqueeze(0) * B + torch.arange(B, device=dev).unsqueeze(1)
            # rank by log p (descending), ties by row then token
            o1 = (g_of.unsqueeze(0) * V + tok).argsort(1)
            o2 = torch.sort(cand.gather(1, o1), dim=1, descending=True, stable=True).indices
            order = o1.gather(1, o2)
            cs, ts, rs = cand.gather(1, order), tok.gather(1, order), row.gather(1, order)
            valid = (cs > ninf) & ~done.unsqueeze(1)
            fin = valid & ((ts == EOS) | (t + 1 >= limit[sent]).unsqueeze(1))
            live = valid & ~fin
            before = live.long().cumsum(1) - live.long()
            taken = before < G                                   # candidates the C loop visits
            live &= taken
            fin &= taken
            if bool(fin.any()):
                sc = torch.where(fin, cs / self.lp(t + 1), torch.full_like(cs, ninf))
                mx, at = sc.max(1)
                for j in (mx > best_score[sent]).nonzero().flatten().tolist():
                    b, i = int(sent[j]), int(at[j])
                    r, y = int(rs[j, i]), int(ts[j, i])
                    best_score[b] = mx[j]
                    best[b] = hist[:t, r].tolist() + ([] if y == EOS else [y])
            # the next rows: the k-th live candidate of column j goes to row k*B + j
            parent = torch.arange(R, device=dev)
            new_logp = torch.full((R,), ninf, **f64)
            new_prev = torch.full((R,), EOS, **i64)
            jj, ii = live.nonzero(as_tuple=True)
            dest = before[jj, ii] * B + jj
            parent[dest] = rs[jj, ii]
            new_logp[dest] = cs[jj, ii]
            new_prev[dest] = ts[jj, ii]
            bound = torch.where(live, cs, torch.full_like(cs, ninf)).max(1).values / lp_limit[sent]
            bs = best_score[sent]
            done |= (live.sum(1) == 0) | ((bs > ninf) & (bs >= bound))
            hist[:t] = hist[:t, parent]
            hist[t] = new_prev
            h, c = [x[parent] for x in h], [x[parent] for x in c]
            hh, logp, prev = hh[parent], new_logp, new_prev
            if self.drop and bool(done.any()) and not bool(done.all()):
                keep = (~done).nonzero().flatten()
                rows_k = (torch.arange(G, device=dev).unsqueeze(1) * B + keep.unsqueeze(0)).reshape(-1)
                B = keep.numel()
                R = G * B
                sent, done = sent[keep], done[keep]
                keys, wk, mask = keys[keep], wk[keep], mask[keep]
                h, c = [x[rows_k] for x in h], [x[rows_k] for x in c]
                hh, logp, prev, hist = hh[rows_k], logp[rows_k], prev[rows_k], hist[:, rows_k]
        # sentences cut by the step limit: their live rows count as finished
        for j in (~done).nonzero().flatten().tolist():
            b = int(sent[j])
            for g in range(G):
                r = g * B + j
                s = float(logp[r]) / self.lp(T)
                if logp[r] > ninf and s > best_score[b]:
                    best_score[b] = s
                    best[b] = hist[:T, r].tolist()
        return best

    def translate(self, src, src_len):
        return self.greedy(src, src_len) if self.G <= 1 else self.beam_search(src, src_len)


def cmd_decode(a):
    """Translates --input with an nmt checkpoint, batched as nmt translate
    batches (consecutive --batch lines, empty lines skipped), and times the
    decoding (encoder and search) only, on --device (cpu or cuda: then the
    batches are on the GPU before the clock starts, and it stops after a
    synchronisation)."""
    import tempfile
    torch.zeros(2, 2) @ torch.zeros(2, 2)                                     # loads the BLAS
    if a.threads > 0:
        torch.set_num_threads(a.threads)
        openblas_threads(a.threads)
    cfg, stok, ttok, tensors, params = read_checkpoint(a.model)
    tmp = tempfile.mkdtemp(prefix="nmt-decode-")
    try:
        src_tok, tgt_tok = checkpoint_tokenizers(stok, ttok, tmp)
        with open(a.input, encoding="utf-8", errors="replace", newline="\n") as f:
            lines = [l.rstrip("\n").rstrip("\r") for l in f]
        src_ids = src_tok.encode(lines)
        rows = {n: r for n, _, r, _ in tensors}
        if "src_emb" not in rows or "tgt_emb" not in rows:
            raise SystemExit("decode: %s has no src_emb/tgt_emb tensors" % a.model)
        V_s, V_t = rows["src_emb"], rows["tgt_emb"]
        d, bench_a = bench_args_of(cfg, V_s, V_t)
        model = BenchModel(bench_a)
        load_nmt_weights(model, d, tensors, params)
        del params
        model.eval()
        if a.device.startswith("cuda") and not torch.cuda.is_available():
            raise SystemExit("decode: --device %s: this torch (%s) sees no CUDA device" % (a.device, torch.__version__))
        dev = torch.device(a.device)
        from torch_gpu_bench import set_tf32                                 # beside this script
        set_tf32(torch, a.tf32)                     # CUDA only: float32 unless asked, as nmt's default
        model.to(dev)
        dec_cfg = cfg.get("decode", {})
        beams = a.beam or [dec_cfg.get("beam", 5)]
        batch = a.batch or dec_cfg.get("batch", 64)
        alpha = dec_cfg.get("length_penalty", 0.6) if a.length_penalty is None else a.length_penalty
        if dec_cfg.get("coverage_penalty", 0) > 0:
            print("decode: note: the model's coverage penalty is ignored (nmt translate uses it)",
                  file=sys.stderr)
        la, lb = dec_cfg.get("max_len_a", 1.5), dec_cfg.get("max_len_b", 10)
        max_len = cfg.get("data", {}).get("max_len", 80)
        max_src = a.max_src_len or max(2 * max_len, 100)                     # as cmd_translate.c

        def batches():
            for i in range(0, len(src_ids), batch):
                cols = [k for k in range(i, min(i + batch, len(src_ids))) if src_ids[k]]
                if not cols:
                    continue
                seqs = [src_ids[k][:max_src] for k in cols]
                S = max(len(s) for s in seqs)
                src = torch.zeros((S, len(seqs)), dtype=torch.long)
                for j, s in enumerate(seqs):
                    src[:len(s), j] = torch.tensor(s)
                yield cols, src.to(dev), torch.tensor([len(s) for s in seqs]).to(dev)

        all_batches = list(batches())
        n_sent = sum(1 for s in src_ids if s)
        for beam in beams:
            dec = Decoder(model, beam, alpha, la, lb, int(la * max_src) + lb, a.drop_finished)
            warmup_s = None
            if a.warmup and all_batches:                                      # one sentence, untimed
                cols, src, src_len = all_batches[0]
                sync(a.device)
                t0 = time.perf_counter()
                dec.translate(src[:src_len[0], :1], src_len[:1])
                sync(a.device)
                warmup_s = time.perf_counter() - t0
            out = [[] for _ in lines]
            sync(a.device)
            t0 = time.perf_counter()
            for cols, src, src_len in all_batches:
                for k, y in zip(cols, dec.translate(src, src_len)):
                    out[k] = y
            sync(a.device)
            dt = time.perf_counter() - t0
            n_tok = sum(len(y) for y in out)
            text = tgt_tok.decode(out)
            text = [t if src_ids[k] else "" for k, t in enumerate(text)]
            path = a.out.replace("{beam}", str(beam))
            with (open(path, "w", encoding="utf-8") if path else sys.stdout) as f:
                f.write("".join(t + "\n" for t in text))
            print("decode: torch %s, device %s, %d threads, beam %d, batch %d, alpha %g, max length %g*S+%d%s" % (
                torch.__version__, a.device, torch.get_num_threads(), beam, batch, alpha, la, lb,
                ", finished sentences leave the batch" if a.drop_finished else ""), file=sys.stderr)
            print("decode: %d sentences, %d target tokens (EOS not counted) in %.3f s: "
                  "%.2f sentences/s, %.1f target tokens/s" % (
                      n_sent, n_tok, dt, n_sent / dt, n_tok / dt), file=sys.stderr)
            if warmup_s is not None:
                # what the first use of the libraries and kernels cost (the
                # first beam of a process pays it; later beams pay less)
                print("decode: untimed warm-up (one sentence, beam %d): %.3f s" % (beam, warmup_s), file=sys.stderr)
            if a.warm_passes > 0:
                # the input again, a.warm_passes times over, in the same process:
                # every library, kernel and batch shape has been used by then,
                # so this is the rate without the first-use costs
                sync(a.device)
                t0 = time.perf_counter()
                for _ in range(a.warm_passes):
                    for cols, src, src_len in all_batches:
                        dec.translate(src, src_len)
                sync(a.device)
                dt = time.perf_counter() - t0
                print("decode: warm, %d passes: %d sentences in %.3f s: %.2f sentences/s" % (
                    a.warm_passes, a.warm_passes * n_sent, dt, a.warm_passes * n_sent / dt), file=sys.stderr)
        n = openblas_threads()
        libs = set()
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                name = os.path.basename(parts[-1]).lower() if len(parts) >= 6 else ""
                if any(k in name for k in ("blas", "gomp")):
                    libs.add(os.path.realpath(parts[-1]))
        print("decode: blas loaded %s; openblas_get_num_threads() = %s; OPENBLAS_CORETYPE=%s" % (
            ", ".join(sorted(libs)), n, os.environ.get("OPENBLAS_CORETYPE", "(unset)")),
            file=sys.stderr)
    finally:
        import shutil
        if a.keep_spm and all(os.path.exists(os.path.join(tmp, side + ".model")) for side in ("src", "tgt")):
            os.makedirs(a.keep_spm, exist_ok=True)
            for side in ("src", "tgt"):
                shutil.copy(os.path.join(tmp, side + ".model"), os.path.join(a.keep_spm, side + ".model"))
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


# ----------------------------------------------------------------------------

def beam_list(text):
    """--beam of decode: "5" or "1,5" (positive integers)."""
    try:
        beams = [int(x) for x in text.split(",")]
    except ValueError:
        beams = []
    if not beams or min(beams) < 1:
        raise argparse.ArgumentTypeError("%r: want positive beam sizes, e.g. 5 or 1,5" % text)
    return beams


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fixtures", help="write the reference fixtures")
    f.add_argument("--out", default=FIXTURE_DIR)
    f.add_argument("--only", default="", help="comma-separated fixture names")
    c = sub.add_parser("check", help="validate the reference (and the committed fixtures)")
    c.add_argument("--fixtures", default=FIXTURE_DIR)
    c.add_argument("--quick", action="store_true", help="skip gradcheck")
    c.add_argument("--full-gradcheck", action="store_true",
                   help="gradcheck every element of every fixture model (about 2 minutes)")
    b = sub.add_parser("bench", help="PyTorch training speed for comparison")
    b.add_argument("--emb", type=int, default=256)
    b.add_argument("--hidden", type=int, default=512)
    b.add_argument("--enc-hidden", type=int, default=0)
    b.add_argument("--enc-layers", type=int, default=2)
    b.add_argument("--dec-layers", type=int, default=2)
    b.add_argument("--bidirectional", action="store_true")
    b.add_argument("--heads", type=int, default=1, help="attention heads (general score)")
    b.add_argument("--batch", type=int, default=64)
    b.add_argument("--src-vocab", type=int, default=8000)
    b.add_argument("--tgt-vocab", type=int, default=8000)
    b.add_argument("--src-len", type=int, default=14)
    b.add_argument("--tgt-len", type=int, default=15, help="target length counting EOS")
    b.add_argument("--src-ids", default="", help="file of source token ids, one sentence a line")
    b.add_argument("--tgt-ids", default="", help="file of target token ids (no BOS/EOS)")
    b.add_argument("--max-len", type=int, default=80)
    b.add_argument("--steps", type=int, default=20)
    b.add_argument("--warmup", type=int, default=3)
    b.add_argument("--threads", type=int, default=0, help="0: torch's default")
    b.add_argument("--dropout", type=float, default=0.3)
    b.add_argument("--lr", type=float, default=0.001)
    b.add_argument("--clip-norm", type=float, default=5.0)
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--device", default="cpu")
    b.add_argument("--decode", action="store_true", help="also time batched beam search")
    b.add_argument("--beam", type=int, default=5)
    b.add_argument("--decode-batches", type=int, default=3)
    dd = sub.add_parser("decode", help="translate with an nmt checkpoint in PyTorch, timed")
    dd.add_argument("--model", required=True, help="an nmt checkpoint (.nmt)")
    dd.add_argument("--input", required=True, help="source text, one sentence a line")
    dd.add_argument("--out", default="", help="translations (default: standard output)")
    dd.add_argument("--beam", type=beam_list, default=None,
                    help="1: greedy; several as 1,5, each a run of its own, --out naming {beam} "
                         "(default: the model's decode.beam)")
    dd.add_argument("--batch", type=int, default=0, help="sentences a batch (default: decode.batch)")
    dd.add_argument("--length-penalty", type=float, default=None,
                    help="GNMT alpha (default: decode.length_penalty)")
    dd.add_argument("--max-src-len", type=int, default=0,
                    help="source tokens kept (default: as nmt, max(2 data.max_len, 100))")
    dd.add_argument("--threads", type=int, default=0, help="torch and OpenBLAS threads (0: default)")
    dd.add_argument("--drop-finished", action="store_true",
                    help="finished sentences leave the batch (as nmt does; the output is the same)")
    dd.add_argument("--warm-passes", type=int, default=0,
                    help="after the timed run, time N more passes over the input (a 'warm' line)")
    dd.add_argument("--no-warmup", dest="warmup", action="store_false",
                    help="skip the untimed one-sentence warm-up")
    dd.add_argument("--keep-spm", default="", help="also copy the SentencePiece models here")
    dd.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    dd.add_argument("--tf32", action="store_true", help="on CUDA, allow TF32 in matrix products and cuDNN")
    a = ap.parse_args(argv)
    if a.cmd == "bench" and bool(a.src_ids) != bool(a.tgt_ids):
        ap.error("--src-ids and --tgt-ids go together")
    if a.cmd == "decode" and a.beam and len(a.beam) > 1 and "{beam}" not in a.out:
        ap.error("--beam %s: several beams need --out naming {beam} (one file each)" % ",".join(map(str, a.beam)))
    return {"fixtures": cmd_fixtures, "check": cmd_check, "bench": cmd_bench,
            "decode": cmd_decode}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
