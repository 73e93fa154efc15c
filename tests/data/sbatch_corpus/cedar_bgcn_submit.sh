#!/bin/bash
# source: github rkenny/4960A BGCN/submit.cedar.sh (Compute Canada Cedar)
# adapted: -A and -p gpu added; 32G per CPU scaled to 900M
#SBATCH -A @ACCOUNT@
#SBATCH -p gpu
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=1
#SBATCH --gpus-per-node=1
#SBATCH --mem-per-cpu=900M
python3 main.py
