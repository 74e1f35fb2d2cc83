#!/usr/bin/env bash
# A measured cost profile of the MiniCPM-o 4.5 family's shapes on this GPU, in one command of at most ~10 minutes:
# a Qwen3-8B-shaped LLM (36 layers, hidden 4096, 32/8 heads, vocab 151748) plus the Whisper-medium streaming audio
# encode, bf16, sdpa, random weights (the cost does not depend on the weights, so nothing is downloaded).
# Gander, Realtime-Venus and LWS share these shapes. Commit the written profile with the line it prints.
#
#   bash scripts/calibrate_gpu.sh                                   # -> configs/profiles/<gpu>-minicpmo45-measured.yaml
#   OVERWRITE=1 bash scripts/calibrate_gpu.sh                       # replaces that file when it exists already
#   python -m ticktock.run model=gander model.path=... clock=modeled clock.profile=configs/profiles/<that file>
set -euo pipefail
cd "$(dirname "$0")/.."
gpu=$(python -c "import torch; print(torch.cuda.get_device_name(0).split()[-1].lower())")
out=${1:-configs/profiles/${gpu}-minicpmo45-measured.yaml}
python -m ticktock.calibrate model=minicpmo45 model.random_init=true model.device=cuda model.dtype=bfloat16 \
    model.attn_implementation=sdpa 'query_tokens=[1,2,4,8,16,32,64,96,128]' 'context_tokens=[0,512,1024,2048,4096]' \
    warmup=3 repeats=9 'batch_sizes=[1,2,4,8]' out="$out" ${OVERWRITE:+overwrite=true}
