#!/usr/bin/env bash
# Here, before a GPU call: builds the named targets for Hopper (sm_90a) without the optional I/O libraries (no
# FFmpeg, libtiff, libpng, libjpeg, OpenEXR or libmicrohttpd, so the binaries need only OpenBLAS, which
# carry/deps.tar.xz holds, and the CUDA toolkit's libraries, which the GPU machine has) and packs them as
# carry/NAME.xz with carry/BUILD_COMMIT. The GPU machine then spends no time building: carry_deps.sh unpacks
# them, and tiles_acceptance.sh times carry/ckey with CK_PREBUILT=carry/ckey.
# Usage (repository root): scripts/device/prebuild.sh [TARGET ...]      (default: ckey test_cuda_ops)
set -euo pipefail
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(ckey test_cuda_ops)
cmake -S . -B build-prebuilt -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
    -DPKG_CONFIG_EXECUTABLE=/bin/false > /dev/null
cmake --build build-prebuilt --target "${targets[@]}"
mkdir -p carry
for t in "${targets[@]}"; do
    bin=$(find build-prebuilt -name "$t" -type f -perm -u+x | head -1)
    [ -n "$bin" ] || { echo "prebuild: no binary for $t" >&2; exit 1; }
    xz -T0 -6 -c "$bin" > "carry/$t.xz"
    rm -f "carry/$t" # a stale unpacked copy would win over the new archive
done
rev=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- src include CMakeLists.txt tests || rev="$rev+changes"
echo "$rev" > carry/BUILD_COMMIT
du -ch carry/*.xz | tail -1
