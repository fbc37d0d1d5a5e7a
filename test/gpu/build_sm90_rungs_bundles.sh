#!/usr/bin/env bash
# Bundles for test/gpu/test_scores_softmax.py into build/sm90_rungs (or $1): the
# warp-specialised TMA + wgmma kernel whose consumers mask, reduce and normalise the
# accumulator with the rungs every kernel shares (test/gpu/scores_softmax_sm90.tile): the
# cooperative consumers (two groups split each 128-row tile) at D = 128 and 64, a wide key
# tile, a deep ring over 4 k-tiles, and ping-pong consumers (a group holds whole tiles: at
# BM = 128 two 64-row wgmma tiles a group, its warps interleaved), bf16 too.
set -euo pipefail
out=${1:-build/sm90_rungs}
rm -rf "$out" && mkdir -p "$out"
b() { name=$1; shift; tilec build test/gpu/scores_softmax_sm90.tile -o "$out/$name" "$@" >/dev/null; }
b coop_d128
b coop_d64_n256 -D D=64 -D BN=256
b coop_d256_s3 -D D=256 -D STAGES=3 -D BN=64
b pp_bm128 -D PP=1
b pp_bm64_n256 -D PP=1 -D BM=64 -D BN=256
b coop_bf16 -D T=bf16
echo "built $(find "$out" -name manifest.json | wc -l) bundles in $out"
