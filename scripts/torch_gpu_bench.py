#!/usr/bin/env python3
"""torch_gpu_bench.py: the PyTorch side of the GPU benchmark (scripts/gpu-check.sh).

Trains, for a few timed steps after a warm-up, a PyTorch model of the same
sizes and equations as nmt's bench configuration: embeddings, a
bidirectional first encoder layer (K/2 per direction) and unidirectional
layers above it (torch.nn.LSTM, i.e. cuDNN on a GPU), a learned bridge
(tanh(W h) for h, W c for c), Luong general global attention with input
feeding, h~ = tanh(W_c [c; h]), the output layer, label-smoothed
cross-entropy (0.1), gradient clipping (5) and one Adam step, in float32
(TF32 allowed in matmuls and cuDNN with --tf32, as NMT_TF32=1 does for nmt).
The batches have the shape of bench_train's --synthetic batches: B
sentences, every one S source and T target positions (T counts the EOS), no
padding, random ids; target tokens per step = B * T, as nmt counts them.

With input feeding the decoder input of step t needs h~ of step t-1, so the
decoder runs step by step; two decoders are timed, each with its own model:
  cudnn  torch.nn.LSTM(num_layers=L_d) called once per step (cuDNN)
  cell   torch.nn.LSTMCell per layer and step (PyTorch's fused cell kernels)
The best of the two is reported as "torch best".

It also prints the model FLOPs of one training step from the formula of
docs/benchmarks.md (section "FLOP count of one training step") and, with --peak, the rate of one large square float32 GEMM
(torch.matmul, cuBLAS) with TF32 on and off: the denominator for "fraction
of the TF32 GEMM rate".

    python3 scripts/torch_gpu_bench.py --device cuda --tf32 --peak \\
        --emb 256 --hidden 512 --enc-layers 2 --dec-layers 2 --batch 64 \\
        --src-len 13 --tgt-len 16 --src-vocab 8000 --tgt-vocab 8000
    python3 scripts/torch_gpu_bench.py --device cpu --emb 32 --hidden 64 \\
        --batch 8 --src-len 7 --tgt-len 9 --src-vocab 100 --tgt-vocab 120 --steps 3
    python3 scripts/torch_gpu_bench.py --flops-only ...   (no torch needed)

Output: "key: value" lines. Exit status 3 when torch (or CUDA in torch, for
--device cuda) is unavailable, with a line "unavailable: REASON".
"""
import argparse
import sys
import time


def model_flops(E, H, K, L_e, L_d, B, S, T, V, bidirectional=True, input_feed=True):
    """GEMM FLOPs of one training step (forward + backward = 3 x forward).

    Forward multiply-adds, 2 FLOPs each; gate blocks are 4 wide:
      encoder layer 0, bidirectional (K/2 per direction, both directions):
          input 2 * 2BS E 4(K/2) = 8BSEK, recurrent 2 * 2BS (K/2) 4(K/2) = 4BSK^2
      (unidirectional first layer: input 8BSEK, recurrent 8BSK^2)
      encoder layers 1..L_e-1: input 8BSK^2 + recurrent 8BSK^2
      bridge (h and c):            2 * 2B K (L_d H)
      attention key projection W_a: 2BS K H   (general score, once per batch)
      decoder layer 0: input 8BT (E + H) H with input feeding (8BTEH without),
                       recurrent 8BTH^2
      decoder layers 1..L_d-1:     8BTH^2 + 8BTH^2
      attention scores and context: 2BTSH + 2BTSK
      h~ = tanh(W_c [c; h]):       2BT (K + H) H
      output layer:                2BT H V
    Backward: every GEMM Y = X W gives dX = dY W^T and dW = X^T dY, twice the
    forward's FLOPs, so one step is 3 x forward. Elementwise work (gates,
    softmax, loss, Adam) is not counted."""
    f = 0.0
    if bidirectional:
        f += 8 * B * S * E * K + 4 * B * S * K * K
    else:
        f += 8 * B * S * E * K + 8 * B * S * K * K
    f += (L_e - 1) * 16 * B * S * K * K
    f += 4 * B * K * L_d * H
    f += 2 * B * S * K * H
    f += 8 * B * T * (E + (H if input_feed else 0)) * H + 8 * B * T * H * H
    f += (L_d - 1) * 16 * B * T * H * H
    f += 2 * B * T * S * H + 2 * B * T * S * K
    f += 2 * B * T * (K + H) * H
    f += 2 * B * T * H * V
    return 3 * f


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda", help="cuda or cpu (default cuda)")
    p.add_argument("--emb", type=int, default=256)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--enc-hidden", type=int, default=0, help="encoder output size K (default: hidden)")
    p.add_argument("--enc-layers", type=int, default=2)
    p.add_argument("--dec-layers", type=int, default=2)
    p.add_argument("--unidirectional", action="store_true", help="first encoder layer one direction")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--src-len", type=int, default=13)
    p.add_argument("--tgt-len", type=int, default=16, help="target positions, EOS included")
    p.add_argument("--src-vocab", type=int, default=8000)
    p.add_argument("--tgt-vocab", type=int, default=8000)
    p.add_argument("--dropout", type=float, default=0.3)
    p.add_argument("--clip-norm", type=float, default=5.0)
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--decoders", default="cudnn,cell", help="which decoders to time (cudnn, cell)")
    p.add_argument("--tf32", action="store_true", help="allow TF32 in matmuls and cuDNN")
    p.add_argument("--peak", action="store_true", help="also time one large square GEMM (TF32 on and off)")
    p.add_argument("--peak-size", type=int, default=0, help="its size (default 8192 on cuda, 1024 on cpu)")
    p.add_argument("--threads", type=int, default=0, help="CPU threads for torch (0: torch's default)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--flops-only", action="store_true", help="print the FLOP count and stop (no torch)")
    a = p.parse_args(argv)
    a.K = a.enc_hidden or a.hidden
    a.bidirectional = not a.unidirectional
    if a.bidirectional and a.K % 2:
        p.error("a bidirectional first layer needs an even encoder size")
    for name in ("emb", "hidden", "enc_layers", "dec_layers", "batch", "src_len", "tgt_len", "steps"):
        if getattr(a, name) < 1:
            p.error("--%s must be >= 1" % name.replace("_", "-"))
    if a.src_vocab < 5 or a.tgt_vocab < 5:
        p.error("vocabularies need at least 5 ids")
    return a


def print_flops(a):
    fl = model_flops(a.emb, a.hidden, a.K, a.enc_layers, a.dec_layers, a.batch, a.src_len, a.tgt_len,
                     a.tgt_vocab, a.bidirectional)
    print("model: emb %d hidden %d enc_hidden %d enc_layers %d dec_layers %d bidirectional %s "
          "vocab %d/%d batch B %d S %d T %d" % (a.emb, a.hidden, a.K, a.enc_layers, a.dec_layers,
                                                 a.bidirectional, a.src_vocab, a.tgt_vocab, a.batch,
                                                 a.src_len, a.tgt_len))
    print("formula GFLOP per step: %.4f" % (fl / 1e9))
    return fl


def set_tf32(torch, on):
    """TF32 on or off in CUDA matmuls (the stable switch, torch >= 1.12) and
    in cuDNN, its RNNs too (its legacy switch, where the torch has it).
    reference.py decode uses it too."""
    torch.set_float32_matmul_precision("high" if on else "highest")
    try:
        torch.backends.cudnn.allow_tf32 = on
    except Exception:  # noqa: BLE001 (a torch without the legacy switch)
        pass


def main(argv):
    a = parse_args(argv)
    fl = print_flops(a)
    if a.flops_only:
        return 0
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 (any import failure means no torch)
        print("unavailable: no torch in %s (%s)" % (sys.executable, e))
        return 3
    dev = a.device
    if dev.startswith("cuda") and not torch.cuda.is_available():
        print("unavailable: torch %s sees no CUDA device (torch.cuda.is_available() is False)" % torch.__version__)
        return 3
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    on_gpu = dev.startswith("cuda")
    set_tf32(torch, a.tf32)
    torch.backends.cudnn.benchmark = True
    nn = torch.nn
    print("torch: %s, cuda %s, cudnn %s, device %s, TF32 %s" % (
        torch.__version__, torch.version.cuda,
        torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else "none",
        torch.cuda.get_device_name(torch.device(dev)) if on_gpu else "cpu (%d threads)" % torch.get_num_threads(),
        "on" if a.tf32 else "off") + " (float32 matmul precision %s)" % torch.get_float32_matmul_precision())

    def sync():
        if on_gpu:
            torch.cuda.synchronize()

    class Model(nn.Module):
        def __init__(self, cell):
            super().__init__()
            E, H, K, L_d = a.emb, a.hidden, a.K, a.dec_layers
            self.H, self.L_d, self.p, self.cell = H, L_d, a.dropout, cell
            self.src_emb = nn.Embedding(a.src_vocab, E)
            self.tgt_emb = nn.Embedding(a.tgt_vocab, E)
            self.enc0 = nn.LSTM(E, K // 2 if a.bidirectional else K, bidirectional=a.bidirectional)
            self.enc_rest = nn.LSTM(K, K, num_layers=a.enc_layers - 1,
                                    dropout=a.dropout if a.enc_layers > 2 else 0.0) if a.enc_layers > 1 else None
            self.bridge_h = nn.Linear(K, L_d * H)
            self.bridge_c = nn.Linear(K, L_d * H)
            if cell:
                self.dec = nn.ModuleList([nn.LSTMCell(E + H if l == 0 else H, H) for l in range(L_d)])
            else:
                self.dec = nn.LSTM(E + H, H, num_layers=L_d, dropout=a.dropout if L_d > 1 else 0.0)
            self.attn_Wa = nn.Linear(K, H, bias=False)
            self.out_Wc = nn.Linear(K + H, H, bias=False)
            self.out = nn.Linear(H, a.tgt_vocab)
            for w in self.parameters():
                nn.init.uniform_(w, -0.1, 0.1)

        def forward(self, src, tgt_in, tgt_out):
            B, H, L_d, p = src.shape[1], self.H, self.L_d, self.p
            x = F.dropout(self.src_emb(src), p, self.training)               # (S, B, E)
            out, (h, c) = self.enc0(x)
            if a.bidirectional:
                h, c = torch.cat([h[0], h[1]], 1), torch.cat([c[0], c[1]], 1)
            else:
                h, c = h[0], c[0]
            if self.enc_rest is not None:
                out, (h, c) = self.enc_rest(F.dropout(out, p, self.training))
                h, c = h[-1], c[-1]
            keys = out.transpose(0, 1)                                        # (B, S, K)
            wk = self.attn_Wa(keys)                                           # (B, S, H)
            hb = torch.tanh(self.bridge_h(h)).view(B, L_d, H).transpose(0, 1).contiguous()
            cb = self.bridge_c(c).view(B, L_d, H).transpose(0, 1).contiguous()
            emb = F.dropout(self.tgt_emb(tgt_in), p, self.training)           # (T, B, E)
            hh = keys.new_zeros(B, H)
            if self.cell:
                hs, cs = list(hb.unbind(0)), list(cb.unbind(0))
            else:
                state = (hb, cb)
            outs = []
            for t in range(tgt_in.shape[0]):
                inp = torch.cat([emb[t], hh], 1)
                if self.cell:
                    for l, cell in enumerate(self.dec):
                        hs[l], cs[l] = cell(inp, (hs[l], cs[l]))
                        inp = F.dropout(hs[l], p, self.training) if l + 1 < L_d else hs[l]
                    top = hs[-1]
                else:
                    o, state = self.dec(inp.unsqueeze(0), state)
                    top = o[0]
                e = torch.bmm(wk, top.unsqueeze(2)).squeeze(2)                # (B, S)
                ctx = torch.bmm(torch.softmax(e, 1).unsqueeze(1), keys).squeeze(1)
                hh = torch.tanh(self.out_Wc(torch.cat([ctx, top], 1)))
                outs.append(F.dropout(hh, p, self.training))
            logits = self.out(torch.stack(outs))                              # (T, B, V)
            return F.cross_entropy(logits.reshape(-1, logits.shape[2]), tgt_out.reshape(-1),
                                   label_smoothing=0.1)

    g = torch.Generator().manual_seed(a.seed)
    B, S, T = a.batch, a.src_len, a.tgt_len
    src = torch.randint(4, a.src_vocab, (S, B), generator=g)
    words = torch.randint(4, a.tgt_vocab, (T - 1, B), generator=g)
    tgt_in = torch.cat([torch.full((1, B), 2, dtype=torch.long), words])     # BOS, words
    tgt_out = torch.cat([words, torch.full((1, B), 3, dtype=torch.long)])    # words, EOS
    src, tgt_in, tgt_out = src.to(dev), tgt_in.to(dev), tgt_out.to(dev)
    tokens_src, tokens_tgt = B * S, B * T

    best = None
    for name in [d.strip() for d in a.decoders.split(",") if d.strip()]:
        if name not in ("cudnn", "cell"):
            print("bad decoder name %r (cudnn, cell)" % name)
            return 2
        torch.manual_seed(a.seed)
        model = Model(cell=(name == "cell")).to(dev)
        model.train()
        opt = torch.optim.Adam(model.parameters(), lr=a.lr)
        if on_gpu:
            torch.cuda.reset_peak_memory_stats()

        def step():
            opt.zero_grad(set_to_none=True)
            loss = model(src, tgt_in, tgt_out)
            loss.backward()
            if a.clip_norm > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip_norm)
            opt.step()
            return loss

        for _ in range(a.warmup):
            step()
        sync()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            loss = step()
        sync()
        dt = (time.perf_counter() - t0) / a.steps
        nparams = sum(w.numel() for w in model.parameters())
        print("torch %s parameters: %d" % (name, nparams))
        print("torch %s seconds per step: %.5f (loss %.4f after %d steps)" % (name, dt, loss.item(),
                                                                            a.warmup + a.steps))
        print("torch %s tgt tokens/s: %.1f" % (name, tokens_tgt / dt))
        print("torch %s src tokens/s: %.1f" % (name, tokens_src / dt))
        print("torch %s achieved GFLOP/s (formula): %.1f" % (name, fl / dt / 1e9))
        if on_gpu:
            print("torch %s peak CUDA memory MiB: %.0f allocated, %.0f reserved" % (
                name, torch.cuda.max_memory_allocated() / 2**20, torch.cuda.max_memory_reserved() / 2**20))
        if best is None or dt < best[1]:
            best = (name, dt)
        del model, opt
        if on_gpu:
            torch.cuda.empty_cache()
    if best:
        print("torch best: %s" % best[0])
        print("torch best tgt tokens/s: %.1f" % (tokens_tgt / best[1]))
        print("torch best seconds per step: %.5f" % best[1])

    if a.peak:
        n = a.peak_size or (8192 if on_gpu else 1024)
        x = torch.randn(n, n, device=dev)
        y = torch.randn(n, n, device=dev)
        for tf32 in (True, False):
            set_tf32(torch, tf32)
            torch.matmul(x, y)
            sync()
            reps, bestt = (20 if on_gpu else 3), 1e30
            for _ in range(3):
                t0 = time.perf_counter()
                for _ in range(reps):
                    torch.matmul(x, y)
                sync()
                bestt = min(bestt, (time.perf_counter() - t0) / reps)
            print("gemm %s GFLOP/s (%d^3 sgemm, torch.matmul): %.1f" % ("tf32" if tf32 else "fp32", n,
                                                                         2.0 * n ** 3 / bestt / 1e9))
        set_tf32(torch, a.tf32)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
