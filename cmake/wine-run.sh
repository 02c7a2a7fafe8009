#!/bin/sh
# The emulator of the Windows cross build (cmake/x86_64-w64-mingw32.cmake): runs a Windows
# program under wine64. The wine prefix (WINEPREFIX, default build/mingw/wineprefix beside this
# build) is created once, under a lock, before the first program runs: ctest starts tests side
# by side, and two wines creating one prefix at once fail. `flock -o`: the lock is the flock
# process's alone, so wine's services, which wineboot leaves running, do not hold it on after.
# Usage: wine-run.sh <wine64> <program.exe> [args...]
set -e
wine=$1
shift
: "${WINEPREFIX:=$(pwd)/wineprefix}"
: "${WINEDEBUG:=-all}"
export WINEPREFIX WINEDEBUG
mkdir -p "$(dirname "$WINEPREFIX")"
flock -o "$WINEPREFIX.lock" sh -c '[ -f "$WINEPREFIX/system.reg" ] || "$0" wineboot --init >/dev/null 2>&1' "$wine"
exec "$wine" "$@"
