#!/bin/bash
# source: github Shujun-He/RibonanzaNet2 job.sh
# adapted: partition defq -> gpu, -A added; 8 GPUs scaled to 4
#SBATCH --nodes 1
#SBATCH --gpus-per-node=4
#SBATCH --exclusive
#SBATCH --job-name=shujun-job
#SBATCH --partition gpu
#SBATCH -A @ACCOUNT@

accelerate launch --config_file FSDP.yaml run.py --config_path configs/benchmark.yaml
