#!/bin/bash
# source: issue 28 item 8: --cpus-per-gpu with --mem-per-cpu (sbatch: 1 CPU, 256M per CPU)
# adapted: -A and -p gpu added
#SBATCH -A @ACCOUNT@
#SBATCH -p gpu
#SBATCH --gpus=1
#SBATCH --cpus-per-gpu=1
#SBATCH --mem-per-cpu=256M
#SBATCH -t 5
nvidia-smi
