#!/usr/bin/env bash
# The figures to take on a GPU, in one run: training and inference throughput of every architecture,
# method speed at 50/100/200 words, every method over YELP-HAT's raw reviews with a BiLSTM (attention)
# and a Kim CNN trained there, and the pointing game (Poerner et al. 2018 §4) on recurrent models trained
# on SST-2, hybrid documents from SST-2's held-out sentences; last, the soft oracle on the movie reviews.
#
#   bash bench/gpu.sh [LOG]          # LOG defaults to bench/output/gpu.log
#   QUICK=1 bash bench/gpu.sh        # a smoke run on the CPU: tiny models, a few texts
#   ONLY="convert yelphat-methods-cnn" bash bench/gpu.sh   # only the named steps
#   MODELS=DIR bash bench/gpu.sh     # YELP-HAT models already trained: DIR/yelp-ARCH (train's --out)
#   LIMIT_PERCENT=180 bash bench/gpu.sh   # every step's limit scaled (steps sharing one GPU run slower)
#
# On an H100 the whole run takes about 20 minutes; the steps' limits are the longest each may take.
#
# Each step has its own time limit (a step that runs out is reported and the next one starts), most wanted
# first, and every step's output goes to LOG as it comes, so a run cut short keeps what it measured. Needs
# ../shared/data (YELP-HAT raw, SST-2). PY names the Python (default: .venv/bin/python, else python3).
set -u
cd "$(dirname "$0")/.."
LOG=${1:-bench/output/gpu.log}
mkdir -p "$(dirname "$LOG")"
: >"$LOG"
PY=${PY:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
DATA=../shared/data
WORK=$(mktemp -d)
QUICK=${QUICK:-0}
export PYTHONUNBUFFERED=1

if [ "$QUICK" = 1 ]; then
    DEVICE=cpu PER_PART=1 EPOCHS="--epochs 1" SIZE="--embedding-dim 16" RNN_SIZE="--hidden-size 8" LIMIT=4
    BENCH="--cpu-only --batches 1" ARCHS="--archs lstm cnn" BERT=small EXPLAIN="--no-cuda --repeat 1 --lengths 50 --docs 1" EXPLAIN_ARCHS=cnn
    mkdir -p "$WORK/sst2"
    head -1500 "$DATA/sst2-glue/train.tsv" >"$WORK/sst2/train.tsv"
    head -300 "$DATA/sst2-glue/dev.tsv" >"$WORK/sst2/dev.tsv"
    SST2=$WORK/sst2
    for label in pos neg; do
        grep "\"label\": \"$label\", \"has_rationales\": true" \
            "$DATA/movie-review-rationales-zaidan2007/movie_rationales.jsonl" | head -60 >>"$WORK/movies.jsonl"
    done
    MOVIES=$WORK/movies.jsonl TWIN="--max-words 60 --epochs 1 --n-boot 100"
else
    DEVICE=cuda PER_PART=15 EPOCHS="" SIZE="" RNN_SIZE="" LIMIT=${LIMIT:-}
    BENCH="--cuda-only" EXPLAIN="--no-cpu --repeat 2" BERT=base EXPLAIN_ARCHS="cnn bilstm_attention"
    ARCHS="--archs $($PY -c 'from explain_engine.models import ARCHITECTURES as A; print(*sorted(set(A) - {"transformer"}))')"
    SST2=$DATA/sst2-glue
    MOVIES=$DATA/movie-review-rationales-zaidan2007/movie_rationales.jsonl TWIN="--max-words 600 --epochs 20"
fi

step() { # step NAME SECONDS COMMAND...
    local name=$1 limit=$(($2 * ${LIMIT_PERCENT:-100} / 100)) started=$SECONDS
    shift 2
    if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then
        return 0
    fi
    echo "== $name" | tee -a "$LOG"
    timeout "$limit" "$@" >>"$LOG" 2>&1
    echo "== $name: exit $?, $((SECONDS - started)) s" | tee -a "$LOG"
}

{
    date -u
    nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"
    $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
} >>"$LOG" 2>&1

step convert 20 $PY -m explain_engine yelphat convert "$DATA"/yelp-hat/raw/*.csv --out "$WORK/yelp.jsonl" --quiet
for arch in bilstm_attention cnn; do
    if [ -n "${MODELS:-}" ] && [ -f "$MODELS/yelp-$arch/metrics.json" ]; then
        ln -sfn "$(realpath "$MODELS/yelp-$arch")" "$WORK/yelp-$arch"
        echo "== train-yelphat-$arch: trained before, $MODELS/yelp-$arch" | tee -a "$LOG"
        $PY -c "import json, sys; m = json.load(open(sys.argv[1])); print(m['device'], 'test', m['test'])" \
            "$MODELS/yelp-$arch/metrics.json" >>"$LOG" 2>&1
        continue
    fi
    extra=$SIZE
    [ "$arch" = cnn ] || extra="$SIZE $RNN_SIZE"
    step "train-yelphat-$arch" 150 $PY -m explain_engine train --data "$WORK/yelp.jsonl" --model "$arch" \
        --out "$WORK/yelp-$arch" --device "$DEVICE" --quiet $EPOCHS $extra
done
for arch in bilstm_attention cnn; do
    step "yelphat-methods-$arch" 150 $PY bench/yelphat_methods.py --model "$WORK/yelp-$arch" --per-part "$PER_PART" \
        --train "$WORK/yelp.jsonl" --device "$DEVICE"
done
step train-infer 40 $PY bench/train_infer.py $BENCH $ARCHS
for arch in $EXPLAIN_ARCHS; do
    step "explain-bench-$arch" 120 $PY bench/explain.py $EXPLAIN --archs $arch
done
step train-infer-transformer 45 $PY bench/train_infer.py $BENCH --archs transformer --transformer-size $BERT
step explain-bench-transformer 60 $PY bench/explain.py $EXPLAIN --archs transformer --transformer-size $BERT \
    --lengths 50 200 --repeat 1
for arch in lstm bilstm_attention gru; do
    step "train-sst2-$arch" 90 $PY -m explain_engine train --data "$SST2" --model "$arch" --out "$WORK/sst2-$arch" \
        --device "$DEVICE" --quiet --epochs 3 $SIZE $RNN_SIZE
    [ -f "$WORK/sst2-$arch/metrics.json" ] && $PY -c "import json, sys; print('validation', \
        json.load(open(sys.argv[1]))['validation'])" "$WORK/sst2-$arch/metrics.json" >>"$LOG" 2>&1
    methods=lrp,deeplift,grad_dot_1s,grad_dot_int_s,limsse_ms_s,occ_1
    [ "$arch" = bilstm_attention ] && methods=$methods,attention
    [ "$arch" = bilstm_attention ] || methods=$methods,cell_decomposition
    step "pointing-sst2-$arch" 150 $PY -m explain_engine pointing-game --model "$WORK/sst2-$arch" --data "$SST2" \
        --subset validation --methods "$methods" --device "$DEVICE" --progress ${LIMIT:+--limit $LIMIT}
done
# The soft oracle (Prasad et al. 2021 §3.3) on whole movie reviews, with a target trained to convergence.
step informed-twin 240 $PY -m explain_engine informed-twin --data "$MOVIES" --model cnn --out "$WORK/twin" \
    --device "$DEVICE" $TWIN
rm -rf "$WORK"
