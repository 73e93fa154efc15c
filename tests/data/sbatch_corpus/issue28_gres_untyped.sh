#!/bin/bash
# source: issue 28 item 8: --gres=gpu:N without a type on a partition whose GPUs are typed
# adapted: -A and -p gpu added; sizes for 4-CPU, 4 GB nodes
#SBATCH -A @ACCOUNT@
#SBATCH -p gpu
#SBATCH --nodes=2
#SBATCH --gres=gpu:2
#SBATCH --mem=1G
#SBATCH -t 5
srun hostname
