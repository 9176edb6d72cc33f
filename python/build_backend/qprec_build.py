"""qprec_build — the PEP 517 build backend of python/ (pyproject.toml).

It needs nothing from PyPI: the standard library, CMake and a C compiler
(Debian's cmake and build-essential; libhdf5-dev for the run-file writer).
build_wheel configures python/ with CMake (python/CMakeLists.txt compiles
quant/, csrc/ and the trainer's recipe parser, dispatch and run-file writer
from train/ and io/ into libqprec.so) in a temporary folder and writes a
wheel holding the qprec package and that library; build_sdist packs python/
together with quant/, train/ and io/'s C sources so the sdist builds on its
own. quant/ is found at $QPREC_QUANT_DIR, else ../quant (a qprec checkout:
`pip install ./python`), else ./quant (an unpacked sdist); train/ and io/
beside it."""
import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
NAME = "qprec"


def _project():
    try:
        import tomllib
    except ImportError:  # Python < 3.11: the few keys needed, read by hand
        tomllib = None
    path = os.path.join(HERE, "pyproject.toml")
    if tomllib:
        with open(path, "rb") as f:
            return tomllib.load(f)["project"]
    text = open(path).read()
    proj = {}
    for key in ("name", "description", "requires-python"):
        m = re.search(r'^%s\s*=\s*"([^"]*)"' % re.escape(key), text, re.M)
        if m:
            proj[key] = m.group(1)
    m = re.search(r"^dependencies\s*=\s*\[([^\]]*)\]", text, re.M)
    proj["dependencies"] = re.findall(r'"([^"]+)"', m.group(1)) if m else []
    proj["optional-dependencies"] = {"runfile": ["pandas", "h5py"], "torch": ["torch"]}
    return proj


def _version():
    """qprec's version, from the one place it is written: quant/qp_version.h."""
    text = open(os.path.join(_quant_dir(), "qp_version.h")).read()
    m = re.search(r'^#define QP_VERSION "([0-9]+\.[0-9]+\.[0-9]+)"', text, re.M)
    if not m:
        raise RuntimeError("qprec: quant/qp_version.h has no line #define QP_VERSION \"MAJOR.MINOR.PATCH\"")
    return m.group(1)


def _quant_dir():
    for d in (os.environ.get("QPREC_QUANT_DIR"), os.path.join(HERE, "..", "quant"), os.path.join(HERE, "quant")):
        if d and os.path.isfile(os.path.join(d, "CMakeLists.txt")) and os.path.isfile(os.path.join(d, "qp_quant.h")):
            return os.path.abspath(d)
    raise RuntimeError("qprec: quant/ not found (install from a qprec checkout: pip install ./python, or set "
                       "QPREC_QUANT_DIR to qprec's quant/ folder)")


_TRAINER_DIRS = ("train", "io")  # the C sources of these beside quant/ go into the library and the sdist


def _trainer_files():
    """(path, path relative to quant/'s parent) of every .c and .h under train/ and io/."""
    root = os.path.dirname(_quant_dir())
    out = []
    for top in _TRAINER_DIRS:
        for r, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
            out += [(os.path.join(r, n), os.path.relpath(os.path.join(r, n), root)) for n in sorted(names)
                    if n.endswith((".c", ".h"))]
    return out


def _metadata():
    p = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {_version()}",
             f"Summary: {p.get('description', '')}", f"Requires-Python: {p.get('requires-python', '>=3.9')}"]
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    for extra, deps in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    readme = os.path.join(HERE, "README.md")
    body = open(readme).read() if os.path.exists(readme) else ""
    if body:
        lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + body


def _tag():
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{plat}"


def _build_library(tmp):
    """cmake -S python -B tmp; the built libqprec.so."""
    cmake = shutil.which("cmake")
    if not cmake:
        raise RuntimeError("qprec: cmake is needed to build libqprec.so (Debian: apt-get install cmake build-essential)")
    jobs = str(max(1, min(4, os.cpu_count() or 1)))
    cfg = [cmake, "-S", HERE, "-B", tmp, "-DCMAKE_BUILD_TYPE=Release", f"-DQPREC_QUANT_DIR={_quant_dir()}",
           f"-DCMAKE_LIBRARY_OUTPUT_DIRECTORY={tmp}/out"]
    for cmd in (cfg, [cmake, "--build", tmp, "--target", "qprec", "-j", jobs]):
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode:
            sys.stderr.write(r.stdout)
            raise RuntimeError(f"qprec: {' '.join(cmd)} failed (exit {r.returncode})")
    lib = os.path.join(tmp, "out", "libqprec.so")
    if not os.path.exists(lib):
        raise RuntimeError(f"qprec: the build made no {lib}")
    return lib


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


# ---- PEP 517 hooks ------------------------------------------------------------------
def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    dist = f"{NAME}-{version}.dist-info"
    wheel_name = f"{NAME}-{version}-{_tag()}.whl"
    with tempfile.TemporaryDirectory(prefix="qprec-build-") as tmp:
        lib = _build_library(tmp)
        files = []
        pkg = os.path.join(HERE, NAME)
        for n in sorted(os.listdir(pkg)):
            if n.endswith(".py"):
                with open(os.path.join(pkg, n), "rb") as f:
                    files.append((f"{NAME}/{n}", f.read()))
        with open(lib, "rb") as f:
            files.append((f"{NAME}/libqprec.so", f.read()))
        files.append((f"{dist}/METADATA", _metadata().encode()))
        files.append((f"{dist}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: qprec_build\nRoot-Is-Purelib: false\n"
                                        f"Tag: {_tag()}\n").encode()))
        files.append((f"{dist}/top_level.txt", f"{NAME}\n".encode()))
        record = [_record_line(a, d) for a, d in files] + [f"{dist}/RECORD,,"]
        files.append((f"{dist}/RECORD", ("\n".join(record) + "\n").encode()))
        path = os.path.join(wheel_directory, wheel_name)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for arc, data in files:
                info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
                info.external_attr = (0o755 if arc.endswith(".so") else 0o644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, data)
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    version = _version()
    base = f"{NAME}-{version}"
    name = f"{base}.tar.gz"
    quant = _quant_dir()
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        def add(src, arc):
            t.add(src, arcname=f"{base}/{arc}", recursive=False)
        for root, dirs, names in os.walk(HERE):
            dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "build", "dist") and not d.startswith("."))
            for n in sorted(names):
                if n.endswith((".pyc", ".so")):
                    continue
                p = os.path.join(root, n)
                add(p, os.path.relpath(p, HERE))
        for root, dirs, names in os.walk(quant):  # quant/ and its subfolders (simd/)
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
            for n in sorted(names):
                p = os.path.join(root, n)
                add(p, os.path.join("quant", os.path.relpath(p, quant)))
        for p, rel in _trainer_files():
            add(p, rel)
        info = _metadata().encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(info)
        t.addfile(ti, io.BytesIO(info))
    return name
