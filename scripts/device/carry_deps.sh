# Sourced by the device scripts (repository root): the carried Debian packages (OpenBLAS, OpenEXR, their libraries),
# unpacked from carry/deps.tar.xz into carry/deps where not yet done. Sets CK_DEPS_OPTS (the CMake options that point
# the build at them, empty where nothing is carried) and puts their libraries on LD_LIBRARY_PATH.
CK_DEPS_OPTS=""
[ -d carry/deps ] || [ ! -f carry/deps.tar.xz ] || tar -xJf carry/deps.tar.xz -C carry
if [ -d carry/deps ]; then
    CK_DEPS_OPTS="-DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps"
    export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
fi
# binaries built beforehand by prebuild.sh (carry/NAME.xz): unpacked once, next to their archives, and the
# toolkit's and cuDNN's libraries put on LD_LIBRARY_PATH where this machine keeps them (no build here to find them)
prebuilt=0
for f in carry/*.xz; do
    case $f in *.tar.xz) continue ;; esac
    [ -e "$f" ] || continue
    prebuilt=1
    [ -e "${f%.xz}" ] || { xz -dkc "$f" > "${f%.xz}" && chmod +x "${f%.xz}"; }
done
if [ $prebuilt = 1 ]; then
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib $(python3 -c 'import nvidia.cudnn as m; print(m.__path__[0] + "/lib")' 2> /dev/null); do
        [ -d "$d" ] && LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:$d
    done
    export LD_LIBRARY_PATH
fi
