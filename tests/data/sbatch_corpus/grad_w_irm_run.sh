#!/bin/bash
# source: github mmmmayi/Grad-W IRM/run.sh
# adapted: -A and -p gpu added; -w names a node of this cluster; 16 CPUs scaled to 4
#SBATCH -o temp.out
#SBATCH --gres=gpu:2
#SBATCH -w g1
#SBATCH --cpus-per-task=4
#####SBATCH -p new
#SBATCH -A @ACCOUNT@
#SBATCH -p gpu
torchrun --standalone --nnodes=1 --nproc_per_node=2 train.py
