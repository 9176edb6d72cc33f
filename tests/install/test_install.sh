#!/usr/bin/env bash
# test_install.sh — `cmake --install` into a temporary prefix, moved before
# anything is used, then everything the prefix promises (docs/install.md):
#   - the layout: the four tools, libqpquant (shared and static), the public
#     headers, the CMake package, qprec.pc, share/qprec/{plots,experiments,
#     examples}, the four man pages; nothing installed names the source or
#     the build tree;
#   - every installed header compiles on its own (C and C++), found by
#     nothing but its own folder;
#   - the installed example, built with pkg-config (shared, and static with
#     --static) and with find_package(qprec) (qprec::quant and
#     qprec::quant_static), prints exactly the build tree's example's bytes,
#     and its version is the package's (pkg-config, CMake);
#   - every man page is the build's, `man` finds it through MANPATH, and it
#     renders with `man -l` without a warning;
#   - from a folder outside both trees: the installed qtrain trains on a small
#     generated text file, qplot draws its loss from the prefix's scripts,
#     qerr reads the run's checkpoint, qsweep --dry-run runs the prefix's
#     experiment file with the qtrain beside it, and every tool's --version
#     is the library's qp_version().
# Usage: test_install.sh BUILD_DIR SOURCE_DIR WORK_DIR LIBDIR
set -euo pipefail

BUILD=$(cd "$1" && pwd) SRC=$(cd "$2" && pwd) WORK=$3 LIBDIR=$4
fail() { echo "test_install: FAIL: $*" >&2; exit 1; }

rm -rf "$WORK"
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
cmake --install "$BUILD" --prefix "$WORK/staged" > "$WORK/install.log" || fail "cmake --install (see $WORK/install.log)"
# the prefix is moved before anything reads it: nothing may remember where it was installed
mv "$WORK/staged" "$WORK/prefix"
P=$WORK/prefix

# ---- layout --------------------------------------------------------------------
for f in bin/qtrain bin/qsweep bin/qplot bin/qerr "$LIBDIR/libqpquant.a" "$LIBDIR/pkgconfig/qprec.pc" \
         "$LIBDIR/cmake/qprec/qprecConfig.cmake" "$LIBDIR/cmake/qprec/qprecConfigVersion.cmake" \
         include/qprec/qp_quant.h share/qprec/examples/quantize.c share/qprec/examples/CMakeLists.txt \
         share/qprec/examples/Makefile; do
    [ -e "$P/$f" ] || fail "not installed: $f"
done
ls "$P/$LIBDIR"/libqpquant.so* > /dev/null 2>&1 || fail "not installed: $LIBDIR/libqpquant.so"
for gp in "$SRC"/plots/*.gp; do
    cmp -s "$gp" "$P/share/qprec/plots/$(basename "$gp")" || fail "share/qprec/plots/$(basename "$gp") is not plots/'s"
done
for ini in "$SRC"/experiments/*.ini; do
    cmp -s "$ini" "$P/share/qprec/experiments/$(basename "$ini")" || fail "share/qprec/experiments/$(basename "$ini") missing"
done
[ -z "$(find "$P/include/qprec" -name '*internal*' -o -name '*simd*')" ] || fail "a private header is installed"
# a compiled-in source or build path would break once either is gone
hits=$(grep -rlF -e "$SRC/" -e "$BUILD/" "$P" || true)
[ -z "$hits" ] || fail "installed files name the source or build tree: $hits"

# ---- headers ---------------------------------------------------------------------
n=0
for h in "$P"/include/qprec/*.h; do
    cc -std=c11 -Wall -Wextra -Werror -fsyntax-only -x c "$h" || fail "$(basename "$h") does not compile on its own (C)"
    c++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -x c++ "$h" || fail "$(basename "$h") does not compile on its own (C++)"
    n=$((n + 1))
done
[ "$n" -ge 7 ] || fail "only $n public headers"

# ---- the example, four ways, against the build tree's ------------------------------
"$BUILD/examples/quantize" > "$WORK/tree.out" || fail "the build tree's example failed"
grep -q "decoded by hand equal qp_dequantize" "$WORK/tree.out" || fail "the example printed no check"
version=$(sed -n '1s/^qprec \([^:]*\):.*/\1/p' "$WORK/tree.out")
export PKG_CONFIG_PATH=$P/$LIBDIR/pkgconfig
[ "$(pkg-config --modversion qprec)" = "$version" ] || fail "qprec.pc says $(pkg-config --modversion qprec), qp_version() $version"

cp -r "$P/share/qprec/examples" "$WORK/ex-pc"
make -s -C "$WORK/ex-pc" > "$WORK/make.log" 2>&1 || { cat "$WORK/make.log" >&2; fail "make with pkg-config"; }
# (ldd's output read whole first: grep -q leaving early would fail the pipe)
loads=$(ldd "$WORK/ex-pc/quantize")
grep -q "libqpquant.so.* => $P/" <<< "$loads" || fail "the pkg-config build does not load the prefix's libqpquant.so"
# static: the archive, plus what pkg-config --static adds (OpenMP's runtime)
libs_static=$(pkg-config --static --libs qprec)
# shellcheck disable=SC2046
cc -O2 $(pkg-config --cflags qprec) -o "$WORK/ex-pc/quantize_static" "$WORK/ex-pc/quantize.c" \
    -Wl,-Bstatic -lqpquant -Wl,-Bdynamic $libs_static || fail "static link with pkg-config --static ($libs_static)"
loads=$(ldd "$WORK/ex-pc/quantize_static")
! grep -q libqpquant <<< "$loads" || fail "the static build loads libqpquant.so"

cmake -S "$P/share/qprec/examples" -B "$WORK/ex-cmake" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_BUILD_TYPE=Release \
    > "$WORK/cmake.log" 2>&1 || { cat "$WORK/cmake.log" >&2; fail "find_package(qprec) project: configure"; }
cmake --build "$WORK/ex-cmake" > "$WORK/cmake-build.log" 2>&1 || { cat "$WORK/cmake-build.log" >&2; fail "find_package(qprec) project: build"; }
grep -q "qprec_DIR:PATH=$P/$LIBDIR/cmake/qprec" "$WORK/ex-cmake/CMakeCache.txt" || fail "find_package found another qprec"
grep -qF "set(PACKAGE_VERSION \"$version\")" "$P/$LIBDIR/cmake/qprec/qprecConfigVersion.cmake" ||
    fail "the CMake package's version is not qp_version()'s $version"
for exe in "$WORK/ex-pc/quantize" "$WORK/ex-pc/quantize_static" "$WORK/ex-cmake/quantize" "$WORK/ex-cmake/quantize_static"; do
    "$exe" > "$exe.out" || fail "$exe failed"
    cmp "$WORK/tree.out" "$exe.out" || fail "$exe prints other bytes than the build tree's example"
done

# ---- man pages ------------------------------------------------------------------
for t in qtrain qsweep qplot qerr; do
    page=$P/share/man/man1/$t.1
    [ -f "$page" ] || fail "no man page share/man/man1/$t.1"
    cmp -s "$BUILD/share/man/man1/$t.1" "$page" || fail "share/man/man1/$t.1 is not the build's page"
    [ "$(MANPATH=$P/share/man man -w "$t")" = "$page" ] || fail "MANPATH=PREFIX/share/man man $t finds another page"
    MANWIDTH=80 man -l --warnings "$page" > "$WORK/$t.man" 2> "$WORK/$t.man.err" || fail "man -l $t.1"
    [ ! -s "$WORK/$t.man.err" ] || fail "man -l $t.1 warns: $(head -3 "$WORK/$t.man.err")"
    grep -q "^NAME" "$WORK/$t.man" && grep -q "$t" "$WORK/$t.man" || fail "$t.1 renders without NAME or its name"
done

# ---- the tools, from a folder outside both trees ------------------------------------
mkdir "$WORK/outside"
cd "$WORK/outside"
awk 'BEGIN { split("the king and queen of a small town said that we shall go to see her father now", w, " ");
             s = 7; for (i = 0; i < 3000; i++) { line = "";
               for (j = 0; j < 8; j++) { s = (s * 69069 + 1) % 4294967296; line = line w[1 + int(s / 65536) % 18] " " }
               print line "." } }' > corpus.txt
env -u QP_PLOTS_DIR "$P/bin/qtrain" --data corpus.txt --layers 2 --heads 2 --dim 32 --seq 16 --batch 4 --steps 20 \
    --warmup 5 --eval-every 10 --eval-batches 2 --qerr-every 10 --threads 1 --recipe fp8 --seed 1 --quiet --out run.h5 \
    > qtrain.log 2>&1 || { cat qtrain.log >&2; fail "installed qtrain"; }
env -u QP_PLOTS_DIR "$P/bin/qplot" loss run.h5 -o loss.png > qplot.log 2>&1 || { cat qplot.log >&2; fail "installed qplot"; }
[ "$(head -c 8 loss.png | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "qplot wrote no PNG"
"$P/bin/qerr" run.ckpt.h5 --formats nvfp4,mxfp8 > qerr.txt 2> qerr.log || { cat qerr.log >&2; fail "installed qerr"; }
grep -q "^/params/.* nvfp4 " qerr.txt && grep -q "^/params/.* mxfp8 " qerr.txt || fail "qerr reported no weights: $(head -3 qerr.txt)"
"$P/bin/qsweep" "$P/share/qprec/experiments/quick.ini" --out sweep --data corpus.txt --dry-run > qsweep.log 2>&1 ||
    { cat qsweep.log >&2; fail "installed qsweep --dry-run"; }
grep -qF "$P/bin/qtrain" qsweep.log || fail "qsweep does not run the qtrain beside it: $(head -3 qsweep.log)"
for t in qtrain qsweep qplot qerr; do
    [ "$("$P/bin/$t" --version)" = "$t $version" ] || fail "$t --version says '$("$P/bin/$t" --version)', want '$t $version'"
done
echo "test_install: ok ($n headers, example x4 = build tree, 4 man pages, tools from a moved prefix; version $version)"
