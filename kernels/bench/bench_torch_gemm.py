#!/usr/bin/env python3
"""bench_torch_gemm.py — PyTorch's GEMMs on the shapes bench_gemm times, in the
same call, for a side-by-side comparison (kernels/bench/device_check.sh):
torch.matmul in BF16 and torch._scaled_mm in FP8 (E4M3 x E4M3, per-tensor
scales, FP32 output where PyTorch has it, no fast accumulation — cuBLASLt's
mode bench_gemm uses), D = A . B^T at n = 4096 and 8192 on random operands.
Median of RUNS (default 20) CUDA-event-timed products after 5 warm-ups, as
bench_gemm. Prints one line per product in bench_gemm's table format:
    path                  n         ms    TFLOP/s
Exits 77 without CUDA in PyTorch, 1 on an error.
usage: bench_torch_gemm.py [RUNS]"""
import statistics
import sys

try:
    import torch
except ImportError as e:
    print(f"bench_torch_gemm: no PyTorch ({e}), SKIP")
    sys.exit(77)

if not torch.cuda.is_available():
    print("bench_torch_gemm: PyTorch sees no CUDA device, SKIP")
    sys.exit(77)

runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
warmup = 5
dev = torch.device("cuda")
print(f"bench_torch_gemm: torch {torch.__version__} (CUDA {torch.version.cuda}), {torch.cuda.get_device_name(0)}, "
      f"median of {runs} runs")


def median_ms(fn):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for i in range(warmup + runs):
        start.record()
        fn()
        end.record()
        end.synchronize()
        if i >= warmup:
            ts.append(start.elapsed_time(end))
    return statistics.median(ts)


rows = []
failed = 0
gen = torch.Generator(device=dev)
gen.manual_seed(1)
for n in (4096, 8192):
    a = torch.rand((n, n), device=dev, generator=gen, dtype=torch.float32).mul_(2).sub_(1)
    b = torch.rand((n, n), device=dev, generator=gen, dtype=torch.float32).mul_(2).sub_(1)
    flop = 2.0 * n * n * n
    a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)
    ms = median_ms(lambda: torch.matmul(a16, b16.t()))
    rows.append(("torch.matmul bf16", n, ms, flop / (ms * 1e-3) / 1e12))
    del a16, b16
    # FP8: bench_gemm's operands are E4M3 of U(-1,1)*448, decode scale 1/448
    a8 = (a * 448).to(torch.float8_e4m3fn)
    b8 = (b * 448).to(torch.float8_e4m3fn)
    s = torch.tensor(1.0 / 448, device=dev)
    out = None
    for dt in (torch.float32, torch.bfloat16):
        try:
            torch._scaled_mm(a8, b8.t(), scale_a=s, scale_b=s, out_dtype=dt, use_fast_accum=False)
            out = dt
            break
        except (RuntimeError, TypeError) as e:
            print(f"  torch._scaled_mm out_dtype {dt}: {str(e).splitlines()[0]}")
    if out is None:
        failed += 1
        continue
    ms = median_ms(lambda: torch._scaled_mm(a8, b8.t(), scale_a=s, scale_b=s, out_dtype=out, use_fast_accum=False))
    rows.append((f"torch._scaled_mm e4m3{'' if out == torch.float32 else ' (bf16 out)'}", n, ms,
                 flop / (ms * 1e-3) / 1e12))
    del a, b, a8, b8
    torch.cuda.empty_cache()

print(f"\n{'path':<30} {'n':>6} {'ms':>10} {'TFLOP/s':>10}")
for name, n, ms, tf in rows:
    print(f"{name:<30} {n:>6} {ms:>10.3f} {tf:>10.1f}")
sys.exit(1 if failed else 0)
