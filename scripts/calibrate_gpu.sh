#!/usr/bin/env bash
# A measured cost profile of a real model's shapes on this GPU, in one command of at most ~10 minutes: it runs
# `python -m ticktock.calibrate --gpu` (ticktock/calibrate.py, GPU_PRESET): MiniCPM-o 4.5's shapes by default (a
# Qwen3-8B-shaped LLM plus the Whisper-medium streaming audio encode), bf16, sdpa, random weights (the cost does not
# depend on the weights, so nothing is downloaded). Gander, Realtime-Venus and LWS share these shapes.
# It checks for a GPU first (one line if this process sees none), names the profile after the GPU's full name and the
# model, records the driver, torch, CUDA and cuDNN versions in it, and prints the run to start with it next.
#
#   bash scripts/calibrate_gpu.sh                     # -> configs/profiles/nvidia-h100-80gb-hbm3-minicpmo45.yaml (on an H100)
#   bash scripts/calibrate_gpu.sh model=gander        # any calibrate override: model=, out=, device=cuda:1, repeats=...
#   OVERWRITE=1 bash scripts/calibrate_gpu.sh         # replaces that file when it exists already (or: overwrite=true)
#   bash scripts/calibrate_gpu.sh my-gpu.yaml         # a first argument without '=' is the profile's file (out=)
set -euo pipefail
cd "$(dirname "$0")/.."
python=python
if [ -x .venv/bin/python ]; then python=.venv/bin/python; fi   # the checkout's venv, activated or not
args=()
if [ $# -gt 0 ] && [[ "$1" != *=* ]] && [[ "$1" != -* ]]; then args+=("out=$1"); shift; fi
if [ -n "${OVERWRITE:-}" ]; then args+=("overwrite=true"); fi
exec "$python" -m ticktock.calibrate --gpu ${args[@]+"${args[@]}"} "$@"
