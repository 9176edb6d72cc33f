#!/usr/bin/env python3
"""qtrain --device: bad values and no GPU exit 2 with one line; with a GPU,
a short run on it writes a run file that says so, matches the CPU, resumes,
takes --inject and --grad-comm, and runs Transformer Engine's NVFP4 recipe
(te-nvfp4: TE's RHT on wgrad) close to the CPU.

usage: test_qtrain_device.py QTRAIN DATA WORKDIR"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks  # noqa: E402

qtrain, data, work = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(work, exist_ok=True)
check = Checks()


def run(*args):
    p = subprocess.run([qtrain, *args], capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


small = ["--layers", "1", "--heads", "2", "--dim", "32", "--seq", "16", "--batch", "2", "--steps", "3",
         "--eval-batches", "1", "--quiet", "--data", data]

# a bad value: exit 2, one line
rc, out, err = run("--device", "gpu", *small, "--out", os.path.join(work, "bad.h5"))
check(rc == 2, f"--device gpu: exit {rc}, want 2")
check(err.count("\n") == 1 and "--device must be cpu or cuda" in err, f"--device gpu: stderr {err!r}")
rc, out, err = run("--device", *[])
check(rc == 2 and err.count("\n") == 1, f"--device without a value: exit {rc}, stderr {err!r}")

# --help documents it
rc, out, err = run("--help")
check(rc == 0 and "--device D" in out and "cuda" in out, "--help lacks --device")

# a CPU run maps no CUDA library: the backend is a module loaded for --device cuda only
env = dict(os.environ, LD_DEBUG="files")
p = subprocess.run([qtrain, "--help"], capture_output=True, text=True, env=env, timeout=600)
loaded = sorted(set(re.findall(r"file=(\S*(?:cublas|cudart|nccl|qp_backend_cuda)\S*)", p.stderr)))
check(p.returncode == 0 and "file=" in p.stderr and not loaded, f"qtrain --help loaded {loaded}")

# a module that is missing, or not a module: exit 2, one line that names it
# (a build without CUDA says so whatever the module)
for bad, why in (("/nonexistent/qp_backend_cuda.so", "No such file"), (data, "")):
    path = os.path.join(work, "module.h5")
    p = subprocess.run([qtrain, "--device", "cuda", *small, "--out", path], capture_output=True, text=True,
                       env=dict(os.environ, QP_CUDA_MODULE=bad), timeout=600)
    if p.stderr == "qtrain: --device cuda: built without CUDA\n":
        check(p.returncode == 2, f"built without CUDA: exit {p.returncode}")
        continue
    check(p.returncode == 2 and p.stderr.count("\n") == 1 and
          p.stderr.startswith("qtrain: --device cuda: cannot load the CUDA backend: " + bad) and why in p.stderr,
          f"QP_CUDA_MODULE={bad}: exit {p.returncode}, stderr {p.stderr!r}")
    check(not os.path.exists(path), f"QP_CUDA_MODULE={bad} wrote a run file")

# cuda: without a device (or CUDA) exit 2 with one line, before any file is written
path = os.path.join(work, "cuda.h5")
if os.path.exists(path):
    os.remove(path)
rc, out, err = run("--device", "cuda", *small, "--out", path)
if rc == 2:
    # the reason is the CUDA error's name (a driver/runtime mismatch must not read as "no GPU")
    check(re.fullmatch(r"qtrain: --device cuda: no CUDA device found \((cudaGetDeviceCount: cudaError\w+ \(.*\)|0 devices)\)\n",
                       err) is not None or err == "qtrain: --device cuda: built without CUDA\n",
          f"--device cuda without a GPU: stderr {err!r}")
    check(not os.path.exists(path), "--device cuda without a GPU wrote a run file")
    print("no CUDA device here: the exit-2 path was tested")
else:
    check(rc == 0, f"--device cuda with a GPU: exit {rc}: {err}")
    try:
        import h5py
        import numpy as np
        with h5py.File(path, "r") as f:
            a = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f.attrs.items()}
            check(a.get("device") == "cuda", f"device attribute {a.get('device')}")
            check(a.get("gemm_path") in ("bf16", "emulated-bf16", "fp32", "fp8-native", "mxfp8-native", "nvfp4-native"),
                  f"gemm_path {a.get('gemm_path')}")
            loss = f["train/loss"][:]
            check(len(loss) == 3 and np.all(np.isfinite(loss)), f"losses {loss}")
            pw = f["train/power_w"][:]
            if a.get("power", "").startswith("unavailable"):
                check(np.all(np.isnan(pw)), "power NaN when unavailable")
            else:
                check(a["power"].startswith("nvml, energy "), f"power attribute {a['power']!r}")
                check(np.all(np.isfinite(pw)) and np.all(pw > 0), f"power_w {pw}")
                e = f["train/energy_j"][:]
                check(np.all(np.diff(e) >= 0), f"energy not cumulative {e}")
        # the same run on the CPU: the same losses to 1e-3 (the GEMMs differ in summation order only)
        cpu = os.path.join(work, "cpu.h5")
        rc, out, err = run("--device", "cpu", *small, "--out", cpu)
        check(rc == 0, f"cpu run: exit {rc}: {err}")
        with h5py.File(cpu, "r") as f:
            lc = f["train/loss"][:]
        check(np.allclose(lc, loss, rtol=1e-3, atol=0), f"cpu losses {lc} vs cuda {loss}")
        # checkpoint and resume on the GPU: stopped after 2 of 4 steps, resumed, the same losses
        for name in ("full.h5", "resumed.h5"):
            for p in (os.path.join(work, name), os.path.join(work, name[:-3] + ".ckpt.h5")):
                if os.path.exists(p):
                    os.remove(p)
        four = [a if a != "3" else "4" for a in small]
        full, res = os.path.join(work, "full.h5"), os.path.join(work, "resumed.h5")
        rc, _, err = run("--device", "cuda", *four, "--ckpt-every", "2", "--out", full)
        check(rc == 0, f"4-step cuda run: exit {rc}: {err}")
        rc, _, err = run("--device", "cuda", *four, "--ckpt-every", "2", "--stop-after", "2", "--out", res)
        check(rc == 0, f"stopped cuda run: exit {rc}: {err}")
        rc, _, err = run("--device", "cuda", *four, "--ckpt-every", "2", "--resume", "--out", res)
        check(rc == 0, f"resumed cuda run: exit {rc}: {err}")
        with h5py.File(full, "r") as f, h5py.File(res, "r") as g:
            a, b = f["train/loss"][:], g["train/loss"][:]
            check(len(a) == 4 and len(b) == 4 and np.allclose(a, b, rtol=1e-6, atol=0),
                  f"resume on the GPU: {a} vs {b}")
        # --inject on the device (the element is written into the GPU's buffer): a NaN parameter stops the run
        rc, _, err = run("--device", "cuda", *four, "--inject", "nan:param:wte@1", "--out",
                         os.path.join(work, "inject.h5"))
        check(rc == 3 and "diverged at step 1" in err, f"--inject on the GPU: exit {rc}: {err!r}")
        # --grad-comm on the device, one process: the gradient rounded on the host as a rank would send it
        gc = os.path.join(work, "gradcomm.h5")
        rc, _, err = run("--device", "cuda", *four, "--grad-comm", "bf16", "--out", gc)
        check(rc == 0, f"--grad-comm bf16 on the GPU: exit {rc}: {err}")
        if rc == 0:
            with h5py.File(gc, "r") as f:
                e = f["train/grad_comm_rel_err"][:]
            check(np.all(np.isfinite(e)) and np.all(e > 0) and np.all(e < 0.01), f"grad_comm_rel_err {e}")
        # Transformer Engine's NVFP4 recipe: its fixed-sign RHT on the wgrad operands runs on the GPU
        # (qp_cuda_rht16_te, bit for bit quant/'s qp_rht16_te); the quantized losses as close as the
        # GEMMs' summation order leaves them
        te = {d: os.path.join(work, f"te_{d}.h5") for d in ("cuda", "cpu")}
        for d, path in te.items():
            rc, _, err = run("--device", d, *small, "--recipe", "te-nvfp4", "--out", path)
            check(rc == 0, f"te-nvfp4 on {d}: exit {rc}: {err}")
        if all(os.path.exists(p) for p in te.values()):
            with h5py.File(te["cuda"], "r") as f, h5py.File(te["cpu"], "r") as g:
                a, b = f["train/loss"][:], g["train/loss"][:]
            check(len(a) == 3 and np.all(np.isfinite(a)) and np.allclose(a, b, rtol=5e-2, atol=0),
                  f"te-nvfp4 losses cuda {a} vs cpu {b}")
    except ImportError:
        print("no h5py: run file not inspected")
sys.exit(check.summary("test_qtrain_device"))
