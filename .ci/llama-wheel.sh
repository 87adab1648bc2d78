#!/usr/bin/env bash
# Build (once) and install llama-cpp-python with the portable CPU flags from DESIGN.md.
# The wheel is kept in a folder keyed by version and flags, never in pip's cache, which ignores CMAKE_ARGS.
set -euo pipefail
PY=${1:-python3}
VERSION=${LEAF_LLAMA_VERSION:-0.3.36}
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
key=$(printf '%s %s' "$VERSION" "$CMAKE_ARGS" | sha256sum | cut -c1-16)
dir="${LEAF_WHEEL_CACHE:-$HOME/.cache/leaf-ci/wheels}/llama-cpp-python-$VERSION-$key"
if ! compgen -G "$dir/llama_cpp_python-*.whl" >/dev/null; then
  echo "building llama-cpp-python $VERSION (portable flags; 5-10 minutes on 2 cores)"
  tmp="$dir.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  "$PY" -m pip wheel -q --no-cache-dir --no-deps -w "$tmp" "llama-cpp-python==$VERSION"
  rm -rf "$dir" && mv "$tmp" "$dir"
fi
# --force-reinstall: an already installed llama-cpp-python of the same version may be a native build.
"$PY" -m pip install -q --force-reinstall --no-deps "$dir"/llama_cpp_python-*.whl
"$PY" -m pip install -q "$dir"/llama_cpp_python-*.whl  # its dependencies
