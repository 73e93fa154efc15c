#!/bin/bash
# source: https://deepwiki.com/kuleshov-group/bd3lms/4.4-slurm-job-management (scripts/train/train_owt_bd3lm.sh directives)
# adapted: -A and -p gpu added; 8 tasks and 32G scaled to 4 tasks and 2G; the watch_folder is this test's
#SBATCH -J train_owt_bd3lm
#SBATCH -o watch_folder/%x_%j.out
#SBATCH -e watch_folder/%x_%j.err
#SBATCH --open-mode=append
#SBATCH --ntasks-per-node=4
#SBATCH --mem=2G
#SBATCH --gres=gpu:4
#SBATCH -A @ACCOUNT@
#SBATCH -p gpu
srun python main.py
